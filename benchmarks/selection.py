"""Benchmark: which checkpoint should a zero-shot run keep?  (issue 48, ``train.select``)

English-dev selection need not track transfer.  For the xSID and XNLI zero-shot configs, seeds 1-3: one training
run per seed keeps every evaluated checkpoint (``train.keep_checkpoints=true``); from them

- ``source_dev``: the checkpoint with the best English dev score (the default, zero-shot);
- ``last``: the final step;
- ``average``: the uniform weight average of the last 3 evaluated checkpoints;
- ``target_dev`` (ORACLE, not zero-shot): the checkpoint with the best mean score on the labelled target-language
  dev sets -- an upper bound on what selection could give, never a result to report as zero-shot;

each evaluated on every test language (a run folder per choice, its config naming the choice, so its report says
how it was selected).  ``train.select`` does the same inside one run; this benchmark derives all four from one
training to compare them on identical weights.

    python benchmarks/selection.py --data-dir ../shared/data [--seeds 1 2 3] [--only xsid-zero-shot]

Writes benchmarks/results/selection.{json,md}.
"""
from __future__ import annotations

import json
import shutil
import statistics
import time
from pathlib import Path

from jobqueue import RUNS, git_commit, queue_main

CONFIGS = ("xsid-zero-shot", "xnli-zero-shot")
SELECTS = ("source_dev", "last", "average", "target_dev")
AVERAGE_LAST = 3
RUN_FILES_SKIPPED = {"best", "last", "checkpoints", "metrics.jsonl"}


def base_name(config: str, seed: int) -> str:
    return f"selection-{config}-seed{seed}"


