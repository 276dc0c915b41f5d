"""Benchmark: how much of the square-GEMM peak the matrix products of one fine-tuning step can reach at all (issue 50).

``training_speed.py`` reports ``fraction_of_peak``: model FLOPs per second over the best rate of a 2048^3 matmul.
A fine-tuning step of xSID (batch 32, ~12 sub-tokens a sentence) multiplies much smaller matrices: (B·T x 384) by
(384 x 384) or (384 x 1536), and their transposes in the backward pass.  This script times exactly those products,
and nothing else, for one step of the encoder's layers: per layer the Q, K, V, output and two feed-forward linears
(forward ``X W^T + b``, backward ``dY W`` and ``dY^T X``: nn.Linear's three GEMMs) and the attention products
(Q K^T and A V, forward and both gradients; batched over sentences and heads), every layer with its own weights and
activations, as in training.  Their rate over the square peak is the ceiling of ``fraction_of_peak`` at that shape:
a step that spent no time outside these products would reach it and no more.

    python benchmarks/gemm_ceiling.py [--model multilingual-e5-small] [--batch-size 32] [--lengths 8 12 16 32 64 128]

Writes benchmarks/results/gemm-ceiling[-cuda].{json,md}.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobqueue import RESULTS, git_commit  # noqa: E402
from training_speed import call_times, gemm_peak  # noqa: E402

from xlt.core.loop import configure_threads  # noqa: E402


def significant(x: float, digits: int) -> float:
    """``x`` to ``digits`` significant figures: a tiny test model's rate stays above 0, which decimal places would
    round away on a loaded machine."""
    return float(f"{x:.{digits}g}")


def step_products(layers: int, hidden: int, intermediate: int, heads: int, batch: int, length: int,
                  device: str) -> tuple[Callable[[], None], float]:
    """A function that runs one training step's matrix products of the encoder's layers, and their FLOPs."""
    M, d = batch * length, hidden // heads
    linears = [(hidden, hidden)] * 4 + [(hidden, intermediate), (intermediate, hidden)]  # (in, out)
    g = torch.Generator(device="cpu").manual_seed(0)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g).to(device)

    per_layer = []
    for _ in range(layers):
        lin = [(rand(M, k), rand(n, k), rand(n), rand(M, n)) for k, n in linears]  # x, W, b, dY
        att = [rand(batch * heads, length, d) for _ in range(4)]  # q, k, v, d(out)
        per_layer.append((lin, att, rand(batch * heads, length, length)))
    flops = layers * (sum(3 * 2 * M * k * n for k, n in linears) + 2 * 3 * 2 * batch * heads * length * length * d)

    def run() -> None:
        for lin, (q, k, v, dout), probs in per_layer:
            for x, w, b, dy in lin:
                torch.addmm(b, x, w.t())  # forward
                dy @ w  # dX
                dy.t() @ x  # dW
            q @ k.transpose(1, 2)  # scores
            probs @ v  # context
            dout @ v.transpose(1, 2)  # d probs
            probs.transpose(1, 2) @ dout  # dV
            probs @ k  # dQ (d scores taken as probs' shape)
            probs.transpose(1, 2) @ q  # dK
    return run, float(flops)


def main(argv: list[str] | None = None, results: Path = RESULTS) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="multilingual-e5-small", help="zoo name or HF folder: its config's shape")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lengths", type=int, nargs="+", default=[8, 12, 16, 32, 64, 128],
                    help="padded sequence lengths (xSID en: ~12)")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    from transformers import AutoConfig

    from xlt import zoo

    c = AutoConfig.from_pretrained(str(zoo.resolve(args.model)))
    threads = configure_threads(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    peak = gemm_peak()
    rows = []
    for length in args.lengths:
        run, flops = step_products(c.num_hidden_layers, c.hidden_size, c.intermediate_size,
                                   c.num_attention_heads, args.batch_size, length, device)
        seconds = statistics.median(call_times(run, args.repeats))
        rows.append({"variant": "gemm_only", "task": "intent_slot", "precision": "fp32", "device": device,
                     "threads": threads, "batch_size": args.batch_size, "seq_len": length,
                     "tokens": args.batch_size * length, "flops": flops, "seconds_per_step": significant(seconds, 4),
                     "gflops_per_second": significant(flops / seconds / 1e9, 4),
                     "fraction_of_peak": significant(flops / seconds / peak, 3)})
        print(f"T={length}: {rows[-1]['gflops_per_second']} GFLOP/s, {rows[-1]['fraction_of_peak']:.1%} of peak",
              flush=True)
    name = "gemm-ceiling" + ("-cuda" if device == "cuda" else "")
    out = {"benchmark": "gemm-ceiling", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": f"{threads} CPU threads" if device == "cpu" else
           torch.cuda.get_device_name(), "model": args.model, "fp32_gemm_peak_flops": peak,
           "notes": "the matrix products of one fine-tuning step of the encoder's layers (6 linears x 3 GEMMs, "
                    "6 attention products, per layer; embeddings frozen), nothing else; median of "
                    f"{args.repeats} after a warm-up; peak = best 2048^3 (GPU: 8192^3) fp32 GEMM rate, as "
                    "training_speed.py's fraction_of_peak", "rows": rows}
    (results / f"{name}.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = ["| padded length | tokens | GFLOP/s | fraction of fp32 peak |", "|---|---|---|---|"]
    lines += [f"| {r['seq_len']} | {r['tokens']} | {r['gflops_per_second']} | {r['fraction_of_peak']} |"
              for r in rows]
    lines.append(f"\nfp32 GEMM peak {peak / 1e9:.1f} GFLOP/s; batch {args.batch_size}; {threads} threads")
    print("\n".join(lines))
    return out


if __name__ == "__main__":
    main()
