"""Translate-test: train on the source language only (as zero-shot); at test time translate each target utterance
into the source language, predict there, and project predicted slot spans back onto the original target words
(xlt.translate.test_time).  ``translation.translator: oracle`` uses xSID's human English lines (an upper bound).
Any trained run can also be scored this way: ``xlt eval RUN --as translate_test translation.translator=...``."""
from __future__ import annotations

from pathlib import Path

from xlt.data.datasets import deduplicate, load_split
from xlt.methods import Method, register
from xlt.model import task_loss
from xlt.translate.test_time import translate_test_predict


def train_examples(cfg, load_train, report: dict) -> list:
    return load_train(cfg.data.source_lang)



def predict_target(cfg, model, tokenizer, labels, pad: int, lang: str, rows: list):
    train_rows = None
    if cfg.translation.align_with_train:  # unlabeled parallel text for the aligner: source train + its MT
        split = load_split(Path(cfg.data.data_dir), cfg.data.dataset, cfg.data.source_lang, "train")
        train_rows, _ = deduplicate(split.examples)
    return translate_test_predict(cfg, model, tokenizer, labels, pad, lang, rows, train_rows)


register(Method("translate_test", "train on source; translate target test data to the source language, project "
                "slots back", train_examples, task_loss, predict_target))
