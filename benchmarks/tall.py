"""Benchmark: TALL (Xia et al. 2021) on xSID — unsupervised-MT pre-training of multilingual-e5-small + a decoder for
en-ja (distant) and en-de (similar), then BART-style NLU fine-tuning, against the encoder fine-tuned alone.

Pre-training (``xlt pretrain``, shipped configs ``pretrain-tall-en-ja`` / ``pretrain-tall-en-de``, seed 1): DAE
warm-up then DAE + on-the-fly back-translation on monolingual text only; round-trip BLEU on held-out lines of each
language and BLEU against the Tatoeba references after every evaluation (learning curves).  Ablations on en-ja, same
steps: ``dae_only`` (no back-translation) and ``bt_only`` (no denoising, also in the first phase).

NLU (config ``xsid-zero-shot``: 1000 steps x 32, lr 3e-4, frozen embeddings, checkpoint chosen on the ENGLISH dev
set; all 19 xSID test languages): method ``tall`` on each pre-trained model (seeds 1-3); ``encoder_only`` fine-tunes
the TALL-pre-trained encoder alone (method zero_shot); the baseline is the shipped encoder with the same config and
seeds (rows of ``results/xsid-zero-shot.json``).

    python benchmarks/tall.py --data-dir ../shared/data [--seeds 1 2 3] [--only JOB ...]
    python benchmarks/tall.py --collect

Jobs run one at a time, each in its own process, resumable; the results are rewritten after each job:
``benchmarks/results/tall.{json,md}``.  ``touch benchmarks/runs/PAUSE`` holds the queue between jobs.
"""
from __future__ import annotations

from pathlib import Path

from jobqueue import RUNS, pretrain, queue_main, train_evaluate

PAIRS = {"en-ja": "pretrain-tall-en-ja", "en-de": "pretrain-tall-en-de"}
ABLATIONS = {"dae_only": ["phases.1.objectives={dae: 1.0}"],
             "bt_only": ["phases.0.objectives={bt: 1.0}", "phases.1.objectives={bt: 1.0}"]}


def pretrain_name(pair: str, variant: str) -> str:
    return f"tall-{pair}" + ("" if variant == "none" else f"-{variant}")


def run_pretrain(pair: str, variant: str, data_dir: str) -> Path:
    from xlt.config import find_config, load_stage_config

    cfg = load_stage_config(find_config(PAIRS[pair]), [f"corpus.data_dir={data_dir}", f"output_dir={RUNS}",
                                                       f"name={pretrain_name(pair, variant)}",
                                                       *ABLATIONS.get(variant, [])])
    return pretrain(cfg)


def run_nlu(pair: str, variant: str, seed: int, data_dir: str) -> Path:
    """variant none / dae_only / bt_only: method tall on that pre-training; encoder_only: its encoder alone."""
    from xlt.config import find_config, load_config

    stage = RUNS / pretrain_name(pair, "none" if variant == "encoder_only" else variant)
    if not (stage / "results.json").exists():
        raise SystemExit(f"{stage}: pre-train first (job pretrain-{pair}{'' if variant == 'none' else '-' + variant})")
    method = "zero_shot" if variant == "encoder_only" else "tall"
    cfg = load_config(find_config("xsid-zero-shot"), [
        f"data.data_dir={data_dir}", f"train.seed={seed}", f"model.name={stage / 'model'}", f"output_dir={RUNS}",
        f"train.method={method}", f"name=xsid-tall-{pair}-{variant}-seed{seed}"])
    return train_evaluate(cfg)


def queue(seeds: list[int]) -> list[tuple[str, int]]:
    """The main comparison first (en-ja, then en-de), then the en-ja ablations."""
    q = [("pretrain-en-ja", 1)] + [("nlu-en-ja-none", s) for s in seeds]
    q += [("pretrain-en-de", 1)] + [("nlu-en-de-none", s) for s in seeds]
    q += [("nlu-en-ja-encoder_only", s) for s in seeds]
    for variant in ABLATIONS:
        q += [(f"pretrain-en-ja-{variant}", 1)] + [(f"nlu-en-ja-{variant}", s) for s in seeds]
    return q


def run_job(job: str, seed: int, data_dir: str) -> None:
    kind, rest = job.split("-", 1)
    pair, variant = rest[:5], rest[6:] or "none"
    if kind == "pretrain":
        run_pretrain(pair, variant, data_dir)
    else:
        run_nlu(pair, variant, seed, data_dir)


def main() -> None:
    queue_main(__doc__, __file__, "tall_report", run_job, queue,
               "job names (pretrain-en-ja: seed 1; nlu-en-ja-none: every seed)",
               seeds_of=lambda job, seeds: seeds if job.startswith("nlu") else [1])


if __name__ == "__main__":
    main()
