"""Translated training data for translate-train and multi-language fine-tuning: translate the source utterances,
align each with its translation (eflomal), project the BIO slot spans (xlt.align.project); or use labels that
ship with the data (xSID ``da.mt.label``).  Every count goes to the run's data report."""
from __future__ import annotations

from pathlib import Path

from xlt.align.eflomal_align import align
from xlt.align.project import ProjectionStats, project_tags
from xlt.config import ConfigError, RunConfig
from xlt.data.bio import orphan_positions
from xlt.data.datasets import load_split
from xlt.data.records import Utterance
from xlt.translate import translate_cached
from xlt.translate.resources import backend_name, extra_parallel, make_translator, open_cache, words_of


def translate_rows(cfg: RunConfig, rows: list[Utterance], src: str, tgt: str,
                   backend: str | None = None) -> tuple[list[list[str]], dict]:
    """Words of the translation of each row (through the cache), and the translation statistics.  The backend is
    the one configured for the non-source language of the pair, unless ``backend`` names one."""
    translator = make_translator(cfg, tgt if src == cfg.data.source_lang else src, backend)
    cache = open_cache(cfg)
    try:
        texts, stats = translate_cached(translator, [" ".join(u.words) for u in rows], src, tgt, cache)
    finally:
        cache.close()
    return [words_of(translator, t) for t in texts], stats


def project_rows(cfg: RunConfig, rows: list[Utterance], tgt_words: list[list[str]], lang: str,
                 tag: str) -> tuple[list[Utterance], dict]:
    """Align ``rows`` with their translations and project slot labels.  Utterances that lose a span are skipped
    (``on_lost_span: skip_utterance``: their lost span would otherwise be taught as ``O``) or kept."""
    policy = cfg.translation.on_lost_span
    if policy not in ("skip_utterance", "keep"):
        raise ConfigError(f"translation.on_lost_span must be skip_utterance or keep, not {policy!r}")
    links = align([u.words for u in rows], tgt_words, extra_parallel(cfg, lang, cfg.data.source_lang))
    total = ProjectionStats()
    out, empty = [], 0
    for u, words, link in zip(rows, tgt_words, links):
        if not words:
            empty += 1
            continue
        tags, stats = project_tags(u.slots, link, len(words))
        total.add(stats)
        if stats.utterances["dropped"] and policy == "skip_utterance":
            continue
        out.append(Utterance(words, tags, u.intent, lang, f"{u.origin}>{tag}", " ".join(u.words)))
    report = {**total.to_dict(), "empty_translations_skipped": empty, "utterances_kept": len(out),
              "bio_violation_lines": sum(bool(orphan_positions(u.slots)) for u in out)}
    return out, report


def shipped_bio_violations(cfg: RunConfig, lang: str) -> dict:
    """BIO violations (orphan I- tags) in the raw shipped label file, before xlt's repair, for comparison."""
    path = Path(cfg.data.data_dir) / "xsid" / "train" / f"{lang}.mt.label"
    if not path.exists():
        return {}
    lines = bad = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            lines += 1
            tags = line.replace("\t", " ").split()[:-1]
            bad += bool(orphan_positions(tags))
    return {"file": str(path), "lines": lines, "bio_violation_lines": bad,
            "bio_violation_rate": round(bad / lines, 4) if lines else None}


def translated_training_set(cfg: RunConfig, lang: str, source_rows: list[Utterance],
                            report: dict) -> list[Utterance]:
    """Training utterances in ``lang`` made from ``source_rows``; statistics under ``report['translation'][lang]``."""
    entry = report.setdefault("translation", {}).setdefault(lang, {})
    if cfg.translation.labels == "shipped" or backend_name(cfg, lang) == "shipped":
        split = load_split(Path(cfg.data.data_dir), "xsid", lang, "train", cfg.data.orphan_policy)
        entry.update({"labels": "shipped", "read": [r.to_dict() for r in split.reports],
                      "shipped_raw": shipped_bio_violations(cfg, lang)})
        return split.examples
    if cfg.translation.labels != "project":
        raise ConfigError(f"translation.labels must be project or shipped, not {cfg.translation.labels!r}")
    words, tstats = translate_rows(cfg, source_rows, cfg.data.source_lang, lang)
    rows, pstats = project_rows(cfg, source_rows, words, lang, f"{tstats['backend']}:{lang}")
    entry.update({"labels": "projected", "translation": tstats, "projection": pstats,
                  "shipped_raw": shipped_bio_violations(cfg, lang)})
    entry["projection"]["bio_violation_rate"] = round(pstats["bio_violation_lines"] / max(1, len(rows)), 4)
    return rows
