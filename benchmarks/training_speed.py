"""Benchmark: fine-tuning speed of xlt against the plain Hugging Face Trainer, side by side in one process (issue 50).

Both train the same encoder with the same two heads (intent: a linear layer on the mean-pooled states; slots: a
linear layer on each word's first sub-token, as xlt's intent + slot task) on the same xSID English sentences, batch
size and number of steps, input embeddings frozen in both (xlt's default), AdamW at the same learning rate:

- ``hf_trainer``: ``transformers.Trainer`` with its ordinary settings for this (dynamic padding by the collator,
  ``train_sampling_strategy="group_by_length"`` (``group_by_length`` in older transformers), no evaluation, no
  saving), its ``train_runtime``;
- ``xlt``: ``xlt.finetune.train`` on the shipped ``xsid-zero-shot`` config (length-bucketed batches, trimmed
  vocabulary), evaluating once at the end (not timed): the loop's own clock, collation included.

On a GPU the HF peers run with PyTorch's default attention backends (cuDNN attention preferred on Hopper), xlt
with cuDNN attention turned off (``xlt/core/attention.py``).  Tokens are the non-padding sub-tokens each trained on.
The device's peak is measured with square GEMMs (in the run's precision), and each variant's model FLOPs per token
are 6 x (parameters of the layers) + 12 x layers x hidden x (mean padded length) for attention (forward + backward;
Kaplan et al. 2020's estimate), so ``fraction_of_peak`` is what share of that peak the training reaches (frozen
embeddings need no weight gradient; heads are negligible).

``*_no_attention_dropout``: the same runs with the encoder's attention-probability dropout at 0
(``model.attention_dropout=0``; the HF peer's config likewise), the other dropouts unchanged.  On a CPU PyTorch's
SDPA runs its fused flash kernel only without dropout and falls back to the unfused math kernel with it, so this is
the price of attention dropout, paid alike by both trainers (``--no-attention-dropout-rows`` skips them).

Continued MLM likewise: xlt's ``pretrain-mlm-ja`` stage (its all-parameters phase, timed) against a plain
``transformers`` MLM Trainer (``AutoModelForMaskedLM`` + ``DataCollatorForLanguageModeling``) on the same token
sequences, batch size, steps and learning rate.

    python benchmarks/training_speed.py --data-dir ../shared/data [--steps 100] [--batch-size 32]

Writes benchmarks/results/training-speed[-cuda][-bBATCH][-PRECISION[-compile]].{json,md} (the parts that differ
from CPU, batch 32, fp32, eager).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobqueue import RESULTS, git_commit  # noqa: E402

from hf_peer import hf_rows, run_hf, run_hf_mlm  # noqa: E402

from xlt.core.loop import configure_threads, peak_rss_mb  # noqa: E402


def call_times(run: Callable[[], None], repeats: int) -> list[float]:
    """Seconds of each of ``repeats`` calls of ``run``, after one warm-up call (a GPU synchronised after each)."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    run()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t0)
    return times


def gemm_peak(n: int = 2048, repeats: int = 10, dtype: torch.dtype = torch.float32) -> float:
    """The best matmul rate of this machine's training device, FLOP/s (n x n by n x n; on a GPU n = 8192, timed
    with synchronisation, at the default fp32 matmul precision, i.e. without TF32 unless the user enabled it)."""
    cuda = torch.cuda.is_available()
    n = 8192 if cuda else n
    a, b = (torch.randn(n, n, device="cuda" if cuda else "cpu", dtype=dtype) for _ in range(2))
    return 2 * n ** 3 / min(call_times(lambda: a @ b, repeats))


def flops_per_token(encoder, mean_length: float) -> float:
    """Forward + backward FLOPs per token of the encoder's layers (embeddings frozen)."""
    c = encoder.config
    layer_params = sum(p.numel() for n, p in encoder.named_parameters() if "embeddings" not in n)
    return 6 * layer_params + 12 * c.num_hidden_layers * c.hidden_size * mean_length


def run_xlt_mlm(overrides: list[str]) -> tuple[dict, list[list[int]], Path, float]:
    """xlt's continued-MLM stage: a 1-step head phase, then the timed all-parameters phase.  Also returns the
    corpus's training sequences (full vocabulary) for the peer, the model folder and the phase's learning rate."""
    from xlt import zoo
    from xlt.config import find_config, load_stage_config
    from xlt.core.vocab import prepare_tokenizer
    from xlt.data.corpora import load_corpus
    from xlt.stages import run_stage

    with tempfile.TemporaryDirectory() as out:
        cfg = load_stage_config(find_config("pretrain-mlm-ja"), [*overrides, f"output_dir={out}", "name=mlm-speed"])
        folder = zoo.resolve(cfg.model.name)
        tokenizer = prepare_tokenizer(zoo.load_tokenizer(folder))
        corpus = load_corpus(cfg.corpus, tokenizer, folder / "tokenizer.json", zoo.xlt_home() / "corpora")
        run_stage(cfg)
        summary = json.loads((cfg.run_dir / "phase2-all" / "summary.json").read_text())
    return ({"seconds": summary["train_seconds"], "tokens": summary["train_tokens"]}, corpus.train, folder,
            cfg.phases[1].lr)


