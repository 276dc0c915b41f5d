"""Benchmark: is a translation run reproducible from its config and seed?  (issue 48)

eflomal samples without a seed, so before the alignment cache two runs of one config and seed projected different
labels (MTOD es translate-train seed 1: slot F1 50.3 in one re-run vs 52.4 committed).  For MTOD es translate-train
and xSID FILTER (sr), seed 1, three runs each:

- ``a``: from an empty alignment cache (its own folder);
- ``b``: from another empty alignment cache (a second eflomal fit: shows what sampling alone changes);
- ``a_cached``: again from ``a``'s cache (the same alignments reused): must equal ``a`` in every metric.

    python benchmarks/reproducibility.py --data-dir ../shared/data [--seeds 1]

Writes benchmarks/results/reproducibility.{json,md}; rows ``{config, seed, run, lang, <metrics>, alignment_cache_key,
alignment_reused}``.  Selection on the English dev set (zero-shot protocol) as in each config.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from jobqueue import RESULTS, RUNS, git_commit, queue_main, train_evaluate

CONFIGS = ("mtod-translate-train-es", "xsid-filter-sr")
RUN_KINDS = ("a", "b", "a_cached")


def cache_dir(config: str, kind: str, seed: int) -> Path:
    return RUNS / f"repro-alignments-{config}-{'a' if kind == 'a_cached' else kind}-seed{seed}"


def run_dir_name(config: str, kind: str, seed: int) -> str:
    return f"repro-{config}-{kind}-seed{seed}"


def run_job(job: str, seed: int, data_dir: str) -> None:
    from xlt.config import find_config, load_config

    config, kind = job.rsplit(":", 1)
    cache = cache_dir(config, kind, seed)
    name = run_dir_name(config, kind, seed)
    if kind == "a_cached" and not cache.exists():
        raise SystemExit(f"{cache}: run {config}:a first (a_cached reuses its alignments)")
    if kind != "a_cached" and not (RUNS / name).exists():
        shutil.rmtree(cache, ignore_errors=True)  # an empty cache: a fresh eflomal fit
    cfg = load_config(find_config(config), [f"data.data_dir={data_dir}", f"train.seed={seed}",
                                            f"output_dir={RUNS}", f"name={name}",
                                            f"translation.alignment_cache={cache}"])
    train_evaluate(cfg)


def queue(seeds: list[int]) -> list[tuple[str, int]]:
    return [(f"{config}:{kind}", seed) for seed in seeds for config in CONFIGS for kind in RUN_KINDS]


def collect(runs: Path, results: Path) -> None:
    rows = []
    for config in CONFIGS:
        for kind in RUN_KINDS:
            for path in sorted(runs.glob(f"{run_dir_name(config, kind, '*')}/results.json")):
                r = json.loads(path.read_text())
                keys = r.get("alignment_cache_keys", {})
                report = json.loads((path.parent / "data_report.json").read_text())
                reused = [v for v in _find(report, "reused")]
                for lang, metrics in r["per_language"].items():
                    rows.append({"config": config, "dataset": r["dataset"], "method": r["method"], "seed": r["seed"],
                                 "run": kind, "lang": lang, **{k: v for k, v in metrics.items() if k != "n"},
                                 "n_test": metrics.get("n"), "alignment_cache_key": sorted(set(keys.values())),
                                 "alignment_reused": all(reused) if reused else None,
                                 "selection": r.get("selection"), "best_step": r.get("best_step")})
    summary = {}
    for config in CONFIGS:
        for seed in sorted({r["seed"] for r in rows if r["config"] == config}):
            by = {k: [r for r in rows if r["config"] == config and r["seed"] == seed and r["run"] == k]
                  for k in RUN_KINDS}
            metric_names = [m for m in ("intent_acc", "slot_f1", "semantic_acc") if by["a"] and m in by["a"][0]]
            if by["a"] and by["a_cached"]:
                summary[f"{config} seed {seed}: a_cached identical to a"] = all(
                    x[m] == y[m] for x, y in zip(by["a"], by["a_cached"]) for m in metric_names)
            if by["a"] and by["b"]:
                summary[f"{config} seed {seed}: largest |a - b| (points)"] = round(100 * max(
                    abs(x[m] - y[m]) for x, y in zip(by["a"], by["b"]) for m in metric_names), 2)
    out = {"benchmark": "reproducibility", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "model": "multilingual-e5-small", "selection": "source-dev",
           "notes": "a and b: each from an empty alignment cache (two eflomal fits); a_cached: a's cache reused. "
                    "Selection on the English dev set (zero-shot protocol). Translation: Apertium (deterministic; "
                    "its translations come from the shared translation cache).",
           "summary": summary, "rows": rows}
    (results / "reproducibility.json").write_text(json.dumps(out, indent=1))
    lines = ["# Reproducibility of translation runs (alignment cache)", "", out["notes"], "",
             "| config | seed | run | lang | intent acc | slot F1 | semantic acc | alignment key | reused |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['config']} | {r['seed']} | {r['run']} | {r['lang']} | {100 * r['intent_acc']:.2f} | "
                     f"{100 * r['slot_f1']:.2f} | {100 * r['semantic_acc']:.2f} | "
                     f"{', '.join(k[:12] for k in r['alignment_cache_key'])} | {r['alignment_reused']} |")
    lines += ["", "Summary: " + json.dumps(summary, indent=1)]
    (results / "reproducibility.md").write_text("\n".join(lines) + "\n")


def _find(report, key: str):
    """Every value of ``key`` anywhere in a nested report."""
    if isinstance(report, dict):
        for k, v in report.items():
            if k == key:
                yield v
            else:
                yield from _find(v, key)
    elif isinstance(report, list):
        for v in report:
            yield from _find(v, key)


if __name__ == "__main__":
    queue_main(__doc__, __file__, "reproducibility", run_job, queue, "jobs CONFIG:RUN, e.g. xsid-filter-sr:a",
               seeds_of=lambda job, seeds: seeds)
