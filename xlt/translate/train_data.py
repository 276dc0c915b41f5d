"""Examples across a translation, for any task: translate the text fields of examples (through the cache), align
each with its translation (``translation.aligner``, when the task's labels need word alignment) and transfer the labels
(``Task.transfer_labels``: span projection for slots / NER, one-to-one links for POS, a copy for pair labels).
Translated training sets for translate-train and multi-language fine-tuning are built here, or read where the data
ships one (xSID ``da.mt``).  Every count goes to the run's data report."""
from __future__ import annotations

from pathlib import Path

from xlt.align.eflomal_align import align
from xlt.align.project import ProjectionStats
from xlt.align.similarity import align_by_similarity
from xlt.config import RunConfig
from xlt.data.bio import orphan_positions
from xlt.synthetic.data import read_split
from xlt.errors import ConfigError, DataError
from xlt.translate import tokenize_words, translate_cached
from xlt.translate.resources import (alignment_cache, backend_name, extra_parallel, make_translator, open_cache,
                                    words_of)


def translate_examples(cfg: RunConfig, task, examples: list, src: str, tgt: str,
                       backend: str | None = None) -> tuple[list, dict]:
    """Each example rewritten in ``tgt`` (its labels unknown, sentence-level labels kept), and the translation
    statistics.  The backend is the one configured for the non-source language of the pair, unless ``backend``
    names one; ``oracle`` uses the examples' human reference translations (into the source language only)."""
    other = tgt if src == cfg.data.source_lang else src
    name = backend or backend_name(cfg, other)
    if name == "oracle":
        if tgt != cfg.data.source_lang:
            raise ConfigError(f"the oracle translator only translates into {cfg.data.source_lang} (it reads the "
                              "human reference translations that ship with the test data)")
        missing = [e.origin for e in examples if not e.reference]
        if missing:
            raise DataError(f"{missing[0]}: the oracle translator needs a human reference translation (xSID "
                            f"# text-en, the parallel English row of XNLI/PAWS-X); {len(missing)} example(s) lack one")
        out = [task.translated(e, e.reference, tgt, f"{e.origin}>oracle:{tgt}", tokenize_words) for e in examples]
        return out, {"backend": "oracle (human reference)", "pair": f"{src}-{tgt}", "texts": len(examples)}
    translator = make_translator(cfg, other, name)
    fields = [task.texts(e) for e in examples]
    flat = [t for texts in fields for t in texts]
    cache = open_cache(cfg)
    try:
        translated, stats = translate_cached(translator, flat, src, tgt, cache)
    finally:
        cache.close()
    out, k = [], 0
    for e, texts in zip(examples, fields):
        mine = translated[k:k + len(texts)]
        k += len(texts)
        out.append(task.translated(e, mine, tgt, f"{e.origin}>{stats['backend']}:{tgt}",
                                   lambda text: words_of(translator, text)))
    return out, stats


def is_empty(task, example) -> bool:
    """A translation with an empty text field (or no words, for word-level tasks) cannot be used."""
    return any(not t.strip() for t in task.texts(example)) or (task.needs_alignment and not task.words(example))


def align_examples(cfg: RunConfig, task, sources: list, targets: list, lang: str,
                   extra: list | None = None, record: dict | None = None) -> list[set]:
    """Word links of each (source, target) pair; empty without alignment (tasks whose labels need none).  Through
    the alignment cache (``translation.alignment_cache``): ``record`` gets its key and whether it was reused."""
    if not task.needs_alignment:
        return [set() for _ in sources]
    if backend_name(cfg, lang) == "synthetic":  # the exact translator knows the exact alignment
        translator = make_translator(cfg, lang, "synthetic")
        src, tgt = sources[0].lang if sources else lang, targets[0].lang if targets else lang
        if record is not None:
            record.update({"aligner": "exact (synthetic translator)"})
        return [translator.links(task.words(s), task.words(t), src, tgt) for s, t in zip(sources, targets)]
    src, tgt = [task.words(s) for s in sources], [task.words(t) for t in targets]
    t = cfg.translation
    if t.aligner == "similarity":  # nothing to fit: the extra parallel text is not needed
        return align_by_similarity(src, tgt, t.align_model or cfg.model.name, t.align_layer, alignment_cache(cfg),
                                   record)
    pairs = extra_parallel(cfg, lang, cfg.data.source_lang) + list(extra or [])
    if record is not None:
        record["aligner"] = "eflomal (sampled: not reproducible without the cache)"
    return align(src, tgt, pairs, cache=alignment_cache(cfg), record=record)