def variant_folder(base: Path, select: str, state: dict, steps: list[int], cfg) -> Path:
    """A run folder that is ``base`` with ``state`` as its best model and ``train.select`` naming the choice."""
    from xlt.config import save_config
    from xlt.core import checkpoint

    out = base.with_name(f"{base.name}-{select}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    for f in base.iterdir():
        if f.name not in RUN_FILES_SKIPPED and not f.name.startswith("results"):
            shutil.copy2(f, out / f.name) if f.is_file() else shutil.copytree(f, out / f.name)
    cfg.train.select = select
    cfg.train.average_last = AVERAGE_LAST
    cfg.name = out.name
    save_config(cfg, out / "config.yaml")
    summary = json.loads((base / "train_summary.json").read_text())
    (out / "train_summary.json").write_text(json.dumps({**summary, "select": select, "selected_steps": steps}))
    checkpoint.atomic_save(state, out / "best")
    return out


def run_job(config: str, seed: int, data_dir: str) -> None:
    from safetensors.torch import load_file

    from xlt.config import find_config, load_config
    from xlt.core.context import RunContext
    from xlt.evaluation import evaluate_run, selection_detail
    from xlt.finetune import target_dev_langs
    from xlt.report import write_report
    from xlt.finetune import average_states, kept_checkpoints, train

    cfg = load_config(find_config(config), [f"data.data_dir={data_dir}", f"train.seed={seed}", f"output_dir={RUNS}",
                                            f"name={base_name(config, seed)}", "train.keep_checkpoints=true"])
    base = cfg.run_dir
    if not (base / "train_summary.json").exists():
        # resume also restarts a run that died before its first checkpoint (check_run_dir)
        train(cfg, resume=base.exists() and any(base.iterdir()))
    folders = kept_checkpoints(base)
    steps = [int(f.name.split("-")[1]) for f in folders]
    summary = json.loads((base / "train_summary.json").read_text())
    # the oracle's view: every kept checkpoint on the labelled target dev sets
    targets = target_dev_langs(cfg)
    metric = RunContext.from_config(cfg).select_metric  # the task's selection metric (xSID: intent_slot_mean)
    dev_scores = {}
    for folder, step in zip(folders, steps):
        done = base / f"target-dev-step-{step}.json"
        if done.exists():  # an interrupted job keeps the checkpoints it scored
            dev_scores[step] = statistics.mean(json.loads(done.read_text())["per_language"][x][metric] for x in targets)
            continue
        probe = variant_folder(base, "target_dev", load_file(str(folder / "model.safetensors")), [step],
                               load_config(base / "config.yaml"))
        res = evaluate_run(probe, targets, "valid", tag="target-dev")
        dev_scores[step] = statistics.mean(res["per_language"][x][metric] for x in targets)
        (base / f"target-dev-step-{step}.json").write_text(json.dumps(res))
    oracle_step = max(dev_scores, key=dev_scores.get)
    choices = {"source_dev": [summary["best_step"]], "last": [steps[-1]], "average": steps[-AVERAGE_LAST:],
               "target_dev": [oracle_step]}
    scored: dict[tuple[int, ...], dict] = {}  # chosen steps -> test scores (same weights, same predictions)
    for select, chosen in choices.items():
        folder = base.with_name(f"{base.name}-{select}")
        if (folder / "results.json").exists() and json.loads((folder / "train_summary.json").read_text()).get(
                "selected_steps") == chosen:  # scored before an interruption
            scored.setdefault(tuple(chosen), json.loads((folder / "results.json").read_text()))
            continue
        state = (average_states([base / "checkpoints" / f"step-{s}" for s in chosen]) if len(chosen) > 1 else
                 load_file(str(base / "checkpoints" / f"step-{chosen[0]}" / "model.safetensors")))
        vcfg = load_config(base / "config.yaml")
        folder = variant_folder(base, select, state, chosen, vcfg)
        if tuple(chosen) in scored:  # e.g. source_dev and the oracle picked one step: 15 test sets not re-run
            results = {**scored[tuple(chosen)], "selection": select.replace("_", "-"),
                       "zero_shot_selection": select != "target_dev",
                       "selection_detail": selection_detail(vcfg, metric, chosen),
                       "train_summary": json.loads((folder / "train_summary.json").read_text()),
                       "scores_shared_with": scored[tuple(chosen)]["selection"]}
            write_report(folder, results, results["metrics"], "")
        else:
            results = evaluate_run(folder)
        scored.setdefault(tuple(chosen), results)
        results = json.loads((folder / "results.json").read_text())
        results["target_dev_mean_by_step"] = dev_scores
        (folder / "results.json").write_text(json.dumps(results, indent=1))


def queue(seeds: list[int]) -> list[tuple[str, int]]:
    return [(config, seed) for config in CONFIGS for seed in seeds]


def collect(runs: Path, results: Path) -> None:
    rows = []
    for config in CONFIGS:
        for path in sorted(runs.glob(f"selection-{config}-seed*-*/results.json")):
            r = json.loads(path.read_text())
            select = next(s for s in SELECTS if path.parent.name.endswith(s))
            for lang, m in r["per_language"].items():
                rows.append({"config": config, "dataset": r["dataset"], "method": r["method"], "seed": r["seed"],
                             "select": select, "zero_shot": select != "target_dev", "lang": lang,
                             **{k: v for k, v in m.items() if k != "n"}, "n_test": m["n"],
                             "selected_steps": json.loads((path.parent / "train_summary.json").read_text())[
                                 "selected_steps"], "selection_detail": r["selection_detail"]})
    summary = {}
    for config in CONFIGS:
        for select in SELECTS:
            mine = [r for r in rows if r["config"] == config and r["select"] == select and r["lang"] != "en"]
            if not mine:
                continue
            metrics = [m for m in ("intent_acc", "slot_f1", "accuracy") if m in mine[0]]
            for m in metrics:
                per_seed = [statistics.mean(r[m] for r in mine if r["seed"] == s) for s in sorted({r["seed"] for r in mine})]
                summary[f"{config} {select} target-avg {m}"] = {
                    "mean": round(100 * statistics.mean(per_seed), 2),
                    "std": round(100 * statistics.stdev(per_seed), 2) if len(per_seed) > 1 else None,
                    "seeds": len(per_seed)}
    out = {"benchmark": "selection", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "model": "multilingual-e5-small",
           "notes": "one training per seed (every evaluated checkpoint kept); source_dev / last / average (last "
                    f"{AVERAGE_LAST}) are zero-shot choices; target_dev is the ORACLE (labelled target dev sets choose:"
                    " not zero-shot). Test sets of every language.", "summary": summary, "rows": rows}
    (results / "selection.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    queue_main(__doc__, __file__, "selection", run_job, queue, "configs (xsid-zero-shot, xnli-zero-shot)")
