"""Benchmark: label projection statistics, no training.  Translates the English training set into each language
(MTOD es and xSID sr with Apertium, xSID da with the shipped MT text), aligns with eflomal, projects the slot spans
and counts projected / partial / dropped spans and utterances and BIO violations; compares xlt's Danish projection
with the shipped ``da.mt.label``.  Writes benchmarks/results/projection.json.

    python benchmarks/projection.py --data-dir ../shared/data
"""
from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from xlt.config import find_config, load_config
from xlt.data.datasets import deduplicate, load_split
from xlt.tasks import get_task
from xlt.translate.train_data import translated_training_set

HERE = Path(__file__).parent
CASES = [("mtod-translate-train-es", "es"), ("xsid-translate-train-sr", "sr"), ("xsid-translate-train-da", "da")]


def copied_rate(rows) -> float:
    """Share of translated words (digits aside) that also occur in the English source sentence: a rough gauge of
    how much a rule-based system left untranslated (names and numbers count too, so it is never 0)."""
    total = copied = 0
    for u in rows:
        source = {w.lower() for w in " ".join(u.reference or []).split()}
        words = [w.lower() for w in u.words if w.isalpha()]
        total += len(words)
        copied += sum(w in source for w in words)
    return round(copied / max(1, total), 4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    rows = []
    for config, lang in CASES:
        cfg = load_config(find_config(config), [f"data.data_dir={args.data_dir}"])
        source, _ = deduplicate(load_split(Path(args.data_dir), cfg.data.dataset, "en", "train").examples)
        report: dict = {}
        t0 = time.perf_counter()
        kept = translated_training_set(cfg, get_task("intent_slot"), lang, source, report)
        entry = report["translation"][lang]
        entry["copied_source_word_rate"] = copied_rate(kept)
        rows.append({"config": config, "dataset": cfg.data.dataset, "lang": lang, "source_utterances": len(source),
                     "kept_utterances": len(kept), "seconds": round(time.perf_counter() - t0, 1), **entry})
        print(lang, json.dumps(rows[-1]["projection"]), entry["copied_source_word_rate"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    out = {"benchmark": "projection", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": commit, "machine": "2 CPU cores, no GPU", "model": "none (data only)",
           "selection": "source-dev",
           "notes": "deduplicated English train sets translated and projected (eflomal + grow-diag-final-and, "
                    "fit with Tatoeba); on_lost_span=skip_utterance; shipped_raw = BIO violations (orphan I-) in "
                    "the raw shipped da.mt.label before any repair. eflomal samples: counts vary slightly per run.",
           "rows": rows}
    (HERE / "results" / "projection.json").write_text(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
