"""The training recipe: one explicit loop on ``accelerate`` (CPU, one GPU or DDP with the same code).

AdamW, linear warmup + decay, gradient clipping, length-bucketed dynamic padding, evaluation on the SOURCE-language
dev set every ``eval_every`` steps (best checkpoint kept, optional early stopping), seeded and resumable: the batch
order is a pure function of (seed, epoch) and the checkpoint holds model, optimizer, scheduler, RNG and position,
so ``--resume`` continues an interrupted run to the same result.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import time
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from tqdm.auto import tqdm

from xlt import checkpoint
from xlt.config import RunConfig, save_config
from xlt.features import collate, length_bucketed_batches
from xlt.methods import get_method
from xlt.metrics import score, selection_value
from xlt.pipeline import build_model, pad_id, prepare_data, save_run_meta
from xlt.predict import predict


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def configure_threads(threads: int) -> int:
    """Use every core this process may run on (2 here); more threads than cores only adds contention."""
    n = threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(n)
    return n


def _linear_warmup_decay(warmup: int, total: int):
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))
    return factor


def train(cfg: RunConfig, resume: bool = False, stop_after: int | None = None) -> Path:
    """Train (or resume) the run described by ``cfg``; returns the run directory.

    ``stop_after``: leave the loop after this many optimizer steps as if interrupted (used by tests)."""
    run_dir = cfg.run_dir
    last_dir = run_dir / "last"
    if run_dir.exists() and any(run_dir.iterdir()) and not resume:
        raise FileExistsError(f"{run_dir} already holds a run: pass --resume to continue it, or choose another "
                              "name (name=...) / output_dir")
    if resume and not last_dir.exists():
        raise FileNotFoundError(f"{last_dir}: nothing to resume")
    accelerator = Accelerator()
    threads = configure_threads(cfg.train.threads)
    set_seed(cfg.train.seed)
    method = get_method(cfg.train.method)

    from xlt import zoo  # tokenizer first: data encoding needs it, the model needs the label set

    tokenizer = zoo.load_tokenizer(zoo.resolve(cfg.model.name))
    from xlt.features import prepare_tokenizer
    data = prepare_data(cfg, prepare_tokenizer(tokenizer))
    model, tokenizer = build_model(cfg, data.labels, data.trim)
    pad = pad_id(tokenizer, data.trim)
    if method.before_training is not None:  # e.g. self-teaching: the teacher's soft labels for every example
        method.before_training(cfg, data, pad, run_dir)
    if accelerator.is_main_process:
        run_dir.mkdir(parents=True, exist_ok=True)
        save_config(cfg, run_dir / "config.yaml")
        save_run_meta(run_dir, data.labels, data.trim, dict(data.report, threads=threads))

    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]  # biases and LayerNorm weights are not decayed
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.train.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=cfg.train.lr)
    total = cfg.train.max_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, _linear_warmup_decay(int(cfg.train.warmup_ratio * total), total))
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)

    state = {"step": 0, "epoch": 0, "batch_in_epoch": 0, "best": None, "best_step": 0, "bad_evals": 0,
             "train_seconds": 0.0, "train_tokens": 0, "train_sentences": 0}
    if resume:
        state = checkpoint.load_training(last_dir, accelerator.unwrap_model(model), optimizer, scheduler)
    lengths = [len(e.input_ids) for e in data.train]
    log_path = run_dir / "metrics.jsonl"
    bar = tqdm(total=total, initial=state["step"], disable=not accelerator.is_main_process, desc="train")
    model.train()
    stopped_early = False
    while state["step"] < total and not stopped_early:
        batches = length_bucketed_batches(lengths, cfg.train.batch_size, cfg.train.bucket_size, cfg.train.seed,
                                          state["epoch"])
        # Each process takes every num_processes-th batch (DDP); a plain loop over index lists, not a DataLoader,
        # because creating a DataLoader iterator draws from the global RNG and would break exact resumption.
        n_usable = len(batches) // accelerator.num_processes * accelerator.num_processes
        mine = batches[accelerator.process_index:n_usable:accelerator.num_processes]
        for indices in mine[state["batch_in_epoch"]:]:
            batch = {k: v.to(accelerator.device) for k, v in collate([data.train[i] for i in indices], pad).items()}
            t0 = time.perf_counter()
            parts = method.loss(model, batch, cfg.options)
            accelerator.backward(parts["loss"])
            if cfg.train.grad_clip > 0:
                accelerator.clip_grad_norm_(model.parameters(), cfg.train.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            state["train_seconds"] += time.perf_counter() - t0
            # paired methods process the translation too: count both sides (compute-matched comparisons)
            state["train_tokens"] += int(batch["attention_mask"].sum()) + int(
                batch["pair_attention_mask"].sum() if "pair_attention_mask" in batch else 0)
            state["train_sentences"] = state.get("train_sentences", 0) + len(indices) * (
                2 if "pair_input_ids" in batch else 1)
            state["step"] += 1
            state["batch_in_epoch"] += 1
            bar.update(1)
            bar.set_postfix(loss=f"{parts['loss'].item():.3f}")
            if state["step"] % cfg.train.eval_every == 0 or state["step"] == total:
                stopped_early = _evaluate_and_checkpoint(cfg, accelerator, model, optimizer, scheduler, data, pad,
                                                         state, parts, log_path)
            if state["step"] >= total or stopped_early or (stop_after and state["step"] >= stop_after):
                break
        if stop_after and state["step"] >= stop_after:
            bar.close()
            return run_dir
        if state["step"] < total and not stopped_early:
            state["epoch"] += 1
            state["batch_in_epoch"] = 0
    bar.close()
    if accelerator.is_main_process:
        summary = {k: state.get(k) for k in ("step", "epoch", "best", "best_step", "train_seconds", "train_tokens",
                                             "train_sentences")}
        summary.update(stopped_early=stopped_early, tokens_per_second=state["train_tokens"] /
                       max(state["train_seconds"], 1e-9), seconds_per_step=state["train_seconds"] /
                       max(state["step"], 1), peak_rss_mb=peak_rss_mb(), threads=threads,
                       device=str(accelerator.device))
        (run_dir / "train_summary.json").write_text(json.dumps(summary, indent=1))
    return run_dir


def _evaluate_and_checkpoint(cfg, accelerator, model, optimizer, scheduler, data, pad, state, parts,
                             log_path: Path) -> bool:
    """Evaluate on the source dev set, keep the best model, write the resumable checkpoint; True = stop early."""
    unwrapped = accelerator.unwrap_model(model)
    intents, slots, _ = predict(unwrapped, data.dev, data.labels, pad, cfg.train.eval_batch_size,
                                accelerator.device)
    dev = score([u.intent for u in data.dev_rows], [u.slots for u in data.dev_rows], intents, slots)
    value = selection_value(dev, cfg.train.select_metric)
    improved = state["best"] is None or value > state["best"]
    if improved:
        state.update(best=value, best_step=state["step"], bad_evals=0)
    else:
        state["bad_evals"] += 1
    stop = cfg.train.patience > 0 and state["bad_evals"] >= cfg.train.patience
    if accelerator.is_main_process:
        record = {"step": state["step"], "epoch": state["epoch"], "lr": scheduler.get_last_lr()[0],
                  **{k: float(v.detach()) for k, v in parts.items()},
                  **{f"dev_{cfg.data.source_lang}_{k}": v for k, v in dev.items()},
                  "selection_value": value, "improved": improved,
                  "tokens_per_second": state["train_tokens"] / max(state["train_seconds"], 1e-9),
                  "peak_rss_mb": peak_rss_mb()}
        if improved:
            checkpoint.save_model(unwrapped, cfg.run_dir / "best")
        checkpoint.save_training(cfg.run_dir / "last", unwrapped, optimizer, scheduler, dict(state))
        with open(log_path, "a") as f:  # after the checkpoint: a resumed run never logs a step twice
            f.write(json.dumps(record) + "\n")
    accelerator.wait_for_everyone()
    return stop


def clean_checkpoint(run_dir: Path) -> None:
    """Drop the resumable ``last`` checkpoint (optimizer state doubles the size) once a run is finished."""
    shutil.rmtree(run_dir / "last", ignore_errors=True)
