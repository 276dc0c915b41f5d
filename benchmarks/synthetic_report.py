"""The synthetic study's results (benchmarks/studies/synthetic.yaml): a row per run, language and seed, a pre-training
row per stage (its held-out evaluation; TALL's BLEU; TreLM's alignment P@1 too), ``gap_closed`` on each target row,
in ``benchmarks/results/synthetic.json`` (``XLT_SYNTHETIC_NAME``
names another file, e.g. a GPU run's)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from jobqueue import committed_results, git_commit, merge_rows

NAME = os.environ.get("XLT_SYNTHETIC_NAME", "synthetic")
LANGS = {"same_order": "syn-en", "permuted": "syn-en-perm"}

# each dataset's main metrics, and the gap_closed field each one gives
MAIN = {"xsid": ("intent_acc", "slot_f1"), "pawsx": ("accuracy",)}
GAP = {"intent_acc": "gap_closed_intent", "slot_f1": "gap_closed_slot", "accuracy": "gap_closed_accuracy"}


def machine(rows: list[dict]) -> str:
    devices = sorted({str(r["device"]) for r in rows if r.get("device")})  # pre-training rows name no device
    if all(d.startswith("cpu") for d in devices):
        return "2 CPU cores, no GPU"
    import torch

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "a GPU"
    return f"{name}, devices {', '.join(devices)}"


def add_gap_closed(rows: list[dict]) -> None:
    """gap_closed_<metric> on target rows: (method - zero-shot) / (English - zero-shot), same dataset and seed."""
    zs = {(r["dataset"], r["seed"], r["lang"]): r for r in rows if r["method"] == "zero_shot"}
    for r in rows:
        if r["lang"] == "en" or r["dataset"] not in MAIN:
            continue
        if r["method"].startswith("trelm_"):  # trained on the target (TreLM's setting): no zero-shot gap to close
            continue
        base, english = zs.get((r["dataset"], r["seed"], r["lang"])), zs.get((r["dataset"], r["seed"], "en"))
        for metric in MAIN[r["dataset"]]:
            key = GAP[metric]
            if base is None or english is None or english[metric] == base[metric]:
                r[key] = None
                continue
            r[key] = round((r[metric] - base[metric]) / (english[metric] - base[metric]), 4)


def stage_rows(folder: Path, method: str, variant: str, trained_elsewhere: bool = False) -> list[dict]:
    """A pre-training's own row: its final held-out evaluation (TALL: BLEU English -> synthetic against the exact
    images of Tatoeba's English sentences, and round-trip BLEU); TreLM: also an alignment row (word-translation P@1
    on the true bijection: ``precision_at_1`` of the initialised embedding rows, ``precision_at_1_steps`` of each
    map), written as soon as the base is built -- unless ``trained_elsewhere``: the results already hold this
    stage's pre-training row, from another base, and a base rebuilt without finishing the stage (e.g. only for a
    baseline that reuses it) must not replace the alignment row that run started from."""
    lang, rows = LANGS[variant], []
    migration = folder / "base" / "migration.json"
    m = json.loads(migration.read_text()) if migration.exists() else {}
    if trained_elsewhere and not (folder / "results.json").exists():
        m = {}
    if "precision_at_1" in m:  # (a from-scratch base has no alignment)
        steps = {k: v.get("all") for k, v in m["precision_at_1"].items()}
        rows.append({"dataset": "pretraining", "method": f"{method}_alignment", "variant": variant, "lang": lang,
                     "seed": 1, "precision_at_1": steps.get("initialised_rows"), "precision_at_1_steps": steps,
                     "map_into": m.get("map_into"), "initialising_step": m.get("initialising_step"),
                     "vocabulary": m["vocabulary"], "seconds": round(m["seconds"], 1)})
    path = folder / "results.json"
    if not path.exists():
        return rows
    phases = json.loads(path.read_text())["phases"]
    final = phases[-1]["final_eval"]
    row = {"dataset": "pretraining", "method": f"{method}_pretrain", "variant": variant, "lang": lang, "seed": 1,
           "final_eval": {k: v for k, v in final.items() if isinstance(v, (int, float))},
           # each phase's steps, training time and held-out metrics (TreLM: BPW per language)
           "phases": [{"name": p["name"], "steps": p["steps"], "train_seconds": round(p["summary"]["train_seconds"]),
                       "heldout": {k: round(v, 4) for k, v in p["final_eval"].items()
                                   if k.startswith("heldout_") and isinstance(v, (int, float))}} for p in phases]}
    if method.startswith("tall"):
        row.update(bleu=final.get(f"bleu_en_{lang}"), bleu_back=final.get(f"bleu_{lang}_en"),
                   roundtrip_bleu=final.get("roundtrip_bleu_en"))
    return rows + [row]


def rows_of(path: Path, dataset: str, method: str, variant: str | None, seed: int) -> list[dict]:
    """A fine-tuning run's rows (a zero-shot run's target rows take the variant of their language)."""
    r = json.loads(path.read_text())
    summary = json.loads((path.parent / "train_summary.json").read_text())
    rows = []
    for lang, m in r["per_language"].items():
        v = variant or next((k for k, code in LANGS.items() if code == lang), None)
        rows.append({"dataset": dataset, "task": r.get("task", ""), "method": method, "seed": seed,
                     "variant": v if lang != "en" else variant, "lang": lang,
                     **{k: x for k, x in m.items() if k != "n"}, "n_test": m["n"],
                     "steps": summary.get("step"), "train_seconds": summary.get("train_seconds"),
                     "device": summary.get("device"), **({"cpu": summary["cpu"]} if "cpu" in summary else {}),
                     "selection": "source-dev"})
    return rows


def collect(runs: Path, results: Path) -> None:
    from study import load_study

    study = load_study("synthetic")
    fresh: list[dict] = []
    committed = committed_results(results, NAME).get("rows", [])
    trained = {(r["method"], r["variant"]) for r in committed if r["dataset"] == "pretraining"}
    for row in study["rows"]:
        labels = row["labels"]
        if "stage" in row:
            method, variant = labels["method"], labels["variant"]
            fresh += stage_rows(runs / row["name"], method, variant, (f"{method}_pretrain", variant) in trained)
            continue
        for path in sorted(runs.glob(f"{row['name'].format(seed='*')}/results.json")):
            seed = int(path.parent.name.rsplit("seed", 1)[1])
            fresh += rows_of(path, labels["dataset"], labels["method"], labels.get("variant"), seed)
            tt = path.parent / "results-translate-test.json"
            if tt.exists():
                fresh += rows_of(tt, labels["dataset"], "translate_test", None, seed)
    rows = merge_rows(committed, fresh, ("dataset", "method", "variant", "lang", "seed"))
    add_gap_closed(rows)
    out = {"benchmark": "synthetic", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": machine(rows), "model": "multilingual-e5-small",
           "selection": "source-dev", "notes": study["notes"], "rows": rows}
    (results / f"{NAME}.json").write_text(json.dumps(out, indent=1))
