"""What the benchmark scripts share: a resumable fine-tuning run, a queue of jobs each run in its own process (so its
peak RSS is its own; one at a time: the machine runs one training at a time), a PAUSE file that holds the queue
between jobs, and results rewritten after every job by a report module that is re-read each time (it can change
while the queue runs)."""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
RUNS = HERE / "runs"
RESULTS = HERE / "results"


def train_evaluate(cfg, evaluate: bool = True) -> Path:
    """Train (resuming an interrupted run), evaluate on the test sets, drop the resumable checkpoint; a finished run
    is left as it is."""
    from xlt.evaluation import evaluate_run
    from xlt.finetune import clean_checkpoint, train

    done = cfg.run_dir / ("results.json" if evaluate else "train_summary.json")
    if not done.exists():
        if cfg.run_dir.exists() and not (cfg.run_dir / "last").exists():
            shutil.rmtree(cfg.run_dir)  # stopped before its first checkpoint: nothing to resume
        train(cfg, resume=(cfg.run_dir / "last").exists())
        if evaluate:
            evaluate_run(cfg.run_dir)
        clean_checkpoint(cfg.run_dir)  # best/ stays (a FILTER teacher needs only best/)
    return cfg.run_dir


def wait_while_paused() -> None:
    """``touch benchmarks/runs/PAUSE`` holds a queue before its next job (another benchmark may take the CPU between
    two jobs); removing the file lets it go on."""
    if (RUNS / "PAUSE").exists():
        print(f"paused: waiting for {RUNS / 'PAUSE'} to go", flush=True)
    while (RUNS / "PAUSE").exists():
        time.sleep(20)


def collect(report_module: str, strict: bool) -> None:
    """``report_module.collect(RUNS, RESULTS)``; a reporting bug must not stop hours of training (strict re-raises)."""
    sys.path.insert(0, str(HERE))
    try:
        # the shared helpers may have changed too while the queue ran: the report module imports them anew
        importlib.reload(sys.modules[__name__])
        importlib.reload(importlib.import_module(report_module)).collect(RUNS, RESULTS)
    except Exception as err:
        if strict:
            raise
        print(f"collecting results failed: {err!r}", flush=True)


def run_queue(script: str, data_dir: str, jobs: list[tuple[str, int]], report_module: str,
              stop_on_failure: bool = False) -> None:
    """Run ``script --job NAME SEED`` for each job in turn, rewriting the results after each."""
    for job, seed in jobs:
        print(f"== {job} seed {seed}", flush=True)
        done = subprocess.run([sys.executable, script, "--data-dir", data_dir, "--job", job, str(seed)])
        if done.returncode != 0:
            if stop_on_failure:
                raise SystemExit(f"{job} seed {seed} failed (exit {done.returncode})")
            print(f"!! {job} seed {seed} failed (exit {done.returncode}); going on", flush=True)
        collect(report_module, strict=False)
    collect(report_module, strict=True)


def queue_main(doc: str, script: str, report_module: str, run_job, queue, only_help: str,
               seeds_of=lambda job, seeds: seeds) -> None:
    """The command line of a queued benchmark: ``[--seeds ...] [--only JOB ...] [--collect]``; ``--job NAME SEED``
    (internal) runs one job in this process.  ``seeds_of(job, seeds)``: the seeds a job named by --only runs on."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--only", nargs="+", help=only_help)
    ap.add_argument("--collect", action="store_true", help="only rewrite results from the finished runs")
    ap.add_argument("--job", nargs=2, metavar=("NAME", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.job:
        wait_while_paused()
        run_job(args.job[0], int(args.job[1]), args.data_dir)
        return
    jobs = [(j, s) for j in args.only for s in seeds_of(j, args.seeds)] if args.only else queue(args.seeds)
    run_queue(script, args.data_dir, [] if args.collect else jobs, report_module)


def pretrain(cfg) -> Path:
    """Run a pre-training stage (resuming an interrupted one); a finished one (results.json) is left as it is."""
    from xlt.stages import run_stage

    if not (cfg.run_dir / "results.json").exists():
        run_stage(cfg, resume=(cfg.run_dir / "config.yaml").exists())
    return cfg.run_dir


def trelm_base(cfg) -> Path:
    """Build a TreLM stage's base folder alone (vocabulary, fastText, alignment), with the run's config.yaml beside it
    so the pre-training job of the same run continues that folder (run_stage refuses a folder that holds files but
    no config)."""
    from xlt.config import save_config
    from xlt.stages.trelm_base import prepare_trelm_base

    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    save_config(cfg, cfg.run_dir / "config.yaml")
    return prepare_trelm_base(cfg)


IDENTITY = ("method", "dataset", "variant", "pair", "phase", "step", "lang", "seed", "regime", "translator", "model",
            "states")


def merge_rows(committed: list[dict], fresh: list[dict], identity: tuple[str, ...] = IDENTITY) -> list[dict]:
    """The rows of the runs present here, plus the committed rows that none of them replaces (same values of the
    ``identity`` fields): benchmarks/runs is not in git, so a fresh checkout has no runs, and a job run there must not
    drop the committed results of the others (pre-trained stages and their fine-tunes are re-run together)."""
    key = lambda r: tuple(r.get(f) for f in identity)  # noqa: E731
    replaced = {key(r) for r in fresh}
    return [r for r in committed if key(r) not in replaced] + fresh


def committed_results(results_dir: Path, name: str) -> dict:
    """results/{name}.json as committed (empty when there is none)."""
    path = results_dir / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def git_commit() -> str:
    """The short commit the results come from: ``XLT_GIT_COMMIT`` when set (a copy of the working tree on a GPU
    machine may carry a stale .git), else git's HEAD."""
    if os.environ.get("XLT_GIT_COMMIT"):
        return os.environ["XLT_GIT_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=HERE).stdout.strip() or "unknown"
    except FileNotFoundError:
        return "unknown"


def mean_std(values: list[float], scale: float = 100) -> str:
    """``mean ± std`` over seeds for the markdown tables (``(1 seed)`` when there is one, ``–`` when none)."""
    import statistics

    if not values:
        return "–"
    if len(values) == 1:
        return f"{scale * values[0]:.1f} (1 seed)"
    return f"{scale * statistics.mean(values):.1f} ± {scale * statistics.stdev(values):.1f}"
