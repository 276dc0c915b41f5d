"""The one training loop, shared by fine-tuning (``xlt.finetune``) and pre-training stages (``xlt.stages``).

AdamW (no decay on biases and LayerNorm weights), linear warmup + decay, gradient clipping, evaluation every
``eval_every`` steps through a hook (best checkpoint kept, optional early stopping), a resumable checkpoint
(model, optimizer, scheduler, every process's RNG, position; safetensors + JSON) and a JSONL log line per
evaluation (the training loss and its named parts are means over the steps since the previous evaluation, on the
main process).  The batch order is a pure function of (seed, epoch) and the checkpoint holds the rest, so a resumed
run continues to the same result.

Several processes (``accelerate launch`` / ``torchrun``; gloo on CPU, NCCL on GPUs): ``batch_size`` is the GLOBAL
batch; each process takes its share of every global batch (``indices[rank::world]``) and DDP averages the
gradients, so the optimisation matches a single-process run with the same global batch.  Checkpoints and logs are
written once, by the main process.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from accelerate import Accelerator
from tqdm.auto import tqdm

from xlt.core import checkpoint
from xlt.core.precision import resolve_precision
from xlt.errors import XltError


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_model() -> str:
    """The CPU kind, e.g. "Intel(R) Xeon(R) Processor, family 6 model 207, avx512f", recorded with every run:
    float sums differ between CPU kernels, so one seed's numbers can differ in their last digits across kinds."""
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]
    except OSError:
        first = ""
    info = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines())}
    if "model name" not in info:
        import platform

        return platform.processor() or platform.machine()
    isa = next((f for f in ("avx512f", "avx2") if f in info.get("flags", "").split()), "")
    return ", ".join(x for x in (info["model name"], f"family {info.get('cpu family')} model {info.get('model')}",
                                 isa) if x)


def configure_threads(threads: int, processes: int = 1) -> int:
    """Use the cores this process may run on, shared among the processes of this machine (more threads than
    cores only adds contention: two 2-thread jobs on 2 cores ran 10x slower here)."""
    n = threads or max(1, len(os.sched_getaffinity(0)) // max(1, processes))
    torch.set_num_threads(n)
    return n


def linear_warmup_decay(warmup: int, total: int) -> Callable[[int], float]:
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))
    return factor