def transfer_examples(cfg: RunConfig, task, sources: list, translated: list, lang: str, record: dict | None = None
                      ) -> tuple[list[tuple[object, bool] | None], ProjectionStats]:
    """Labels of ``sources`` moved onto their ``translated`` examples: (labelled example, lost) per pair, None
    where the translation is empty.  ``record``: the alignment's cache key (``align_examples``)."""
    links = align_examples(cfg, task, sources, translated, lang, record=record)
    total, out = ProjectionStats(), []
    for s, t, link in zip(sources, translated, links):
        if is_empty(task, t):
            out.append(None)
            continue
        labelled, lost, stats = task.transfer_labels(s, t, link)
        total.add(stats)
        out.append((labelled, lost))
    return out, total


def bio_violation_lines(task, examples: list) -> int:
    return sum(bool(orphan_positions(tags)) for tags in map(task.bio_tags, examples) if tags is not None)


def project_rows(cfg: RunConfig, task, sources: list, translated: list, lang: str) -> tuple[list, dict]:
    """Labelled translations of ``sources``.  Examples that lose a label are skipped (``on_lost_span:
    skip_utterance``: their lost span would otherwise be taught as ``O``) or kept with what could be placed."""
    policy = cfg.translation.on_lost_span
    if policy not in ("skip_utterance", "keep"):
        raise ConfigError(f"translation.on_lost_span must be skip_utterance or keep, not {policy!r}")
    alignment: dict = {}
    results, total = transfer_examples(cfg, task, sources, translated, lang, alignment)
    out = []
    for source, result in zip(sources, results):
        if result is None or (result[1] and policy == "skip_utterance"):
            continue
        example = result[0]
        example.reference = task.texts(source)  # the source-language text it was translated from
        out.append(example)
    report = {**total.to_dict(), "empty_translations_skipped": results.count(None), "utterances_kept": len(out),
              "bio_violation_lines": bio_violation_lines(task, out), "alignment": alignment}
    return out, report


def shipped_bio_violations(cfg: RunConfig, lang: str) -> dict:
    """BIO violations (orphan I- tags) in the raw shipped xSID label file, before xlt's repair, for comparison."""
    path = Path(cfg.data.data_dir) / "xsid" / "train" / f"{lang}.mt.label"
    if cfg.data.dataset != "xsid" or not path.exists():
        return {}
    lines = bad = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            lines += 1
            tags = line.replace("\t", " ").split()[:-1]
            bad += bool(orphan_positions(tags))
    return {"file": str(path), "lines": lines, "bio_violation_lines": bad,
            "bio_violation_rate": round(bad / lines, 4) if lines else None}


def translated_training_set(cfg: RunConfig, task, lang: str, source_rows: list, report: dict) -> list:
    """Training examples in ``lang`` made from ``source_rows``; statistics under ``report['translation'][lang]``."""
    entry = report.setdefault("translation", {}).setdefault(lang, {})
    if cfg.translation.labels == "shipped" or backend_name(cfg, lang) == "shipped":
        split = read_split(Path(cfg.data.data_dir), cfg.data.dataset, lang, "train", cfg.data.orphan_policy)
        entry.update({"labels": "shipped", "read": [r.to_dict() for r in split.reports],
                      "shipped_raw": shipped_bio_violations(cfg, lang)})
        return split.examples
    if cfg.translation.labels != "project":
        raise ConfigError(f"translation.labels must be project or shipped, not {cfg.translation.labels!r}")
    translated, tstats = translate_examples(cfg, task, source_rows, cfg.data.source_lang, lang)
    rows, pstats = project_rows(cfg, task, source_rows, translated, lang)
    entry.update({"labels": "projected" if task.needs_alignment else "copied", "translation": tstats,
                  "projection": pstats, "shipped_raw": shipped_bio_violations(cfg, lang)})
    entry["projection"]["bio_violation_rate"] = round(pstats["bio_violation_lines"] / max(1, len(rows)), 4)
    return rows