def run_xlt(config: str, overrides: list[str]) -> dict:
    from xlt.config import find_config, load_config
    from xlt.finetune import train

    with tempfile.TemporaryDirectory() as out:
        cfg = load_config(find_config(config), [*overrides, f"output_dir={out}", "name=speed"])
        summary = json.loads((train(cfg) / "train_summary.json").read_text())
        log = [json.loads(x) for x in (cfg.run_dir / "metrics.jsonl").read_text().splitlines()]
    return {"seconds": summary["train_seconds"], "tokens": summary["train_tokens"], "log": log[-1]}


def main(argv: list[str] | None = None, model: str = "multilingual-e5-small", config: str = "xsid-zero-shot",
         extra: list[str] | None = None, results: Path = RESULTS, mlm_extra: list[str] | None = None) -> dict:
    """``model`` / ``config`` / ``extra`` overrides / ``results`` folder: the smoke test's tiny model."""
    from xlt import zoo
    from xlt.config import find_config, load_config
    from xlt.finetune import Run
    from xlt.trained import pad_id

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--mlm-steps", type=int, default=30, help="steps of each MLM trainer, 0: no MLM rows (the HF "
                    "head scores every "
                    "position over the full vocabulary: seconds per step on a CPU)")
    ap.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                    help="autocast of both trainers (xlt: train.mixed_precision; HF: bf16 / fp16)")
    ap.add_argument("--compile", action="store_true", help="torch.compile in both (xlt: train.compile; HF: "
                    "torch_compile)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-attention-dropout-rows", action="store_true", help="skip the rows without attention dropout "
                    "(model.attention_dropout=0; the HF peer's config likewise): two fine-tuning rows, one MLM row")
    args = ap.parse_args(argv)
    threads = configure_threads(0)
    common = [f"data.data_dir={args.data_dir}", f"model.name={model}", f"train.batch_size={args.batch_size}",
              f"train.max_steps={args.steps}", f"train.eval_every={args.steps}", f"train.seed={args.seed}",
              "data.eval_langs=[en]", f"train.mixed_precision={args.precision}",
              f"train.compile={str(args.compile).lower()}", *(extra or [])]
    # the Trainer's data: the same sentences, encoded by xlt over the full vocabulary
    cfg = load_config(find_config(config), [*common, "model.trim_vocab=false"])
    run = Run.from_config(cfg)
    ctx, folder = run.ctx, zoo.resolve(cfg.model.name)
    data = run.data()
    rows = hf_rows(data.train, data.labels)
    peak = gemm_peak()
    # autocast runs the matmuls in bf16 / fp16: the fraction of peak of those rows is against that dtype's peak
    peak_autocast = peak if args.precision == "fp32" else gemm_peak(dtype=getattr(torch, {"bf16": "bfloat16"}.get(
        args.precision, "float16")))
    measured = []
    run_peer = partial(run_hf, folder, rows, len(data.labels["intents"]), len(data.labels["slots"]),
                       pad_id(ctx.tokenizer, None), args.steps, args.batch_size, cfg.train.lr, args.seed,
                       args.precision, args.compile)
    hf = run_peer()
    encoder = hf.pop("encoder")
    per_token = {"intent_slot": flops_per_token(encoder, hf["mean_padded_length"])}
    measured.append(("hf_trainer", hf, peak_rss_mb()))
    measured.append(("xlt", run_xlt(config, common), peak_rss_mb()))
    if not args.no_attention_dropout_rows:
        # the same pair without attention-probability dropout: on a CPU, SDPA with dropout > 0 takes PyTorch's
        # unfused math kernel, with 0 its fused flash kernel; the Trainer gets the same change, so the pair is fair
        hf0 = run_peer(attention_dropout=0.0)
        hf0.pop("encoder")
        measured.append(("hf_trainer_no_attention_dropout", hf0, peak_rss_mb()))
        measured.append(("xlt_no_attention_dropout", run_xlt(config, [*common, "model.attention_dropout=0"]),
                         peak_rss_mb()))
    if args.mlm_steps:
        mlm = [f"corpus.data_dir={args.data_dir}", f"model.name={model}", "phases.0.steps=1", "phases.0.eval_every=1",
               f"mixed_precision={args.precision}",
               f"phases.1.steps={args.mlm_steps}", f"phases.1.eval_every={args.mlm_steps}",
               f"phases.1.batch_size={args.batch_size}", "options.eval_sequences=8", "options.pppl_sequences=2",
               *(mlm_extra or [])]
        xlt_mlm, sequences, mlm_folder, mlm_lr = run_xlt_mlm(mlm)
        # the MLM rows: the encoder's layers only (the output layer's cost depends on how many positions and
        # vocabulary rows a trainer scores: xlt the masked ones over the corpus's kept ids, the HF head every position)
        per_token["mlm"] = flops_per_token(encoder, sum(map(len, sequences)) / len(sequences))
        measured.append(("xlt_mlm", xlt_mlm, peak_rss_mb()))
        if not args.no_attention_dropout_rows:  # xlt's side only: the HF MLM peer is minutes a run on a CPU
            measured.append(("xlt_mlm_no_attention_dropout", run_xlt_mlm([*mlm, "model.attention_dropout=0"])[0],
                             peak_rss_mb()))
        measured.append(("hf_trainer_mlm", run_hf_mlm(mlm_folder, sequences, args.mlm_steps, args.batch_size, mlm_lr,
                                                      args.seed, args.precision), peak_rss_mb()))
    rows_out = []
    for variant, r, rss in measured:
        tps, task = r["tokens"] / r["seconds"], "mlm" if "mlm" in variant.split("_") else "intent_slot"
        steps = args.mlm_steps if task == "mlm" else args.steps
        rows_out.append({"variant": variant, "task": task, "precision": args.precision,
                         "compile": args.compile and task != "mlm",
                         "device": "cuda" if torch.cuda.is_available() else "cpu",
                         "threads": threads, "steps": steps, "batch_size": args.batch_size,
                         "tokens": r["tokens"], "tokens_per_second": round(tps, 1),
                         "seconds_per_step": round(r["seconds"] / steps, 4),
                         "flops_per_token": per_token[task],
                         "fraction_of_peak": round(tps * per_token[task] / peak_autocast, 3),
                         "peak_rss_mb": round(rss),
                         **({"dev_en_intent_slot_mean": round(r["log"]["dev_en_intent_slot_mean"], 4)}
                            if "dev_en_intent_slot_mean" in r.get("log", {}) else {})})
    tps = {r["variant"]: r["tokens_per_second"] for r in rows_out}
    speedup = tps["xlt"] / tps["hf_trainer"]
    mlm_speedup = tps["xlt_mlm"] / tps["hf_trainer_mlm"] if args.mlm_steps else None
    out = {"benchmark": "training-speed", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": f"{threads} CPU threads" if not torch.cuda.is_available() else
           torch.cuda.get_device_name(), "model": model, "fp32_gemm_peak_flops": peak,
           "precision_gemm_peak_flops": peak_autocast,
           "xlt_speedup_over_hf_trainer": round(speedup, 2),
           "xlt_mlm_speedup_over_hf_trainer": mlm_speedup and round(mlm_speedup, 2),
           **({"xlt_no_attention_dropout_speedup_over_hf_trainer": round(
               tps["xlt_no_attention_dropout"] / tps["hf_trainer"], 2),
               "xlt_no_attention_dropout_speedup_over_xlt": round(tps["xlt_no_attention_dropout"] / tps["xlt"], 2)}
              if "xlt_no_attention_dropout" in tps else {}),
           "notes": "xSID en, intent + slot heads, embeddings frozen, same steps and batch size; tokens = non-pad "
                    "sub-tokens; FLOPs per token = 6 x layer parameters + attention (padded length of the HF "
                    "batches); peak = best 2048^3 (GPU: 8192^3) GEMM rate of the device in the run's precision "
                    "(fp32 without TF32, or bf16 / fp16 under autocast). peak_rss_mb is the process's peak so far (the "
                    "HF Trainer ran first). *_no_attention_dropout: attention-probability dropout 0 in both "
                    "(model.attention_dropout=0), other dropout unchanged. dev_en_intent_slot_mean: xlt's English "
                    "dev score after the steps.", "rows": rows_out}
    name = ("training-speed" + ("-cuda" if torch.cuda.is_available() else "")
            + ("" if args.batch_size == 32 else f"-b{args.batch_size}")
            + ("" if args.precision == "fp32" and not args.compile else
               f"-{args.precision}{'-compile' if args.compile else ''}"))
    (results / f"{name}.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"| variant | tokens/s | s/step | fraction of {args.precision} peak | peak RSS MB |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['variant']} | {r['tokens_per_second']} | {r['seconds_per_step']} | {r['fraction_of_peak']} | "
              f"{r['peak_rss_mb']} |" for r in rows_out]
    mlm_text = f", continued MLM {mlm_speedup:.2f}x" if mlm_speedup else ""
    lines.append(f"\nxlt / HF Trainer: fine-tuning {speedup:.2f}x{mlm_text}; {args.precision} GEMM peak "
                 f"{peak_autocast / 1e9:.1f} GFLOP/s; {per_token['intent_slot'] / 1e6:.1f} MFLOP per token "
                 "(fine-tuning)")
    print("\n".join(lines))
    return out


if __name__ == "__main__":
    main()
