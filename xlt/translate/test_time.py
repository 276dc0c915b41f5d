"""Translate-test for intent + slots: translate each target utterance into the source language, predict there,
take the intent directly, and project the predicted slot spans back onto the ORIGINAL target words through a word
alignment (eflomal, fit on the test pairs plus unlabeled parallel text: the source training set with its MT, and
Tatoeba).  The ``oracle`` translator uses xSID's human ``# text-en`` lines instead of MT (an upper bound)."""
from __future__ import annotations

from xlt.align.eflomal_align import align
from xlt.align.project import ProjectionStats, project_tags
from xlt.config import RunConfig
from xlt.data.records import DataError, Utterance
from xlt.features import encode_examples
from xlt.predict import predict
from xlt.translate import tokenize_words
from xlt.translate.resources import backend_name, extra_parallel, file_sources
from xlt.translate.train_data import translate_rows


def _aligner_extra(cfg: RunConfig, lang: str, train_rows: list[Utterance] | None) -> list[tuple[list, list]]:
    """(source-language words, target words) pairs used only to fit the aligner."""
    pairs = extra_parallel(cfg, lang, cfg.data.source_lang)
    if cfg.translation.align_with_train and train_rows:
        backend = backend_name(cfg, lang)
        if backend == "oracle":  # no MT system at test time: use the stored training translations, if any
            if (cfg.data.source_lang, lang) not in file_sources(cfg):
                return pairs
            backend = "file"
        words, _ = translate_rows(cfg, train_rows, cfg.data.source_lang, lang, backend)
        pairs += [(u.words, w) for u, w in zip(train_rows, words)]
    return pairs


def translate_test_predict(cfg: RunConfig, model, tokenizer, labels, pad: int, lang: str, rows: list[Utterance],
                           train_rows: list[Utterance] | None = None) -> tuple[list[str], list[list[str]], dict]:
    """Predict intents and target-language BIO tags for ``rows`` (target language ``lang``) via the source language.
    Returns (intents, tags per row, statistics)."""
    src = cfg.data.source_lang
    backend = backend_name(cfg, lang)
    if backend == "oracle":
        missing = [u.origin for u in rows if not u.text_en]
        if missing:
            raise DataError(f"oracle translate-test needs human English lines (# text-en); missing at {missing[0]}")
        en_words = [tokenize_words(u.text_en or "") for u in rows]
        tstats = {"backend": "oracle (human # text-en)", "pair": f"{lang}-{src}", "texts": len(rows)}
    else:
        en_words, tstats = translate_rows(cfg, rows, lang, src)
    placeholders = [Utterance(w or ["."], ["O"] * len(w or ["."]), labels.intents[0], src, u.origin)
                    for u, w in zip(rows, en_words)]
    items, _ = encode_examples(tokenizer, placeholders, labels, None)
    intents, en_tags, _ = predict(model, items, labels, pad, cfg.train.eval_batch_size)
    links = align([p.words for p in placeholders], [u.words for u in rows], _aligner_extra(cfg, lang, train_rows))
    total = ProjectionStats()
    tags_out = []
    for u, tags, link in zip(rows, en_tags, links):
        projected, stats = project_tags(tags, link, len(u.words))
        total.add(stats)
        tags_out.append(projected)
    return intents, tags_out, {"translation": tstats, "back_projection": total.to_dict()}