def inverse_sqrt(warmup: int) -> Callable[[int], float]:
    """Linear warmup to the peak, then decay with the inverse square root of the step (Vaswani et al. 2017;
    fairseq's ``inverse_sqrt``, the schedule of Unicoder's pre-training): factor sqrt(warmup / step) after it."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return (max(1, warmup) / (step + 1)) ** 0.5
    return factor


def warmup_then_scaled(warmup: int, scale: list[float]) -> Callable[[int], float]:
    """Linear warmup, then constant times ``scale[0]`` (halved in place by ``halve_on_plateau``)."""
    def factor(step: int) -> float:
        return scale[0] * min(1.0, (step + 1) / max(1, warmup))
    return factor


ACCELERATE_PRECISION = {"fp32": "no"}  # xlt's name -> accelerate's (a bare `no` in YAML reads as false)
XLT_PRECISION = {v: k for k, v in ACCELERATE_PRECISION.items()}


def make_accelerator(mixed_precision: str = "fp32", **kwargs) -> Accelerator:
    """The run's Accelerator.  Without CUDA it is told ``cpu=True``: only then does accelerate turn the environment
    of ``torchrun`` / ``accelerate launch`` into a gloo process group (otherwise every process would believe it is
    alone and train the whole batch).  ``mixed_precision``: "fp32", "bf16", "fp16" (CUDA only) or "auto"
    (``resolve_precision``)."""
    from xlt.core.attention import configure_cuda_attention

    cuda = torch.cuda.is_available()
    mixed_precision = resolve_precision(mixed_precision)
    configure_cuda_attention()  # cuDNN attention plans every new batch shape: see xlt/core/attention.py
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))  # set by torchrun / accelerate launch
    if cuda and local > torch.cuda.device_count():  # NCCL cannot put two processes on one GPU
        raise XltError(f"{local} processes on this machine but {torch.cuda.device_count()} GPU(s): start one process "
                       "per GPU, or hide the GPUs (CUDA_VISIBLE_DEVICES=) to train on the CPU with gloo")
    if mixed_precision == "fp16" and not cuda:
        raise XltError("mixed_precision=fp16 needs a CUDA GPU (CPU autocast supports bf16): use bf16 or fp32")
    if mixed_precision == "bf16" and cuda and not torch.cuda.is_bf16_supported():
        raise XltError(f"mixed_precision=bf16: {torch.cuda.get_device_name()} has no bf16; use fp16 or fp32")
    from accelerate.state import AcceleratorState

    mixed_precision = ACCELERATE_PRECISION.get(mixed_precision, mixed_precision)
    if AcceleratorState._shared_state.get("_mixed_precision", mixed_precision) != mixed_precision:
        # accelerate keeps one state per process and refuses another precision; a later run in the same process
        # (the Python API, tests) may ask for one.  The process group (PartialState) is kept.
        AcceleratorState._reset_state()
    return Accelerator(cpu=not cuda, mixed_precision=mixed_precision, **kwargs)


def progress_line(desc: str, record: dict) -> str:
    """One console line per evaluation: the step, the mean losses since the last one and the evaluation's numbers
    (samples and counts stay in metrics.jsonl)."""
    skip = {"step", "epoch", "improved", "peak_rss_mb", "selection_value"}
    parts = [f"{k} {v:.4g}" for k, v in record.items() if k not in skip and isinstance(v, (int, float))
             and not isinstance(v, bool) and not k.endswith("_n")]
    return f"[{desc}] step {record['step']}: " + ", ".join(parts) + (" (best so far)" if record["improved"] else "")


@dataclass
class LoopSettings:
    max_steps: int
    lr: float
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 100
    patience: int = 0  # stop after N evaluations without improvement (0 = never); halve_on_plateau: N in all
    desc: str = "train"
    schedule: str = "linear"  # halve_on_plateau (xlt.config.TrainConfig.schedule), inverse_sqrt (stages)


@dataclass
class LoopHooks:
    batches: Callable[[int], list[list[int]]]  # epoch -> the global batches of that epoch (index lists)
    make_batch: Callable[[list[int], int], dict]  # (this process's indices, step) -> a batch of CPU tensors
    loss: Callable[[torch.nn.Module, dict], dict]  # -> {"loss": scalar, other named parts}
    evaluate: Callable[[torch.nn.Module], tuple[dict, float]]  # -> (metrics to log, selection value; higher wins)
    count: Callable[[list[int]], tuple[int, int]]  # (sub-tokens, sentences) of a global batch
    save_best: Callable[[torch.nn.Module, Path], None] = checkpoint.save_model
    # (model, step) after each evaluation's checkpoint, main process only: keep the evaluated model (train.select)
    after_evaluate: Callable[[torch.nn.Module, int], None] | None = None


def run_loop(accelerator: Accelerator, model: torch.nn.Module, settings: LoopSettings, hooks: LoopHooks,
             out_dir: Path, resume: bool = False, stop_after: int | None = None) -> dict | None:
    """Train ``model`` (or resume from ``out_dir/last``); returns the summary, or None when ``stop_after`` optimizer
    steps were taken (a simulated interruption, for tests).  Writes ``out_dir/{best,last}/``, ``metrics.jsonl``."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]  # biases and LayerNorm weights are not decayed
    # fused: one kernel over all parameters; on 2 CPU cores the default (foreach) AdamW step over e5-small's 21M
    # trainable weights took 0.18 s against 0.014 s fused -- a third of a fine-tuning step
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": settings.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=settings.lr, fused=True)
    total = settings.max_steps
    warmup = int(settings.warmup_ratio * total)
    lr_scale = [1.0]
    schedules = {"halve_on_plateau": lambda: warmup_then_scaled(warmup, lr_scale),
                 "inverse_sqrt": lambda: inverse_sqrt(warmup), "linear": lambda: linear_warmup_decay(warmup, total)}
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedules[settings.schedule]())
    # the scheduler stays outside accelerate: it would step it once per process (our batch is global)
    model, optimizer = accelerator.prepare(model, optimizer)
    unwrapped = accelerator.unwrap_model(model)
    state = {"step": 0, "epoch": 0, "batch_in_epoch": 0, "best": None, "best_step": 0, "bad_evals": 0,
             "train_seconds": 0.0, "train_tokens": 0, "train_sentences": 0}
    if resume:
        state = checkpoint.load_training(out_dir / "last", unwrapped, optimizer, scheduler, accelerator.process_index)
        if accelerator.scaler is not None and "grad_scaler" in state:  # fp16: resume with the same loss scale
            accelerator.scaler.load_state_dict(state["grad_scaler"])
    lr_scale[0] = state.setdefault("lr_scale", 1.0)
    rank, world = accelerator.process_index, accelerator.num_processes
    bar = tqdm(total=total, initial=state["step"], disable=not accelerator.is_main_process, desc=settings.desc)
    on_cpu = accelerator.device.type == "cpu"
    model.train()
    stopped_early = False
    while state["step"] < total and not stopped_early:
        # a plain loop over index lists, not a DataLoader: creating a DataLoader iterator draws from the global RNG
        # and would break exact resumption
        batches = hooks.batches(state["epoch"])
        if len(batches) == 0:
            raise ValueError("an epoch without batches")
        for indices in batches[state["batch_in_epoch"]:]:
            mine = indices[rank::world]
            if not mine:  # a last batch smaller than the number of processes
                state["batch_in_epoch"] += 1
                continue
            t0 = time.perf_counter()  # collation counts as training time (as in a DataLoader-fed loop)
            batch = hooks.make_batch(mine, state["step"])
            with accelerator.autocast():  # a no-op unless mixed_precision; covers losses that bypass forward()
                parts = hooks.loss(model, batch)
            accelerator.backward(parts["loss"])
            if settings.grad_clip > 0:
                accelerator.clip_grad_norm_(model.parameters(), settings.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            state["train_seconds"] += time.perf_counter() - t0
            tokens, sentences = hooks.count(indices)
            state["train_tokens"] += tokens
            state["train_sentences"] = state.get("train_sentences", 0) + sentences
            state["step"] += 1
            state["batch_in_epoch"] += 1
            sums = state.setdefault("part_sums", {})  # means since the last evaluation go into the log
            for name, value in parts.items():
                total_count = sums.setdefault(name, [0.0, 0])
                # summed as a tensor and read once per evaluation: float() here would make the host wait for a
                # GPU every step instead of queuing the next one (the same float64 sums as Python's)
                total_count[0] = total_count[0] + value.detach().double()
                total_count[1] += 1
            bar.update(1)
            if on_cpu or state["step"] % 25 == 0:  # (reading the loss waits for a GPU too)
                bar.set_postfix(loss=f"{parts['loss'].item():.3f}")
            if state["step"] % settings.eval_every == 0 or state["step"] == total:
                stopped_early = _evaluate_and_checkpoint(accelerator, unwrapped, optimizer, scheduler, settings,
                                                         hooks, state, out_dir)
                lr_scale[0] = state["lr_scale"]
            if state["step"] >= total or stopped_early or (stop_after and state["step"] >= stop_after):
                break
        if stop_after and state["step"] >= stop_after:
            bar.close()
            return None
        if state["step"] < total and not stopped_early:
            state["epoch"] += 1
            state["batch_in_epoch"] = 0
    bar.close()
    summary = {k: state.get(k) for k in ("step", "epoch", "best", "best_step", "train_seconds", "train_tokens",
                                         "train_sentences")}
    summary.update(stopped_early=stopped_early, tokens_per_second=state["train_tokens"] /
                   max(state["train_seconds"], 1e-9), seconds_per_step=state["train_seconds"] /
                   max(state["step"], 1), peak_rss_mb=peak_rss_mb(), threads=torch.get_num_threads(),
                   processes=world, device=str(accelerator.device), cpu=cpu_model(),
                   mixed_precision=XLT_PRECISION.get(accelerator.mixed_precision, accelerator.mixed_precision))
    return summary


def _evaluate_and_checkpoint(accelerator: Accelerator, model, optimizer, scheduler, settings: LoopSettings,
                             hooks: LoopHooks, state: dict, out_dir: Path) -> bool:
    """Evaluate (every process, each on its shard), keep the best model, write the resumable checkpoint and the
    log line (main process); True = stop early."""
    metrics, value = hooks.evaluate(model)
    improved = state["best"] is None or value > state["best"]
    halving = settings.schedule == "halve_on_plateau"
    if improved:
        state.update(best=value, best_step=state["step"], bad_evals=state["bad_evals"] if halving else 0)
    else:
        state["bad_evals"] += 1
        if halving:  # cancel the interval: back to the best model, half the learning rate
            accelerator.wait_for_everyone()
            checkpoint.load_model_state(model, out_dir / "best")
            state["lr_scale"] = state.get("lr_scale", 1.0) / 2
            metrics = {**metrics, "restored_best_from_step": state["best_step"], "lr_scale": state["lr_scale"]}
    stop = settings.patience > 0 and state["bad_evals"] >= settings.patience
    means = {k: float(total) / count for k, (total, count) in state.get("part_sums", {}).items()}
    state["part_sums"] = {}  # (before the checkpoint: a resumed run starts the next window afresh)
    if accelerator.scaler is not None:
        state["grad_scaler"] = accelerator.scaler.state_dict()
    # every process's generators: dropout on a GPU draws from its CUDA generator, on a CPU from torch's
    rng_states = [torch.get_rng_state()]
    cuda_rng_states = [torch.cuda.get_rng_state(accelerator.device)] if accelerator.device.type == "cuda" \
        else None
    if accelerator.num_processes > 1:
        from accelerate.utils import gather_object

        rng_states = gather_object(rng_states)
        cuda_rng_states = gather_object(cuda_rng_states) if cuda_rng_states is not None else None
    if accelerator.is_main_process:
        record = {"step": state["step"], "epoch": state["epoch"], "lr": scheduler.get_last_lr()[0],
                  **means, **metrics,
                  "selection_value": value, "improved": improved,
                  "tokens_per_second": state["train_tokens"] / max(state["train_seconds"], 1e-9),
                  "peak_rss_mb": peak_rss_mb()}
        if improved:
            hooks.save_best(model, out_dir / "best")
        if hooks.after_evaluate is not None:  # before `last`: a resumed run never misses one
            hooks.after_evaluate(model, state["step"])
        checkpoint.save_training(out_dir / "last", model, optimizer, scheduler, dict(state), rng_states,
                                 cuda_rng_states)
        with open(out_dir / "metrics.jsonl", "a") as f:  # after the checkpoint: a resumed run never logs twice
            f.write(json.dumps(record) + "\n")
        tqdm.write(progress_line(settings.desc, record), file=sys.stderr)  # beside the bar; stdout stays data
    accelerator.wait_for_everyone()
    return stop
