"""Benchmark: zero-shot xSID with multilingual-e5-small, 3 seeds, all xSID target languages.

Trains on the full deduplicated English xSID training set (35,915 examples) for the step budget of the shipped
config ``xsid-zero-shot`` (checkpoint chosen on the English dev set), evaluates the selected checkpoint on every
language's test split, and writes ``benchmarks/results/xsid-zero-shot.json`` (../shared/RESULTS_FORMAT.md) and
``benchmarks/results/xsid-zero-shot.md`` (mean ± std over seeds per language).

    python benchmarks/xsid_zero_shot.py --data-dir ../shared/data [--name NAME] [--seeds 1 2 3 --] [key=value ...]

(``--`` ends the seed list before overrides, which ``--seeds`` would otherwise read as seeds.)

``--name`` names the results files and run folders (default ``xsid-zero-shot``), e.g. ``xsid-zero-shot-cuda`` for
the same benchmark on a GPU, with ``train.mixed_precision=bf16`` for mixed precision.

A seed whose run folder already holds results.json is not retrained (delete benchmarks/runs/ to start over);
an interrupted seed resumes from its last checkpoint.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

from xlt.config import find_config, load_config, to_dict
from xlt.core.loop import cpu_model
from xlt.evaluation import evaluate_run
from xlt.tasks.intent_slot import IntentSlot
from xlt.finetune import clean_checkpoint, train

METRICS = IntentSlot.metrics
HERE = Path(__file__).parent


def run_seed(seed: int, data_dir: str, overrides: list[str], name: str = "xsid-zero-shot") -> dict:
    cfg = load_config(find_config("xsid-zero-shot"), [f"data.data_dir={data_dir}", f"train.seed={seed}",
                                                       f"name={name}-seed{seed}",
                                                       f"output_dir={HERE / 'runs'}", *overrides])
    run_dir = cfg.run_dir
    if not (run_dir / "results.json").exists():
        resume = (run_dir / "last").exists()
        train(cfg, resume=resume)
        evaluate_run(run_dir)
        clean_checkpoint(run_dir)
    return {"cfg": cfg, "results": json.loads((run_dir / "results.json").read_text())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--name", default="xsid-zero-shot")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    t0 = time.time()
    runs = [run_seed(s, args.data_dir, args.overrides, args.name) for s in args.seeds]
    rows = []
    for run in runs:
        res, cfg = run["results"], run["cfg"]
        ts = res["train_summary"]
        for lang, m in res["per_language"].items():
            rows.append({"method": res["method"], "dataset": res["dataset"], "lang": lang, "seed": res["seed"],
                         "regime": "equal_steps", **{k: round(m[k], 4) for k in METRICS}, "n_test": m["n"],
                         "train_sentences": res["train_examples"], "steps": ts["step"],
                         "best_step": res["best_step"], "sentences_processed": ts["step"] * cfg.train.batch_size,
                         "train_seconds": round(ts["train_seconds"], 1),
                         "tokens_per_second": round(ts["tokens_per_second"], 1),
                         "peak_rss_mb": round(ts["peak_rss_mb"])})
    cfg = runs[0]["cfg"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    out = {
        "benchmark": args.name, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": commit or "unknown", "machine": machine(ts),
        "model": cfg.model.name, "selection": "source-dev",
        "notes": (f"zero-shot from English; train = full deduplicated xSID en train set ({res['train_examples']} "
                  f"examples); budget {cfg.train.max_steps} steps x batch {cfg.train.batch_size} (lr "
                  f"{cfg.train.lr}, frozen embeddings={cfg.model.freeze_embeddings}); checkpoint chosen on en dev "
                  f"every {cfg.train.eval_every} steps; metrics on each language's test split; seeds "
                  f"{args.seeds}; mixed precision {ts.get('mixed_precision', 'fp32')}; wall time of this script "
                  f"{round((time.time() - t0) / 60, 1)} min"),
        "config": to_dict(cfg), "rows": rows,
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / f"{args.name}.json").write_text(json.dumps(out, indent=1))
    table = summary_table(rows, cfg.data.source_lang)
    (HERE / "results" / f"{args.name}.md").write_text(f"# {args.name}\n\n{out['notes']}\n\n{table}")
    print(table)


def machine(train_summary: dict) -> str:
    # the run's own record of its CPU (runs from before it was recorded: this machine's kind)
    cpu = train_summary.get("cpu") or cpu_model()
    where = f"{cpu}, {train_summary.get('threads')} CPU threads"
    device = str(train_summary.get("device"))
    if device.startswith("cuda"):
        import torch

        where += f", GPU {torch.cuda.get_device_name(torch.device(device))}"
    return f"{where}, device {device}"


def summary_table(rows: list[dict], source: str) -> str:
    langs = list(dict.fromkeys(r["lang"] for r in rows))

    def fmt(values: list[float]) -> str:
        mean = 100 * statistics.mean(values)
        std = 100 * statistics.stdev(values) if len(values) > 1 else 0.0
        return f"{mean:.1f} ± {std:.1f}"

    lines = ["| lang | " + " | ".join(METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
    for lang in langs:
        sel = [r for r in rows if r["lang"] == lang]
        lines.append(f"| {lang} | " + " | ".join(fmt([r[m] for r in sel]) for m in METRICS) + " |")
    # target average: averaged over target languages within each seed, then mean ± std over seeds
    seeds = sorted({r["seed"] for r in rows})
    avg = {m: [statistics.mean(r[m] for r in rows if r["seed"] == s and r["lang"] != source) for s in seeds]
           for m in METRICS}
    lines.append("| **target avg** | " + " | ".join(fmt(avg[m]) for m in METRICS) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
