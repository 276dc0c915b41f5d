"""Serving translate-test models (torch-free): a target-language input is translated into the source language
(the run's translator), the model predicts there, and word-level labels come back onto the ORIGINAL words through
an eflomal alignment of the translation with the input; sentence labels are copied.  One sentence pair says little
to an aligner, so the alignment uses priors learnt at export from the aligner data evaluation used (the source
training set with its MT, Tatoeba): ``priors-{lang}.txt`` in the export folder (``build_priors``).  Spans are
projected as BIO spans; word tags (POS) one-to-one, other words taking the model's own prediction on the input.
A source-language input is predicted directly.  The answer carries the ``translation`` it went through.  eflomal
samples (it has no seed), so a projected span can differ between two calls on the same input.  The ``synthetic``
translator gives the exact alignment instead (``links``).
"""
from __future__ import annotations

from pathlib import Path

from xlt.serve.words import InputError


def labelled_via_translation(predictor, requests: list, prepared: list, errors: dict[int, str],
                             on_error: str) -> tuple[dict[int, dict], dict[int, dict]]:
    """({input index: labelled prediction on the input's own words}, {input index: extra answer fields})."""
    from xlt.serve.request import Request
    from xlt.translate import EXACT, get_translator, tokenize_words

    t = predictor.translation
    groups: dict[str, list[int]] = {}
    for i, (req, p) in enumerate(zip(requests, prepared)):
        if p is None:
            continue
        lang = req.lang
        if lang != t["source_lang"] and lang not in t["languages"]:
            message = (f"this model predicts via a translation into {t['source_lang']}: lang must be "
                       f"{t['source_lang']} or one of {sorted(t['languages'])}, not {lang!r}")
            if on_error == "raise":
                raise InputError(message)
            errors[i], prepared[i] = message, None
            continue
        groups.setdefault(lang, []).append(i)
    found: dict[int, dict] = {}
    extra: dict[int, dict] = {}
    direct_idx = groups.pop(t["source_lang"], [])
    found.update(zip(direct_idx, predictor.predict_labelled([prepared[i] for i in direct_idx])))
    for lang, idx in groups.items():
        setting = t["languages"][lang]
        translator = get_translator(setting["backend"])
        translated = predictor.translate_texts(translator, requests, prepared, idx, lang, t["source_lang"])
        split = str.split if translator.name in EXACT else tokenize_words
        requests_src = [Request(tr) if predictor.pair else Request(words=split(tr[0]) or ["."]) for tr in translated]
        on_source = predictor.predict_labelled([predictor.prepare(r) for r in requests_src])
        for i, tr in zip(idx, translated):
            extra[i] = {"translation": tr if predictor.pair else tr[0]}
        if predictor.pair:
            found.update(zip(idx, on_source))
            continue
        exact = getattr(translator, "links", None)  # the synthetic translator knows the true alignment
        links = ([exact(r.words, prepared[i].words.words, t["source_lang"], lang) for r, i in zip(requests_src, idx)]
                 if exact is not None else None)
        _project_back(predictor, [prepared[i] for i in idx], requests_src, on_source,
                      Path(predictor.folder) / setting["priors"], found, idx, links)
    return found, extra


def _project_back(predictor, originals: list, translations: list, on_source: list[dict], priors: Path,
                  found: dict[int, dict], idx: list[int], links: list | None = None) -> None:
    from xlt.align.eflomal_align import align
    from xlt.align.project import project_tags, project_word_tags
    from xlt.data.records import UNKNOWN_TAG

    if links is None:
        links = align([r.words for r in translations], [p.words.words for p in originals], priors=priors)
    token_outputs = [how for how in predictor.spec["outputs"].values() if how["level"] == "token"]
    direct = (predictor.predict_labelled(originals) if any(not how["spans"] for how in token_outputs)
              else [None] * len(originals))
    for i, pred, original, link, own in zip(idx, on_source, originals, links, direct):
        moved = dict(pred)
        n = len(original.words.words)
        for how in token_outputs:
            key = how["key"]
            if how["spans"]:
                moved[key] = project_tags(pred[key], link, n)[0]
            else:
                moved[key] = project_word_tags(pred[key], link, n, UNKNOWN_TAG, own[key])[0]
        found[i] = moved


def build_priors(cfg, task, languages: list[str], folder: Path) -> dict:
    """Export: one priors file per target language from the aligner data translate-test evaluation uses; returns
    the ``translation`` metadata of a translate-test model."""
    from xlt.align.eflomal_align import make_priors
    from xlt.data.datasets import deduplicate
    from xlt.translate.resources import backend_name, extra_parallel
    from xlt.translate.train_data import translate_examples

    src, out = cfg.data.source_lang, {}
    for lang in languages:
        pairs = extra_parallel(cfg, lang, src)
        if task.needs_alignment and cfg.translation.align_with_train:
            rows, _ = deduplicate(_train_rows(cfg, src))
            translated, _ = translate_examples(cfg, task, rows, src, lang)
            pairs += [(task.words(a), task.words(b)) for a, b in zip(rows, translated)]
        name = f"priors-{lang}.txt"
        if task.needs_alignment:
            make_priors(pairs, folder / name)
        out[lang] = {"backend": backend_name(cfg, lang), "priors": name, "aligner_pairs": len(pairs)}
    return {"mode": "translate_test", "source_lang": src, "languages": out}


def _train_rows(cfg, src: str) -> list:
    from xlt.core.context import RunContext

    return RunContext.from_config(cfg).load_split(src, "train")
