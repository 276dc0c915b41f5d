"""A run's folder: whether a new run may use it, whether it resumes, and ``--overwrite`` that never loses the old run.

``--overwrite`` checks nothing away: the config, the data and the model are all checked first (an error then leaves
the old run as it was), and the old folder is only moved aside, to ``OUTPUT_DIR/.NAME.replaced``, when the new run
writes its first file.  It is deleted when the new run finishes training.  A new run that fails before its first
checkpoint is removed and the old one put back; one that fails or is interrupted later keeps both (the new one can
``--resume``; the old one waits beside it, and goes when the resumed run finishes).
"""
from __future__ import annotations

import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from xlt.errors import XltError


def replaced_path(run_dir: Path) -> Path:
    """Where ``--overwrite`` keeps the old run while the new one trains."""
    return run_dir.parent / f".{run_dir.name}.replaced"


def check_run_dir(run_dir: Path, resume: bool, overwrite: bool = False, main: bool = True) -> bool:
    """Whether the run continues from ``RUN_DIR/last``; raises ``XltError`` when the folder cannot be used as asked.
    Deletes nothing: ``overwrite`` is carried out by ``replacing`` once the new run starts.  A ``resume`` of a run
    that died before its first checkpoint (no ``last``, never finished) starts it afresh.  ``main``: this is the
    main process (the only one that speaks)."""
    if overwrite and resume:
        raise XltError("--resume and --overwrite (resume=True, overwrite=True in the API) contradict each other: pass one")
    if overwrite and run_dir.exists():
        if not (run_dir / "config.yaml").exists() and any(run_dir.iterdir()):
            raise XltError(f"{run_dir} holds files but no run (no config.yaml): not replacing it; choose another "
                           "name (name=...) / output_dir")
        if replaced_path(run_dir).exists():
            raise XltError(f"{replaced_path(run_dir)} holds the run that an earlier --overwrite of {run_dir} replaced, "
                           f"and that replacement never finished: move one of them back or away (or delete it) "
                           f"first; nothing was changed")
        return False
    if run_dir.exists() and any(run_dir.iterdir()) and not resume:
        raise XltError(f"{run_dir} already holds a run: pass --resume (API: resume=True) to continue it (a run that died "
                       "before its first checkpoint starts afresh), --overwrite (overwrite=True) to replace it (the old run is kept until the new "
                       "one finishes training), or choose another name (name=...) / output_dir")
    if not resume or (run_dir / "last").exists():
        return resume
    finished = (run_dir / "train_summary.json").exists()
    if finished or (run_dir / "best").exists():
        raise XltError(f"{run_dir / 'last'}: nothing to resume (the run "
                       f"{'finished' if finished else 'has a best checkpoint but no resumable one'}); pass --overwrite "
                       f"(API: overwrite=True) to train it again, or choose another name (name=...)")
    if main:
        print(f"--resume: {run_dir} has no checkpoint yet (the run stopped before its first one): starting it afresh")
    return False


def _has_checkpoint(run_dir: Path) -> bool:
    return run_dir.is_dir() and any(run_dir.rglob("model.safetensors"))


@dataclass
class Replacement:
    finished: bool = False  # set by the run when its training is complete


@contextmanager
def replacing(run_dir: Path, overwrite: bool, main: bool = True) -> Iterator[Replacement]:
    """Around everything a run writes: with ``overwrite`` (main process), the old ``run_dir`` is moved aside on
    entry, and deleted when the block ends with ``finished`` set; on an error or interrupt it comes back if the new
    run has no checkpoint yet, else both stay.  Without ``overwrite``, a finished run still deletes an aside folder
    left by an earlier ``--overwrite`` of it (the run that replaced it has now finished)."""
    aside = replaced_path(run_dir)
    if main and overwrite and run_dir.exists():
        run_dir.rename(aside)
        print(f"--overwrite: the earlier run is kept at {aside} until this one finishes training")
    replacement = Replacement()
    try:
        yield replacement
    except BaseException:
        if main and aside.exists():
            if _has_checkpoint(run_dir):
                print(f"xlt: the run replaced by --overwrite is still at {aside}; this run can be continued with "
                      f"--resume (and {aside} goes when it finishes)", file=sys.stderr)
            else:
                shutil.rmtree(run_dir, ignore_errors=True)
                aside.rename(run_dir)
                print(f"xlt: the new run stopped before its first checkpoint: the earlier run is back at {run_dir}",
                      file=sys.stderr)
        raise
    if main and replacement.finished and aside.exists():
        shutil.rmtree(aside)
        print(f"--overwrite: deleted the replaced run ({aside})")
