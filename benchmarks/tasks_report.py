"""Collect the runs of the tasks study into results/{xnli,pawsx,panx,udpos}.json and
results/filter-equal-steps.json, in the format of ../shared/RESULTS_FORMAT.md. Rows of runs present in
benchmarks/runs replace the committed rows of the same method, language, seed and regime; committed rows of runs not
present here are kept (a fresh checkout has no runs); a file with nothing new is not rewritten."""
from __future__ import annotations

import json
import time
from pathlib import Path

from jobqueue import committed_results, git_commit, merge_rows

TASK_OF = {"xnli": "pair_classification", "pawsx": "pair_classification", "panx": "token_classification",
           "udpos": "token_classification"}
# job name (less task and seed) -> (method, variant); a variant is a method with another setting, in a column of its own
JOBS = {"zero-shot": ("zero_shot", ""), "translate-train-es": ("translate_train", ""),
        "xeroalign-es": ("xeroalign", ""), "filter-es": ("filter", ""),
        "filter-self-teaching-es": ("filter_self_teaching", ""),
        "filter-nolabels-es": ("filter", "no_target_labels"),
        "filter-self-teaching-nolabels-es": ("filter_self_teaching", "no_target_labels")}
ORDER = ["zero_shot", "translate_train", "translate_test", "xeroalign", "filter", "filter_self_teaching"]
NOTES = {
    "common": "multilingual-e5-small, frozen embeddings, batch 32, checkpoint chosen on the ENGLISH dev set "
              "(FILTER: English dev + its Apertium MT); learning rate chosen per task on the English dev set from "
              "{1e-4, 3e-4} (XNLI and PAWS-X: {3e-5, 1e-4, 3e-4}) by 300-step probes (lr_selection). zero_shot "
              "and translate_train: 1000 steps x 32; "
              "xeroalign, filter, filter_self_teaching: 500 steps x 32 pairs (equal sentences, regime "
              "equal_sentences); translate_test scores the zero_shot models through Apertium spa->eng. "
              "Translations: Apertium eng<->spa. filter: m=1 local, k=5 fusion layers, lambda=1; "
              "filter_self_teaching: lambda=0.5, KL weight 0.5, teacher = the filter run of the same seed (its "
              "cost excludes the teacher's). Variant no_target_labels (PAN-X, UD POS; the FILTER paper's setting for NER "
              "and POS, whose translations carry no labels there): lambda=0 for the teacher filter (source labels "
              "only, the translation is context) and for its student (source labels + the teacher's soft labels on "
              "the translation, KL weight 1). Mean and std over the seeds present.",
    "panx": "PAN-X: the shared data has no target test sets: target-language DEV sets serve as test sets; the "
            "English dev set is cut in two: first half = selection set, second half = English test. Inputs "
            "longer than the encoder's 512 positions (PAN-X ja/zh dev) are predicted in word windows and joined "
            "(inputs_split), never truncated. NER labels cross a translation by BIO span projection (eflomal).",
    "udpos": "UD POS: English dev cut in two (first half selects, second half is English test; no English test "
             "file here). POS tags cross a translation through one-to-one alignment links only; translate-test "
             "fills unlinked target words with the model's direct prediction (fallback share in the run folders).",
    "xnli": "XNLI: trained on English SNLI dev+test and SICK (29,506 pairs; the shared data has no MNLI); test = "
            "XNLI test with gold labels, 5,010 pairs per language.",
    "pawsx": "PAWS-X: trained on 8,570 English PAWS-Wiki pairs sentence-disjoint from PAWS-X dev/test; test = "
             "PAWS-X test with labels, 2,000 pairs per language.",
}


def _rows_of(results: dict, method: str, task: str, lr: str | None, variant: str = "") -> list[dict]:
    ts = results.get("train_summary", {})
    out = []
    for lang, m in results["per_language"].items():
        row = {"method": method, "task": task, "dataset": results["dataset"], "lang": lang, "seed": results["seed"],
               "regime": "equal_sentences", **{k: round(m[k], 4) for k in results["metrics"]}, "n_test": m["n"],
               "steps": ts.get("step"), "best_step": results.get("best_step"),
               "train_sentences": ts.get("train_sentences"), "train_seconds": round(ts.get("train_seconds", 0), 1),
               "tokens_per_second": round(ts.get("tokens_per_second", 0), 1),
               "seconds_per_step": round(ts.get("seconds_per_step", 0), 3),
               "peak_rss_mb": round(ts.get("peak_rss_mb", 0)), "lr": lr}
        if "inputs_split" in m:
            row["inputs_split"] = m["inputs_split"]
        if variant:
            row["variant"] = variant
        out.append(row)
    return out


def _lr_selection(runs: Path, task: str) -> list[dict]:
    out = []
    for log in sorted(runs.glob(f"{task}-lr*-probe-seed1/metrics.jsonl")):
        records = [json.loads(line) for line in log.read_text().splitlines()]
        best = max(records, key=lambda r: r["selection_value"])
        out.append({"lr": log.parent.name.split("-lr")[1].split("-probe")[0], "steps": records[-1]["step"],
                    "best_english_dev_selection_value": round(best["selection_value"], 4),
                    "best_step": best["step"]})
    return out


