"""Benchmark: does each method work where scale is not the limit?  English -> its synthetic image (issue 49).

The target language is English re-written in fresh symbols (``xlt.synthetic``): ``syn-en`` (same word order) and
``syn-en-perm`` (words reversed, K et al. 2020).  A perfect translator exists (``translation.translator=synthetic``,
with the exact word alignment), so every method has a known right answer: translate-test must equal English, and
translate-train / multi-language should close most of the gap between zero-shot and English.

Fine-tuning rows (xSID and PAWS-X; seeds 1-3; checkpoint chosen on the ENGLISH dev set): the shipped
``{dataset}-zero-shot`` config (multilingual-e5-small, batch 32; 1000 steps; the paired methods XeroAlign / FILTER /
FILTER + self-teaching 500 steps x 32 pairs, as in benchmarks/tasks.py), with ``model.freeze_embeddings=false`` in
every row (the synthetic vocabulary is new: frozen, its random rows could never be learnt), ``data.eval_langs=[en,
LANG]``, ``translation.translator=synthetic``, ``translation.languages=[LANG]``.  translate-test scores each
zero-shot model through the exact translator.  ``gap_closed`` = (method - zero-shot) / (English - zero-shot) on the
target, zero-shot and English from the zero-shot run of the same seed.

    python benchmarks/synthetic.py --data-dir ../shared/data [--seeds 1 2 3] [--only JOB ...]
    python benchmarks/synthetic.py --collect

Jobs: ``{xsid,pawsx}-zero_shot`` (evaluates both variants), ``{xsid,pawsx}-{method}-{same_order,permuted}`` for
translate_train, multi_language, xeroalign, filter, filter_self_teaching.  Writes benchmarks/results/synthetic.{json,md}.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from jobqueue import RESULTS, RUNS, committed_results, git_commit, merge_rows, queue_main, train_evaluate

DATASETS = ("xsid", "pawsx")
VARIANTS = {"same_order": "syn-en", "permuted": "syn-en-perm"}
METHODS = ("translate_train", "multi_language", "xeroalign", "filter", "filter_self_teaching")
PAIRED = ("xeroalign", "filter", "filter_self_teaching")
MAIN = {"xsid": ("intent_acc", "slot_f1"), "pawsx": ("accuracy",)}
GAP = {"intent_acc": "gap_closed_intent", "slot_f1": "gap_closed_slot", "accuracy": "gap_closed_accuracy"}
# results/{NAME}.{json,md}: XLT_SYNTHETIC_NAME=synthetic-cuda keeps the rows of a GPU run apart from the CPU ones
NAME = os.environ.get("XLT_SYNTHETIC_NAME", "synthetic")
TEST_OVERRIDES: list[str] = []  # the smoke test's tiny model and steps, applied last
COMMON = ["model.freeze_embeddings=false", "translation.translator=synthetic", "translation.per_language=[]",
          "translation.extra_parallel=[]"]


def jobs() -> list[str]:
    out = []
    for d in DATASETS:
        out.append(f"{d}-zero_shot")
        out += [f"{d}-{m}-{v}" for m in METHODS for v in VARIANTS]
    return out


def spec(job: str, seed: int) -> tuple[str, list[str]]:
    """job -> (shipped config, overrides)."""
    dataset, rest = job.split("-", 1)
    if rest == "zero_shot":
        return f"{dataset}-zero-shot", COMMON + [f"data.eval_langs=[en,{','.join(VARIANTS.values())}]"]
    method, variant = rest.rsplit("-", 1)
    lang = VARIANTS[variant]
    extra = [f"train.method={method}", f"data.eval_langs=[en,{lang}]", f"translation.languages=[{lang}]"]
    if method in PAIRED:
        extra += ["train.max_steps=500", "train.eval_every=125"]
    if method == "filter_self_teaching":
        extra.append(f"options.teacher={RUNS}/synthetic-{dataset}-filter-{variant}-seed{seed}")
    return f"{dataset}-zero-shot", COMMON + extra


def run_job(job: str, seed: int, data_dir: str) -> Path:
    from xlt.config import find_config, load_config
    from xlt.evaluate import evaluate_run

    config, extra = spec(job, seed)
    cfg = load_config(find_config(config), [f"data.data_dir={data_dir}", f"train.seed={seed}",
                                             f"name=synthetic-{job}-seed{seed}", f"output_dir={RUNS}", *extra,
                                             *TEST_OVERRIDES])
    train_evaluate(cfg)
    if job.endswith("zero_shot") and not (cfg.run_dir / "results-translate-test.json").exists():
        evaluate_run(cfg.run_dir, list(VARIANTS.values()), "test", "translate_test",
                     ["translation.translator=synthetic"], "translate-test")
    return cfg.run_dir


def queue(seeds: list[int]) -> list[tuple[str, int]]:
    """xSID first (a run is minutes), seed by seed; PAWS-X after."""
    return [(j, s) for d in DATASETS for s in seeds for j in jobs() if j.startswith(d)]


def _rows_of(path: Path, dataset: str, method: str, variant: str | None, seed: int) -> list[dict]:
    r = json.loads(path.read_text())
    summary = json.loads((path.parent / "train_summary.json").read_text())
    rows = []
    for lang, m in r["per_language"].items():
        v = variant or next((k for k, code in VARIANTS.items() if code == lang), None)
        rows.append({"dataset": dataset, "task": r.get("task", ""), "method": method, "seed": seed,
                     "variant": v if lang != "en" else variant, "lang": lang,
                     **{k: x for k, x in m.items() if k != "n"}, "n_test": m["n"],
                     "steps": summary.get("steps"), "train_seconds": summary.get("train_seconds"),
                     "device": summary.get("device"),
                     "selection": "source-dev"})
    return rows


def collect(runs: Path, results: Path) -> None:
    fresh: list[dict] = []
    for job in jobs():
        dataset, rest = job.split("-", 1)
        method, variant = ("zero_shot", None) if rest == "zero_shot" else rest.rsplit("-", 1)
        for path in sorted(runs.glob(f"synthetic-{job}-seed*/results.json")):
            seed = int(path.parent.name.rsplit("seed", 1)[1])
            fresh += _rows_of(path, dataset, method, variant, seed)
            tt = path.parent / "results-translate-test.json"
            if tt.exists():
                fresh += _rows_of(tt, dataset, "translate_test", None, seed)
    identity = ("dataset", "method", "variant", "lang", "seed")
    rows = merge_rows(committed_results(results, NAME).get("rows", []), fresh, identity)
    add_gap_closed(rows)
    out = {"benchmark": "synthetic", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": machine(rows), "model": "multilingual-e5-small",
           "selection": "source-dev", "notes": __doc__.split("\n\n")[2].replace("\n", " "), "rows": rows}
    (results / f"{NAME}.json").write_text(json.dumps(out, indent=1))
    (results / f"{NAME}.md").write_text(table(rows))


def machine(rows: list[dict]) -> str:
    devices = sorted({str(r.get("device")) for r in rows})
    if all(d.startswith("cpu") for d in devices):
        return "2 CPU cores, no GPU"
    import torch

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "a GPU"
    return f"{name}, devices {', '.join(devices)}"


def add_gap_closed(rows: list[dict]) -> None:
    """gap_closed_<metric> on target rows: (method - zero-shot) / (English - zero-shot), same dataset and seed."""
    zs = {(r["dataset"], r["seed"], r["lang"]): r for r in rows if r["method"] == "zero_shot"}
    for r in rows:
        if r["lang"] == "en":
            continue
        base, english = zs.get((r["dataset"], r["seed"], r["lang"])), zs.get((r["dataset"], r["seed"], "en"))
        for metric in MAIN[r["dataset"]]:
            key = GAP[metric]
            if base is None or english is None or english[metric] == base[metric]:
                r[key] = None
                continue
            r[key] = round((r[metric] - base[metric]) / (english[metric] - base[metric]), 4)


def table(rows: list[dict]) -> str:
    lines = ["# Synthetic-language checks (English -> syn-en / syn-en-perm)", "",
             "Mean over seeds; target-language metrics; gap closed = (method - zero-shot) / (English - zero-shot).",
             "", "| dataset | variant | method | seeds | target | English | gap closed |", "|---|---|---|---|---|---|---|"]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["lang"] != "en":
            groups.setdefault((r["dataset"], r["variant"], r["method"]), []).append(r)
    for (dataset, variant, method), mine in sorted(groups.items()):
        metrics = MAIN[dataset]
        english = [e for e in rows if e["dataset"] == dataset and e["method"] == method and e["lang"] == "en"
                   and e["variant"] in (variant, None) and e["seed"] in {m["seed"] for m in mine}]

        def fmt(rs: list[dict], key: str) -> str:
            values = [x[key] for x in rs if x.get(key) is not None]
            return f"{100 * statistics.mean(values):.1f}" if values else "-"
        gaps = [GAP[m] for m in metrics]
        lines.append(f"| {dataset} | {variant} | {method} | {len(mine)} | "
                     f"{' / '.join(fmt(mine, m) for m in metrics)} | "
                     f"{' / '.join(fmt(english, m) for m in metrics) if english else '(zero-shot run)'} | "
                     f"{' / '.join(fmt(mine, g) + ' %' for g in gaps)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    queue_main(__doc__, __file__, "synthetic", run_job, queue, "jobs: " + ", ".join(jobs()))
