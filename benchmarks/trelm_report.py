"""Collect the runs of the trelm study (benchmarks/studies/trelm.yaml) into results/trelm.json, format
../shared/RESULTS_FORMAT.md.

Rows: ``trelm_alignment`` (word-translation P@1 of each alignment step, MUSE en-es test split, CSLS), ``trelm_pretrain``
(one per variant and phase: held-out BPW of Spanish and English, CdLM accuracy, cost) and ``target_trained`` rows
(MTOD es fine-tuning; ``variant`` = migrated / unmigrated / from_scratch / multilingual / without_cdlm /
random_init).
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from jobqueue import committed_results, git_commit, merge_rows

ALIGNED = ["migrated", "bridged", "bridged_libreoffice"]  # the bases whose alignment rows are reported
# the order of the fine-tuned variants in the table
FINE_TUNED = ["migrated", "bridged", "unmigrated", "from_scratch", "multilingual", "without_cdlm", "random_init",
              "from_scratch_lr5e-4"]

METRICS = ["intent_acc", "slot_f1", "semantic_acc"]


def _alignment_rows(base: Path, variant: str) -> list[dict]:
    m = json.loads((base / "migration.json").read_text())
    # the shipped map's rows keep no variant (as committed before the bridged variant existed)
    extra = {} if variant == "migrated" else {"variant": variant}
    return [{"method": "trelm_alignment", "dataset": m["test_dictionary"], "lang": "es", "seed": 1, **extra,
             "step": step,
             "precision_at_1": round(p["all"], 4), "precision_at_1_different_strings":
                 None if p["different_strings"] is None else round(p["different_strings"], 4),
             "initialises_embeddings": step == m.get("initialising_step", f"{m['initialised_by']}+procrustes"),
             "map_into": m.get("map_into", "english_model"), "vocabulary": m["vocabulary"],
             "fasttext": m.get("fasttext", m.get("bridge", {}).get("fasttext_target")),
             "seconds": round(m["seconds"], 1),
             # the identical-strings step's diagnostic: maps fitted on half its anchors, retrieving the other half
             **({"heldout_anchors": m["heldout_anchors"]} if step == "identical_strings" and "heldout_anchors" in m
                else {})}
            for step, p in m["precision_at_1"].items()]


def _pretrain_rows(run: Path, variant: str) -> list[dict]:
    res = json.loads((run / "results.json").read_text())
    rows = []
    for phase in res["phases"]:
        ev, s = phase["final_eval"], phase["summary"]
        rows.append({"method": "trelm_pretrain", "dataset": "mono+parallel", "lang": "es", "seed": 1,
                     "variant": variant, "phase": phase["name"], "steps": s["step"],
                     **{k: round(v, 4) for k, v in ev.items() if k.startswith("heldout_")},
                     "trainable_parameters": phase["parameters"]["trainable"],
                     "train_sentences": s["train_sentences"], "train_tokens": s["train_tokens"],
                     "train_seconds": round(s["train_seconds"], 1),
                     "tokens_per_second": round(s["tokens_per_second"], 1), "peak_rss_mb": round(s["peak_rss_mb"]),
                     "device": s.get("device", "cpu"), "threads": s.get("threads")})
    return rows


def _fine_tune_rows(res: dict, variant: str) -> list[dict]:
    ts = res.get("train_summary", {})
    return [{"method": "target_trained", "task": "intent_slot", "dataset": res["dataset"], "lang": lang,
             "seed": res["seed"], "variant": variant, **{k: round(m[k], 4) for k in METRICS}, "n_test": m["n"],
             "steps": ts.get("step"), "best_step": res.get("best_step"),
             "train_seconds": round(ts.get("train_seconds", 0), 1), "device": ts.get("device", "cpu")}
            for lang, m in res["per_language"].items()]


def collect(runs: Path, results_dir: Path) -> None:
    from study import load_study

    rows = []
    for row in load_study("trelm")["rows"]:
        variant = row["labels"]["variant"]
        if "stage" in row:
            folder = runs / row["name"]
            if (folder / "base" / "migration.json").exists() and variant in ALIGNED:
                rows += _alignment_rows(folder / "base", variant)
            if (folder / "results.json").exists():
                rows += _pretrain_rows(folder, variant)
            continue
        for run in sorted(runs.glob(f"{row['name'].format(seed='*')}")):
            if (run / "results.json").exists():
                rows += _fine_tune_rows(json.loads((run / "results.json").read_text()), variant)
    rows = merge_rows(committed_results(results_dir, "trelm").get("rows", []), rows)
    commit = git_commit()
    notes = ("TreLM migration of minilm-l6-en to Spanish (config pretrain-trelm-es: new 30k WordPiece vocabulary "
             "over the English + Spanish training text; fastText vectors of its entries mapped into MiniLM's "
             "embedding space by two seeds, each refined by Procrustes: adversarial (the paper's) and identical "
             "strings (MUSE identical_char), both reported; the embeddings come from the identical-strings map, "
             "and entries spelled as in MiniLM's vocabulary keep MiniLM's own rows (rows_copied_from_english); "
             "phases commonality / s2t / t2s / specific, 1000 steps each, batch 32). BPW = -log2 p per "
             "masked sub-token on held-out lines, the same masked positions for every model on this vocabulary "
             "(unmigrated and multilingual have other vocabularies: no BPW). Downstream: MTOD es trained on the "
             "human Spanish training set and selected on SPANISH dev (supervised target-language task, NOT "
             "zero-shot), 1000 steps x 32, seeds 1-3.")
    out = {"benchmark": "trelm", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": commit, "machine": f"{platform.machine()}; devices of the rows: "
           f"{', '.join(sorted({r.get('device', 'cpu') for r in rows if r['method'] != 'trelm_alignment'}) or ['cpu'])}"
           " (each row's `device`; timings compare only within one device)",
           "model": "minilm-l6-en", "selection": "target-dev (supervised Spanish task)", "notes": notes,
           "rows": rows}
    (results_dir / "trelm.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
