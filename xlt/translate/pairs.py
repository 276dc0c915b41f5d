"""Utterances paired with their translations, for the paired methods (XeroAlign, FILTER).

Training pairs: each source utterance with its machine translation into a target language; the translation carries
projected slot labels (``labelled=True``, FILTER) or none (XeroAlign needs no target labels).  Evaluation pairs:
a target utterance with its translation into the source language (the translate-test direction), or a source dev
utterance with its translation into the target language.  Rows whose translation loses a slot span keep the pair
but its tags are ``UNKNOWN_TAG`` (no slot loss on that side), rather than teaching the lost span as ``O``.
"""
from __future__ import annotations

import dataclasses

from xlt.align.eflomal_align import align
from xlt.align.project import ProjectionStats, project_tags
from xlt.config import ConfigError, RunConfig
from xlt.data.records import UNKNOWN_TAG, DataError, Utterance
from xlt.translate import tokenize_words
from xlt.translate.resources import backend_name, extra_parallel
from xlt.translate.train_data import translate_rows


def _translation_words(cfg: RunConfig, rows: list[Utterance], src: str, tgt: str) -> tuple[list[list[str]], dict]:
    other = tgt if src == cfg.data.source_lang else src
    if backend_name(cfg, other) == "oracle":
        if tgt != cfg.data.source_lang:
            raise DataError(f"the oracle translator only translates into {cfg.data.source_lang} (xSID # text-en)")
        missing = [u.origin for u in rows if not u.text_en]
        if missing:
            raise DataError(f"oracle translation needs human English lines (# text-en); missing at {missing[0]}")
        return [tokenize_words(u.text_en or "") for u in rows], {"backend": "oracle (human # text-en)",
                                                                   "pair": f"{src}-{tgt}", "texts": len(rows)}
    return translate_rows(cfg, rows, src, tgt)


def attach_translations(cfg: RunConfig, rows: list[Utterance], src: str, tgt: str, report: dict,
                        labelled: bool = False, drop_empty: bool = False) -> list[Utterance]:
    """Copies of ``rows`` (language ``src``) with ``translation`` set to their translation into ``tgt``.

    ``labelled``: project the slot labels through an eflomal alignment (tags ``UNKNOWN_TAG`` where a span is lost).
    ``drop_empty``: drop rows whose translation is empty (training); otherwise "." stands in (evaluation must keep
    every row).  Statistics go to ``report``."""
    words, tstats = _translation_words(cfg, rows, src, tgt)
    links = None
    if labelled:
        links = align([u.words for u in rows], words, extra_parallel(cfg, tgt, src))
    total, out, empty, unlabelled = ProjectionStats(), [], 0, 0
    for i, (u, w) in enumerate(zip(rows, words)):
        if not w:
            empty += 1
            if drop_empty:
                continue
            w = ["."]
        tags = [UNKNOWN_TAG] * len(w)
        if links is not None and w != ["."]:
            projected, stats = project_tags(u.slots, links[i], len(w))
            total.add(stats)
            if stats.utterances["dropped"]:
                unlabelled += 1
            else:
                tags = projected
        pair = Utterance(w, tags, u.intent, tgt, f"{u.origin}>{tstats['backend']}:{tgt}", None)
        out.append(dataclasses.replace(u, translation=pair))
    report.update({"translation": tstats, "empty_translations": empty, "pairs": len(out)})
    if labelled:
        report["projection"] = {**total.to_dict(), "pairs_without_slot_labels": unlabelled}
    return out


def training_pairs(cfg: RunConfig, source_rows: list[Utterance], languages: list[str], report: dict,
                   labelled: bool) -> list[Utterance]:
    """Source rows paired with their translation into each of ``languages`` (one pair per row and language)."""
    if not languages:
        raise ConfigError("a paired method needs translation.languages (the languages to translate the source "
                        "training set into)")
    out: list[Utterance] = []
    for lang in languages:
        entry = report.setdefault("translation", {}).setdefault(lang, {})
        out += attach_translations(cfg, source_rows, cfg.data.source_lang, lang, entry, labelled, drop_empty=True)
    return out
