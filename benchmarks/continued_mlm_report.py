"""Collect the continued-mlm study (benchmarks/studies/continued-mlm.yaml) into
results/continued-mlm-ja.json: held-out MLM loss / accuracy / pseudo-perplexity after each phase of
pretrain-mlm-ja (the end of phase ``head`` is the reference: e5-small ships without an MLM head), and zero-shot xSID on
the adapted encoder beside the shipped encoder's rows of results/xsid-zero-shot.json (same config and seeds)."""
from __future__ import annotations

import json
import time
from pathlib import Path

from jobqueue import committed_results, git_commit, merge_rows

METRICS = ("intent_acc", "slot_f1", "semantic_acc")


def collect(runs: Path, results: Path) -> None:
    rows, stage = [], None
    if (runs / "pretrain-mlm-ja" / "results.json").exists():
        stage = json.loads((runs / "pretrain-mlm-ja" / "results.json").read_text())
        for phase in stage["phases"]:
            ev = phase["final_eval"]
            rows.append({"method": "continued_mlm", "dataset": "mono", "lang": "ja+en", "seed": 1,
                         "variant": f"after_{phase['name']}", "heldout_mlm_loss": round(ev["heldout_mlm_loss"], 4),
                         "heldout_mlm_accuracy": round(ev["heldout_mlm_accuracy"], 4),
                         "heldout_pppl": round(ev["heldout_pppl"], 2), "heldout_masked": ev["heldout_masked"],
                         "heldout_pppl_tokens": ev["heldout_pppl_tokens"], "steps": phase["summary"]["step"],
                         "train_seconds": round(phase["summary"]["train_seconds"], 1),
                         "peak_rss_mb": phase["summary"]["peak_rss_mb"]})
    seeds = []
    for run in sorted(runs.glob("xsid-zero-shot-mlm-ja-seed*/results.json")):
        res = json.loads(run.read_text())
        ts, seed = res["train_summary"], res["seed"]
        seeds.append(seed)
        rows += [{"method": "zero_shot", "task": "intent_slot", "dataset": "xsid", "lang": lang, "seed": seed,
                  "regime": "equal_steps", "variant": "continued_mlm_ja", **{k: round(m[k], 4) for k in METRICS},
                  "n_test": m["n"], "steps": ts["step"], "best_step": res["best_step"],
                  "train_seconds": round(ts["train_seconds"], 1), "peak_rss_mb": ts["peak_rss_mb"]}
                 for lang, m in res["per_language"].items()]
    baseline = json.loads((results / "xsid-zero-shot.json").read_text())["rows"]
    rows += [{**r, "task": "intent_slot", "variant": "none", "source": "benchmarks/results/xsid-zero-shot.json"}
             for r in baseline if r["seed"] in seeds]
    committed = committed_results(results, "continued-mlm-ja")
    rows = merge_rows(committed.get("rows", []), rows)
    notes = committed.get("notes", "")
    if stage:
        notes = ("stage pretrain-mlm-ja: corpus " + json.dumps({k: v for k, v in stage["corpus"].items() if k != "files"})
                 + "; phases " + "; ".join(f"{p['name']}: {p['summary']['step']} steps" for p in stage["phases"])
                 + f"; MLM softmax over the {stage.get('vocab_kept', '?')} ids of the corpora. Fine-tuning: "
                 "xsid-zero-shot config (1000 steps x 32, lr 3e-4, frozen embeddings, English-dev selection), seeds "
                 f"{sorted(seeds)}; variant none = the shipped encoder (rows of xsid-zero-shot.json, same config and "
                 "seeds).")
    out = {"benchmark": "continued-mlm-ja", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": committed.get("machine", ""), "model": "multilingual-e5-small",
           "selection": "source-dev", "notes": notes, "rows": rows}
    (results / "continued-mlm-ja.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
