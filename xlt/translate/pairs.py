"""Examples paired with their translations, for the paired methods (XeroAlign, FILTER), for any task.

Training pairs: each source example with its machine translation into a target language; the translation carries
transferred labels (``labelled=True``, FILTER) or none (XeroAlign needs no target labels).  Evaluation pairs: a
target example with its translation into the source language (the translate-test direction), or a source dev
example with its translation into the target language.  A translation whose label transfer loses something keeps
the pair, but its word-level labels become unknown (no loss on that side), rather than teaching a lost span as
``O``.
"""
from __future__ import annotations

import dataclasses

from xlt.align.project import ProjectionStats
from xlt.config import RunConfig
from xlt.errors import ConfigError
from xlt.translate.train_data import align_examples, is_empty, translate_examples


def _placeholder(task, example, lang: str):
    """Evaluation must keep every row: an empty translation is replaced by "." in each field."""
    return task.translated(example, ["."] * len(task.texts(example)), lang, example.origin + ">empty", str.split)


def attach_translations(cfg: RunConfig, task, rows: list, src: str, tgt: str, report: dict,
                        labelled: bool = False, drop_empty: bool = False) -> list:
    """Copies of ``rows`` (language ``src``) with ``translation`` set to their translation into ``tgt``.

    ``labelled``: transfer the labels (word-level labels unknown where the transfer loses some).  ``drop_empty``:
    drop rows whose translation is empty (training); otherwise "." stands in.  Statistics go to ``report``."""
    translated, tstats = translate_examples(cfg, task, rows, src, tgt)
    alignment: dict = {}
    links = align_examples(cfg, task, rows, translated, tgt if src == cfg.data.source_lang else src,
                           record=alignment) if labelled else [set() for _ in rows]
    total, out, empty, unlabelled = ProjectionStats(), [], 0, 0
    for row, pair, link in zip(rows, translated, links):
        if is_empty(task, pair):
            empty += 1
            if drop_empty:
                continue
            pair = _placeholder(task, row, tgt)
        elif labelled:
            moved, lost, stats = task.transfer_labels(row, pair, link)
            total.add(stats)
            unlabelled += lost
            pair = task.without_word_labels(moved) if lost else moved
        out.append(dataclasses.replace(row, translation=pair))
    report.update({"translation": tstats, "empty_translations": empty, "pairs": len(out)})
    if labelled:
        report["projection"] = {**total.to_dict(), "pairs_without_word_labels": unlabelled}
        report["alignment"] = alignment
    return out


def training_pairs(cfg: RunConfig, task, source_rows: list, languages: list[str], report: dict,
                   labelled: bool) -> list:
    """Source rows paired with their translation into each of ``languages`` (one pair per row and language)."""
    if not languages:
        raise ConfigError("a paired method needs translation.languages (the languages to translate the source "
                          "training set into)")
    out: list = []
    for lang in languages:
        entry = report.setdefault("translation", {}).setdefault(lang, {})
        out += attach_translations(cfg, task, source_rows, cfg.data.source_lang, lang, entry, labelled,
                                   drop_empty=True)
    return out
