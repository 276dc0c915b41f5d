"""Translate-test for any task: translate each target example into the source language, predict there, and move
the prediction back onto the ORIGINAL target example (``Task.project_back``: sentence labels directly; slot / NER
spans and POS tags through a word alignment fit on the test pairs plus unlabelled parallel text: the source training
set with its MT, and Tatoeba).  The ``oracle`` translator uses the data's human reference translations (xSID
``# text-en``; the parallel English rows of XNLI / PAWS-X): an upper bound."""
from __future__ import annotations

from xlt.align.project import ProjectionStats
from xlt.config import RunConfig
from xlt.translate.resources import backend_name, file_sources
from xlt.translate.train_data import align_examples, is_empty, translate_examples


def _aligner_extra(cfg: RunConfig, task, lang: str, train_rows: list | None) -> list[tuple[list, list]]:
    """(source-language words, target words) pairs of the source training set and its MT, to fit the aligner."""
    if not (task.needs_alignment and cfg.translation.align_with_train and train_rows):
        return []
    backend = backend_name(cfg, lang)
    if backend == "oracle":  # no MT system at test time: use the stored training translations, if any
        if (cfg.data.source_lang, lang) not in file_sources(cfg):
            return []
        backend = "file"
    translated, _ = translate_examples(cfg, task, train_rows, cfg.data.source_lang, lang, backend)
    return [(task.words(s), task.words(t)) for s, t in zip(train_rows, translated)]


def translate_test_predict(cfg: RunConfig, task, predict_fn, lang: str, rows: list,
                           train_rows: list | None = None) -> tuple[list, dict]:
    """Predictions for ``rows`` (target language ``lang``) made via the source language.  ``predict_fn(examples)``
    returns the model's predictions for a list of examples.  Returns (predictions on ``rows``, statistics)."""
    src = cfg.data.source_lang
    translated, tstats = translate_examples(cfg, task, rows, lang, src)
    inputs = [task.translated(r, ["."] * len(task.texts(r)), src, r.origin, str.split) if is_empty(task, t) else t
              for r, t in zip(rows, translated)]
    on_source = predict_fn(inputs)
    alignment: dict = {}
    links = align_examples(cfg, task, inputs, rows, lang, _aligner_extra(cfg, task, lang, train_rows), alignment)
    direct = predict_fn(rows) if task.back_projection_fallback else [None] * len(rows)
    total, out = ProjectionStats(), []
    for pred, original, tr, link, own in zip(on_source, rows, inputs, links, direct):
        moved, stats = task.project_back(pred, original, tr, link, own)
        total.add(stats)
        out.append(moved)
    stats = {"translation": tstats, "empty_translations": sum(is_empty(task, t) for t in translated)}
    if task.needs_alignment:
        stats["back_projection"] = total.to_dict()
        stats["alignment"] = alignment
    return out, stats
