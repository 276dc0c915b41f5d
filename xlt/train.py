"""The fine-tuning recipe: a run config -> data, model and method -> the shared loop (``xlt.core.loop``).

Evaluation during training is on the SOURCE-language dev set (the task's selection metric, or
``train.select_metric``), sharded across processes; the best checkpoint is kept in ``RUN_DIR/best``.  Nothing here
knows a task or a method: they come from the run context.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from accelerate.utils import set_seed

from xlt import zoo
from xlt.config import RunConfig, save_config
from xlt.core.batching import collate, item_sentences, item_tokens, length_bucketed_batches, to_device
from xlt.core.loop import LoopHooks, LoopSettings, configure_threads, make_accelerator, run_loop
from xlt.core.vocab import prepare_tokenizer
from xlt.errors import XltError
from xlt.pipeline import build_model, make_run, pad_id, prepare_data, save_run_meta
from xlt.predict import predict


def check_run_dir(run_dir: Path, resume: bool, overwrite: bool = False, main: bool = True) -> bool:
    """Whether the run continues from ``RUN_DIR/last``.  ``overwrite`` deletes an existing run folder first; a
    ``resume`` of a run that died before its first checkpoint (no ``last``, never finished) starts it afresh.
    ``main``: this is the main process (the only one that deletes or speaks)."""
    if overwrite and resume:
        raise XltError("--resume and --overwrite contradict each other: pass one")
    if overwrite and run_dir.exists():
        if not (run_dir / "config.yaml").exists() and any(run_dir.iterdir()):
            raise XltError(f"{run_dir} holds files but no run (no config.yaml): not deleting it; choose another "
                           "name (name=...) / output_dir")
        if main:
            shutil.rmtree(run_dir)
            print(f"--overwrite: deleted the run folder {run_dir}")
        return False
    if run_dir.exists() and any(run_dir.iterdir()) and not resume:
        raise XltError(f"{run_dir} already holds a run: pass --resume to continue it (a run that died before its "
                       "first checkpoint starts afresh), --overwrite to delete it and start over, or choose another "
                       "name (name=...) / output_dir")
    if not resume or (run_dir / "last").exists():
        return resume
    if (run_dir / "train_summary.json").exists() or (run_dir / "best").exists():
        raise XltError(f"{run_dir / 'last'}: nothing to resume (the run {'finished' if (run_dir / 'train_summary.json').exists() else 'has a best checkpoint but no resumable one'}); "
                       "pass --overwrite to train it again, or choose another name (name=...)")
    if main:
        print(f"--resume: {run_dir} has no checkpoint yet (the run stopped before its first one): starting it afresh")
    return False


def train(cfg: RunConfig, resume: bool = False, stop_after: int | None = None, overwrite: bool = False) -> Path:
    """Train (or resume) the run described by ``cfg``; returns the run directory.

    ``stop_after``: leave the loop after this many optimizer steps as if interrupted (used by tests);
    ``overwrite``: delete an existing run folder of that name first."""
    run_dir = cfg.run_dir
    accelerator = make_accelerator(cfg.train.mixed_precision)
    resume = check_run_dir(run_dir, resume, overwrite, accelerator.is_main_process)
    accelerator.wait_for_everyone()
    threads = configure_threads(cfg.train.threads, accelerator.num_processes)
    set_seed(cfg.train.seed)
    ctx, method = make_run(cfg)
    ctx.tokenizer = prepare_tokenizer(zoo.load_tokenizer(zoo.resolve(cfg.model.name)))
    data = prepare_data(ctx, method)
    model, tokenizer = build_model(ctx, method, data.labels, data.trim)
    pad = pad_id(tokenizer, data.trim)
    method.before_training(data, pad)
    if accelerator.is_main_process:
        run_dir.mkdir(parents=True, exist_ok=True)
        save_config(cfg, run_dir / "config.yaml")
        save_run_meta(run_dir, data.labels, data.trim, dict(data.report, threads=threads))
    accelerator.wait_for_everyone()

    task, source = ctx.task, cfg.data.source_lang
    lengths = [len(e.input_ids) for e in data.train]

    def evaluate(model) -> tuple[dict, float]:
        preds = predict(model, task, data.labels, data.dev, pad, cfg.train.eval_batch_size, accelerator.device,
                        accelerator)
        dev = task.score(data.dev_examples, preds)
        return {f"dev_{source}_{k}": v for k, v in dev.items()}, float(dev[ctx.select_metric])

    hooks = LoopHooks(
        batches=lambda epoch: length_bucketed_batches(lengths, cfg.train.batch_size, cfg.train.bucket_size,
                                                      cfg.train.seed, epoch),
        make_batch=lambda idx, step: to_device(collate(task, [data.train[i] for i in idx], pad), accelerator.device),
        loss=method.loss, evaluate=evaluate,
        count=lambda idx: (sum(item_tokens(data.train[i]) for i in idx),
                           sum(item_sentences(data.train[i]) for i in idx)))
    t = cfg.train
    settings = LoopSettings(t.max_steps, t.lr, t.weight_decay, t.warmup_ratio, t.grad_clip, t.eval_every,
                            t.patience, schedule=t.schedule)
    summary = run_loop(accelerator, model, settings, hooks, run_dir, resume, stop_after)
    if summary is not None and accelerator.is_main_process:
        (run_dir / "train_summary.json").write_text(json.dumps(summary, indent=1))
    accelerator.wait_for_everyone()
    return run_dir


def clean_checkpoint(run_dir: Path) -> None:
    """Drop the resumable ``last`` checkpoint (optimizer state doubles the size) once a run is finished."""
    shutil.rmtree(run_dir / "last", ignore_errors=True)
