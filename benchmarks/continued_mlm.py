"""Benchmark: continued MLM pre-training of multilingual-e5-small on Japanese (+ English) text, and its effect on
zero-shot xSID (English -> 18 languages, Japanese the adapted one).

1. ``xlt pretrain pretrain-mlm-ja`` (shipped config: phase ``head`` trains the new MLM head on the frozen encoder,
   phase ``all`` trains everything); held-out MLM loss / accuracy and pseudo-perplexity of each language's held-out
   lines after each phase.  The end of phase ``head`` is the reference: the encoder as shipped (e5-small has no
   MLM head of its own, so it cannot be scored without one).
2. ``xsid-zero-shot`` fine-tuning (the same config, budget and seeds as the xsid-zero-shot study) on the
   adapted encoder (``model.name=RUN/model``), checkpoint chosen on the English dev set; compared per language with
   the rows of ``benchmarks/results/xsid-zero-shot.json`` (the shipped encoder, same config and seeds).

    python benchmarks/continued_mlm.py --data-dir ../shared/data [--seeds 1 2 3]

Writes ``benchmarks/results/continued-mlm-ja.{json,md}``.  Finished runs are reused, interrupted ones resume.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import time
from pathlib import Path

from xlt.config import find_config, load_config, load_stage_config
from xlt.evaluation import evaluate_run
from xlt.stages import run_stage
from xlt.tasks.intent_slot import IntentSlot
from xlt.finetune import clean_checkpoint, train

HERE = Path(__file__).parent
RUNS = HERE / "runs"
METRICS = IntentSlot.metrics


def pretrain(data_dir: str) -> tuple[Path, dict, int]:
    cfg = load_stage_config(find_config("pretrain-mlm-ja"), [f"corpus.data_dir={data_dir}", f"output_dir={RUNS}"])
    if not (cfg.run_dir / "model" / "model.safetensors").exists():
        run_stage(cfg, resume=(cfg.run_dir / "config.yaml").exists())
    return cfg.run_dir / "model", json.loads((cfg.run_dir / "results.json").read_text()), cfg.seed


def fine_tune(encoder: Path, seed: int, data_dir: str) -> dict:
    cfg = load_config(find_config("xsid-zero-shot"), [f"data.data_dir={data_dir}", f"train.seed={seed}",
                                                       f"model.name={encoder}", f"output_dir={RUNS}",
                                                       f"name=xsid-zero-shot-mlm-ja-seed{seed}"])
    if not (cfg.run_dir / "results.json").exists():
        train(cfg, resume=(cfg.run_dir / "last").exists())
        evaluate_run(cfg.run_dir)
        clean_checkpoint(cfg.run_dir)
    return json.loads((cfg.run_dir / "results.json").read_text())


def mean_std(values: list[float]) -> str:
    if not values:
        return "–"
    return f"{100 * statistics.mean(values):.1f} ± {100 * statistics.stdev(values):.1f}" if len(values) > 1 \
        else f"{100 * values[0]:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = ap.parse_args()
    t0 = time.time()
    encoder, stage, stage_seed = pretrain(args.data_dir)
    rows = []
    for phase in stage["phases"]:
        ev = phase["final_eval"]
        rows.append({"method": "continued_mlm", "dataset": "mono", "lang": "ja+en", "seed": stage_seed,
                     "variant": f"after_{phase['name']}", "heldout_mlm_loss": round(ev["heldout_mlm_loss"], 4),
                     "heldout_mlm_accuracy": round(ev["heldout_mlm_accuracy"], 4),
                     "heldout_pppl": round(ev["heldout_pppl"], 2), "heldout_masked": ev["heldout_masked"],
                     "heldout_pppl_tokens": ev["heldout_pppl_tokens"], "steps": phase["summary"]["step"],
                     "train_seconds": round(phase["summary"]["train_seconds"], 1),
                     "peak_rss_mb": phase["summary"]["peak_rss_mb"]})
    baseline = json.loads((HERE / "results" / "xsid-zero-shot.json").read_text())["rows"]
    for row in baseline:
        if row["seed"] in args.seeds:
            rows.append({**row, "task": "intent_slot", "variant": "none",
                         "source": "benchmarks/results/xsid-zero-shot.json"})
    for seed in args.seeds:
        res = fine_tune(encoder, seed, args.data_dir)
        ts = res["train_summary"]
        for lang, m in res["per_language"].items():
            rows.append({"method": "zero_shot", "task": "intent_slot", "dataset": "xsid", "lang": lang, "seed": seed,
                         "regime": "equal_steps", "variant": "continued_mlm_ja",
                         **{k: round(m[k], 4) for k in METRICS}, "n_test": m["n"], "steps": ts["step"],
                         "best_step": res["best_step"], "train_seconds": round(ts["train_seconds"], 1),
                         "peak_rss_mb": ts["peak_rss_mb"]})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"benchmark": "continued-mlm-ja", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": commit, "machine": f"{platform.machine()}, 2 CPU threads, device cpu",
           "model": "multilingual-e5-small", "selection": "source-dev",
           "notes": ("stage pretrain-mlm-ja: corpus "
                     + json.dumps({k: v for k, v in stage["corpus"].items() if k != "files"}) + "; phases "
                     + "; ".join(f"{p['name']}: {p['summary']['step']} steps" for p in stage["phases"])
                     + f"; MLM softmax over the {stage.get('vocab_kept', '?')} ids of the corpora. Fine-tuning: "
                     f"xsid-zero-shot config (1000 steps x 32, lr 3e-4, frozen embeddings, English-dev selection), "
                     f"seeds {args.seeds}; variant none = the shipped encoder (rows of xsid-zero-shot.json, same "
                     f"config and seeds). Wall time {(time.time() - t0) / 60:.1f} min."),
           "rows": rows}
    (HERE / "results" / "continued-mlm-ja.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    write_markdown(out)


def write_markdown(out: dict) -> None:
    rows = out["rows"]
    lines = [f"# {out['benchmark']}", "", out["notes"], "", "## Held-out text (ja + en lines never trained on)", "",
             "| after phase | steps | MLM loss | MLM acc | pseudo-perplexity | masked tokens | PPPL tokens |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["method"] == "continued_mlm":
            lines.append(f"| {r['variant'][6:]} | {r['steps']} | {r['heldout_mlm_loss']:.3f} | "
                         f"{100 * r['heldout_mlm_accuracy']:.1f} | {r['heldout_pppl']:.1f} | {r['heldout_masked']} | "
                         f"{r['heldout_pppl_tokens']} |")
    lines += ["", "## Zero-shot xSID (test), mean ± std over seeds", "",
              "| lang | " + " | ".join(f"{m} shipped | {m} +MLM-ja" for m in METRICS) + " |",
              "|---|" + "---|" * (2 * len(METRICS))]
    fine = [r for r in rows if r["method"] == "zero_shot"]
    langs = sorted({r["lang"] for r in fine}, key=lambda x: (x != "en", x != "ja", x))
    for lang in langs:
        cells = []
        for m in METRICS:
            for variant in ("none", "continued_mlm_ja"):
                cells.append(mean_std([r[m] for r in fine if r["lang"] == lang and r["variant"] == variant]))
        lines.append(f"| {lang}{' (adapted)' if lang == 'ja' else ''} | " + " | ".join(cells) + " |")
    cells = []
    for m in METRICS:  # mean over the target languages per seed, then mean ± std over seeds
        for variant in ("none", "continued_mlm_ja"):
            seeds = sorted({r["seed"] for r in fine if r["variant"] == variant})
            cells.append(mean_std([statistics.mean(r[m] for r in fine if r["variant"] == variant
                                                   and r["seed"] == s and r["lang"] != "en") for s in seeds]))
    lines.append(f"| target avg ({len(langs) - 1} languages) | " + " | ".join(cells) + " |")
    (HERE / "results" / "continued-mlm-ja.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
