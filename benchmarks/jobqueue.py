"""What the benchmark scripts share: a resumable fine-tuning or pre-training run, a PAUSE file that holds the study
queue between jobs, the merge of fresh result rows into the committed ones, and the commit results come from."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
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
