"""Where a training step's time goes, on whatever device this machine has (issue 50's GPU gap, issue 49's TALL
scale step): torch.profiler over a few fine-tuning steps (xsid-zero-shot), and wall-clock timers (synchronised) around
the parts of a TALL back-translation step (greedy decoding, turning its output into encoder input, the rest), and
the host's collation of fine-tuning batches alone (xSID en, length-bucketed as in training).

    python benchmarks/profile_steps.py --data-dir DATA [--batch-size 512] [--precision bf16] [--tall-batch 320]
    python benchmarks/profile_steps.py --data-dir DATA --only collate --batch-size 32

Prints tables; writes nothing else.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict

import torch

TIMES: dict[str, list[float]] = defaultdict(list)


def timed(name: str, fn):
    def wrapper(*a, **k):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn(*a, **k)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        TIMES[name].append(time.perf_counter() - t0)
        return out
    return wrapper


def profile_finetune(data_dir: str, batch: int, precision: str, steps: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    from xlt.config import find_config, load_config
    from xlt.finetune import train

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with tempfile.TemporaryDirectory() as out:
        cfg = load_config(find_config("xsid-zero-shot"), [
            f"data.data_dir={data_dir}", f"train.batch_size={batch}", f"train.max_steps={steps}",
            f"train.eval_every={steps}", "data.eval_langs=[en]", f"train.mixed_precision={precision}",
            f"output_dir={out}", "name=profile"])
        with profile(activities=acts) as prof:
            t0 = time.perf_counter()
            train(cfg)
            wall = time.perf_counter() - t0
    print(f"fine-tune {steps} steps at batch {batch} ({precision}): {wall:.1f} s with setup and the final evaluation")
    key = "self_cuda_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=50))
    print(prof.key_averages().table(sort_by=key, row_limit=15, max_name_column_width=50))


def time_collation(data_dir: str, batch: int, batches: int = 40) -> None:
    """Milliseconds the host spends turning encoded items into one batch of tensors (no model, no device)."""
    from xlt.config import find_config, load_config
    from xlt.core.batching import collate, length_bucketed_batches
    from xlt.finetune import Run
    from xlt.trained import pad_id

    with tempfile.TemporaryDirectory() as out:
        cfg = load_config(find_config("xsid-zero-shot"), [f"data.data_dir={data_dir}", f"output_dir={out}"])
        run = Run.from_config(cfg)
        ctx, data = run.ctx, run.data()
    pad = pad_id(ctx.tokenizer, data.trim)
    order = length_bucketed_batches([len(e.input_ids) for e in data.train], batch, cfg.train.bucket_size, 1, 0)
    order = order[:batches]
    t0 = time.perf_counter()
    for indices in order:
        collate(ctx.task, [data.train[i] for i in indices], pad)
    ms = (time.perf_counter() - t0) / len(order) * 1000
    print(f"collation at batch {batch}: {ms:.2f} ms a batch ({len(order)} batches, {ms / batch * 1000:.1f} us an item)")


def profile_tall(data_dir: str, batch: int, precision: str, steps: int) -> None:
    from xlt.config import find_config, load_stage_config
    from xlt.losses import seq2seq
    from xlt.stages import run_stage

    seq2seq.greedy_decode = timed("greedy_decode", seq2seq.greedy_decode)
    seq2seq.sentences_from_generation = timed("sentences_from_generation", seq2seq.sentences_from_generation)
    seq2seq.BackTranslation.forward = timed("bt_step_forward", seq2seq.BackTranslation.forward)
    seq2seq.DenoisingAutoEncoder.forward = timed("dae_step_forward", seq2seq.DenoisingAutoEncoder.forward)
    with tempfile.TemporaryDirectory() as out:
        cfg = load_stage_config(find_config("pretrain-tall-en-ja"), [
            f"corpus.data_dir={data_dir}", f"output_dir={out}", "name=profile", f"mixed_precision={precision}",
            "phases.0.steps=2", "phases.0.eval_every=1000", f"phases.1.steps={steps}", "phases.1.eval_every=1000",
            f"phases.0.batch_size={batch}", f"phases.1.batch_size={batch}", "options.reference_sentences=8",
            "corpus.heldout_lines=4"])
        t0 = time.perf_counter()
        run_stage(cfg)
        print(f"tall: 2 + {steps} steps at batch {batch} ({precision}): {time.perf_counter() - t0:.1f} s with setup")
    for name, values in TIMES.items():
        print(f"{name:28} calls {len(values):4}  total {sum(values):7.2f} s  mean {sum(values) / len(values):.4f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--tall-batch", type=int, default=320)
    ap.add_argument("--tall-steps", type=int, default=6)
    ap.add_argument("--only", choices=["finetune", "tall", "collate"])
    args = ap.parse_args()
    if args.only == "collate":
        time_collation(args.data_dir, args.batch_size)
        return
    if args.only != "tall":
        profile_finetune(args.data_dir, args.batch_size, args.precision, args.steps)
    if args.only != "finetune":
        profile_tall(args.data_dir, args.tall_batch, args.precision, args.tall_steps)


if __name__ == "__main__":
    main()
