"""The fine-tuning recipe: a run config -> data, model and method -> the shared loop (``xlt.core.loop``).

Evaluation during training is on the SOURCE-language dev set (the task's selection metric, or
``train.select_metric``), sharded across processes; the best checkpoint is kept in ``RUN_DIR/best``.  Nothing here
knows a task or a method: they come from the run context.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from accelerate.utils import set_seed
from safetensors.torch import load_file

from xlt import zoo
from xlt.config import RunConfig, save_config
from xlt.core import checkpoint
from xlt.core.batching import collate, item_sentences, item_tokens, length_bucketed_batches, to_device
from xlt.core.run_folder import check_run_dir, replacing
from xlt.core.loop import LoopHooks, LoopSettings, configure_threads, make_accelerator, run_loop
from xlt.core.vocab import prepare_tokenizer
from xlt.pipeline import build_model, make_run, pad_id, prepare_data, save_run_meta
from xlt.predict import predict


def train(cfg: RunConfig, resume: bool = False, stop_after: int | None = None, overwrite: bool = False) -> Path:
    """Train (or resume) the run described by ``cfg``; returns the run directory.

    ``stop_after``: leave the loop after this many optimizer steps as if interrupted (used by tests);
    ``overwrite``: replace an existing run folder of that name, once everything is checked (``xlt.core.run_folder``:
    the old run is kept until this one finishes training)."""
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
    if cfg.train.compile:
        model.compile(dynamic=True)  # in place: state_dict keys (checkpoints) stay as they are
    pad = pad_id(tokenizer, data.trim)
    method.before_training(data, pad)
    with replacing(run_dir, overwrite, accelerator.is_main_process) as replacement:
        if accelerator.is_main_process:
            run_dir.mkdir(parents=True, exist_ok=True)
            save_config(cfg, run_dir / "config.yaml")
            save_run_meta(run_dir, data.labels, data.trim, dict(data.report, threads=threads))
        accelerator.wait_for_everyone()
        replacement.finished = _train_loop(cfg, ctx, method, data, model, pad, accelerator, resume, stop_after)
    return run_dir


def _train_loop(cfg: RunConfig, ctx, method, data, model, pad: int, accelerator, resume: bool,
                stop_after: int | None) -> bool:
    """Evaluation on the source dev set, checkpoints, the shared loop and the final choice of ``best/``; whether
    training finished (not stopped by ``stop_after``)."""
    run_dir = cfg.run_dir
    task, source = ctx.task, cfg.data.source_lang
    lengths = [len(e.input_ids) for e in data.train]

    def score(model, examples: list, items: list) -> dict:
        return task.score(examples, predict(model, task, data.labels, items, pad, cfg.train.eval_batch_size,
                                            accelerator.device, accelerator))

    def evaluate(model) -> tuple[dict, float]:
        dev = score(model, data.dev_examples, data.dev)
        metrics, value = {f"dev_{source}_{k}": v for k, v in dev.items()}, float(dev[ctx.select_metric])
        if data.target_dev:  # train.select=target_dev (not zero-shot): the mean over the labelled target dev sets
            target = {lang: score(model, *pair)[ctx.select_metric] for lang, pair in data.target_dev.items()}
            metrics |= {f"dev_{lang}_{ctx.select_metric}": v for lang, v in target.items()}
            value = metrics["dev_target_mean"] = sum(target.values()) / len(target)
        return metrics, value

    def keep_checkpoint(model, step: int) -> None:
        checkpoint.save_model(model, run_dir / "checkpoints" / f"step-{step}")
        if not cfg.train.keep_checkpoints:  # `average` needs only the last k
            for old in kept_checkpoints(run_dir)[:-cfg.train.average_last]:
                shutil.rmtree(old)

    hooks = LoopHooks(
        batches=lambda epoch: length_bucketed_batches(lengths, cfg.train.batch_size, cfg.train.bucket_size,
                                                      cfg.train.seed, epoch),
        make_batch=lambda idx, step: to_device(collate(task, [data.train[i] for i in idx], pad), accelerator.device),
        loss=method.loss, evaluate=evaluate,
        count=lambda idx: (sum(item_tokens(data.train[i]) for i in idx),
                           sum(item_sentences(data.train[i]) for i in idx)),
        after_evaluate=keep_checkpoint if cfg.train.select == "average" or cfg.train.keep_checkpoints else None)
    t = cfg.train
    settings = LoopSettings(t.max_steps, t.lr, t.weight_decay, t.warmup_ratio, t.grad_clip, t.eval_every,
                            t.patience, schedule=t.schedule)
    summary = run_loop(accelerator, model, settings, hooks, run_dir, resume, stop_after)
    if summary is not None and accelerator.is_main_process:
        summary |= select_final(cfg, model, run_dir, summary)
        (run_dir / "train_summary.json").write_text(json.dumps(summary, indent=1))
    accelerator.wait_for_everyone()
    return summary is not None


def kept_checkpoints(run_dir: Path) -> list[Path]:
    """``RUN_DIR/checkpoints/step-N`` folders, oldest first."""
    return sorted((run_dir / "checkpoints").glob("step-*"), key=lambda p: int(p.name.split("-")[1]))


def average_states(folders: list[Path]) -> dict[str, torch.Tensor]:
    """The uniform average of the floating-point weights saved in ``folders`` (other tensors: the last one's)."""
    states = [load_file(str(f / "model.safetensors")) for f in folders]
    return {k: (torch.stack([s[k] for s in states]).mean(0) if v.is_floating_point() else v)
            for k, v in states[-1].items()}


def select_final(cfg: RunConfig, model, run_dir: Path, summary: dict) -> dict:
    """``train.select`` last / average: write the chosen model over ``best/`` once training is over; returns what
    the train summary records of the choice."""
    t = cfg.train
    if t.select == "last":
        checkpoint.save_model(model, run_dir / "best")
        return {"select": t.select, "selected_steps": [summary["step"]]}
    if t.select == "average":
        folders = kept_checkpoints(run_dir)[-t.average_last:]
        averaged = average_states(folders)
        checkpoint.atomic_save(averaged, run_dir / "best")
        return {"select": t.select, "selected_steps": [int(f.name.split("-")[1]) for f in folders]}
    return {"select": t.select, "selected_steps": [summary["best_step"]]}


def clean_checkpoint(run_dir: Path) -> None:
    """Drop the resumable ``last`` checkpoint (optimizer state doubles the size) once a run is finished."""
    shutil.rmtree(run_dir / "last", ignore_errors=True)