def _sort_key(row: dict) -> tuple:
    return ORDER.index(row["method"]), row.get("variant", ""), row["lang"] != "en", row["lang"], row["seed"]


def _header(name: str, notes: str) -> dict:
    """The fields every result file of this benchmark starts with (../shared/RESULTS_FORMAT.md)."""
    return {"benchmark": name, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "git_commit": git_commit(), "machine": "2 CPU cores, no GPU", "model": "multilingual-e5-small",
            "selection": "source-dev", "notes": notes}


def _write(results_dir: Path, name: str, rows: list[dict], notes: str, extra: dict) -> None:
    committed = committed_results(results_dir, name)
    rows = merge_rows(committed.get("rows", []), rows)
    rows.sort(key=_sort_key)
    if committed.get("rows") == rows and all(committed.get(k) == v for k, v in extra.items()):
        return  # nothing new: leave the file (and its timestamp and commit) as it is
    out = {**_header(name, notes), **extra, "rows": rows}
    (results_dir / f"{name}.json").write_text(json.dumps(out, indent=1, ensure_ascii=False))


def collect(runs: Path, results_dir: Path) -> None:
    for dataset, task in TASK_OF.items():
        rows = []
        lr_sel = _lr_selection(runs, dataset) or committed_results(results_dir, dataset).get("lr_selection", [])
        for run in sorted(runs.glob(f"{dataset}-*-seed*")):
            key = run.name.split("-", 1)[1].rsplit("-seed", 1)[0]
            if key not in JOBS or not (run / "results.json").exists():
                continue
            res = json.loads((run / "results.json").read_text())
            lr = _lr_of(run)
            method, variant = JOBS[key]
            rows += _rows_of(res, method, task, lr, variant)
            tt = run / "results-translate-test-es.json"
            if key == "zero-shot" and tt.exists():
                rows += _rows_of({**json.loads(tt.read_text()), "train_summary": res["train_summary"]},
                                 "translate_test", task, lr)
        if rows:
            _write(results_dir, dataset, rows, NOTES["common"] + " " + NOTES[dataset], {"task": task,
                   "lr_selection": lr_sel})
    rows = []
    for run in sorted(runs.glob("mtod-*-1000-seed*")):
        if (run / "results.json").exists():
            res = json.loads((run / "results.json").read_text())
            rows += _rows_of(res, res["method"], "intent_slot", _lr_of(run))
    if rows:
        for r in rows:
            r["regime"] = "equal_steps"
        _write(results_dir, "filter-equal-steps", rows,
               "FILTER (m=1, k=5, lambda=1) and FILTER + self-teaching (lambda=0.5, KL 0.5, teacher = the 1000-step "
               "filter run of the same seed) at 1000 steps x 32 pairs on MTOD es (Apertium both ways): the same "
               "number of optimizer steps as the 1000-step translate-train and zero-shot runs of "
               "translation.json (regime equal_steps; the paired runs see twice the sentences). multilingual-e5-"
               "small, frozen embeddings, lr 3e-4, checkpoint chosen on English dev + its MT.", {"task": "intent_slot"})
    _reproduction(runs, results_dir)


# name of the re-run -> (committed old-core result file, its dataset, the shipped config both ran)
REPRODUCTIONS = {"xsid-zero-shot-newcore": ("xsid-zero-shot.json", "xsid", "xsid-zero-shot"),
                 "mtod-zero-shot-newcore": ("translation.json", "mtod", "mtod-zero-shot")}


def _reproduction(runs: Path, results_dir: Path) -> None:
    for name in REPRODUCTIONS:
        _reproduce(name, runs, results_dir)


def _reproduce(name: str, runs: Path, results_dir: Path) -> None:
    """A zero-shot benchmark of the old core (intent + slot only) re-run on today's core, against its committed
    rows."""
    old_file, dataset, config = REPRODUCTIONS[name]
    rows = []
    for run in sorted(runs.glob(f"{name}-seed*")):
        if (run / "results.json").exists():
            rows += _rows_of(json.loads((run / "results.json").read_text()), "zero_shot", "intent_slot", _lr_of(run))
    if not rows:
        return
    for r in rows:
        r["regime"], r["dataset"] = "equal_steps", dataset
    committed = committed_results(results_dir, name).get("rows", [])
    rows = merge_rows(committed, rows)
    rows.sort(key=lambda r: (r["lang"] != "en", r["lang"], r["seed"]))
    if rows == committed:
        return
    old = json.loads((results_dir / old_file).read_text())
    seeds = sorted({r["seed"] for r in rows})
    notes = (f"{config} (1000 steps x 32, lr 3e-4, frozen embeddings, English-dev selection) re-run on commit "
             f"{git_commit()} (the core with tasks/methods/stages), seeds {seeds}, against the committed zero_shot "
             f"{dataset} rows of {old_file} (commit {old['git_commit']}, the old core).")
    out = {**_header(name, notes), "rows": rows}
    (results_dir / f"{name}.json").write_text(json.dumps(out, indent=1, ensure_ascii=False))


def _lr_of(run: Path) -> str | None:
    import yaml

    cfg = run / "config.yaml"
    return str(yaml.safe_load(cfg.read_text())["train"]["lr"]) if cfg.exists() else None
