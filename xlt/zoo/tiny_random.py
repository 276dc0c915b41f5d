"""A tiny random BERT with a tiny sentencepiece-style (Metaspace + Unigram) tokenizer, for fast unit tests.

The tokenizer mimics XLM-R's behaviour that matters for word alignment: every pre-split word starts with "▁", and
a word whose "▁"-prefixed form is not in the vocabulary (all CJK here) is split into a lone "▁" piece plus the rest.
"""
from __future__ import annotations

import json
import string
from pathlib import Path

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
WORDS = ["set", "alarm", "for", "the", "weather", "in", "tomorrow", "remind", "me", "to", "play", "music",
         "show", "all", "reminders", "at", "am", "pm", "wecker", "für", "morgen"]
CJK = "明天早上七点的闹钟提醒我天気東京今日はアラーム"
KAZAKH = "абвгдеёжзийклмнопрстуфхцчшщъыьэюяәіңғүұқөһ"


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    chars = sorted(set(string.ascii_lowercase + string.ascii_uppercase + string.digits + string.punctuation
                       + "äöüßéèçñ" + KAZAKH))
    vocab = [(t, 0.0) for t in SPECIALS] + [("▁", -2.0)]
    vocab += [("▁" + w, -1.0) for w in WORDS]
    vocab += [("▁" + c, -3.0) for c in chars]
    vocab += [(c, -3.5) for c in chars + sorted(set(CJK))]
    tok = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return tok


def build(folder: Path) -> None:
    import torch
    from transformers import BertConfig, BertModel

    tok = build_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    cfg = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128, pad_token_id=1)
    with torch.random.fork_rng():  # built on first use, inside a seeded run: leave the run's RNG stream alone
        torch.manual_seed(0)
        BertModel(cfg, add_pooling_layer=False).save_pretrained(str(folder), safe_serialization=True)
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
               "cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 128, **special}, indent=2))
