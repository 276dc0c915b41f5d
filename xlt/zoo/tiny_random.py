"""A tiny random BERT (and one model of each other supported encoder family) with a tiny sentencepiece-style
(Metaspace + Unigram) tokenizer, for fast unit tests.

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


def tiny_config(family: str, vocab_size: int):
    """A 2-layer, hidden-32 config of each encoder family xlt supports (``xlt.models.families``)."""
    import transformers as tf

    size = dict(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=64, max_position_embeddings=128, pad_token_id=1)
    if family == "bert":
        return tf.BertConfig(**size)
    if family in ("xlm-roberta", "roberta"):  # positions start after the padding index: 2 more rows
        cls = tf.XLMRobertaConfig if family == "xlm-roberta" else tf.RobertaConfig
        return cls(**{**size, "max_position_embeddings": 130}, bos_token_id=0, eos_token_id=2)
    if family == "distilbert":
        return tf.DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                   max_position_embeddings=128, pad_token_id=1)
    if family == "deberta-v2":  # DeBERTa-v3's settings: relative attention only, log buckets, shared keys
        return tf.DebertaV2Config(**size, relative_attention=True, position_biased_input=False,
                                  pos_att_type=["p2c", "c2p"], position_buckets=16, max_relative_positions=-1,
                                  norm_rel_ebd="layer_norm", share_att_key=True, type_vocab_size=0)
    if family == "electra":  # ELECTRA-small's shape: embeddings narrower than the layers, projected up
        return tf.ElectraConfig(**size, embedding_size=16)
    raise ValueError(f"no tiny {family!r}")


def build(folder: Path, family: str = "bert") -> None:
    import torch
    from transformers import AutoModel

    from xlt.models.families import family_of

    tok = build_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    cfg = tiny_config(family, tok.get_vocab_size())
    with torch.random.fork_rng():  # built on first use, inside a seeded run: leave the run's RNG stream alone
        torch.manual_seed(0)
        model = AutoModel.from_config(cfg, **family_of(cfg).load_kwargs())
        model.save_pretrained(str(folder), safe_serialization=True)
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
               "cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 128, **special}, indent=2))
