"""Benchmark: TALL (Xia et al. 2021) on xSID — unsupervised-MT pre-training of multilingual-e5-small + a decoder for
en-ja (distant) and en-de (similar), then BART-style NLU fine-tuning, against the encoder fine-tuned alone.

Pre-training (``xlt pretrain``, shipped configs ``pretrain-tall-en-ja`` / ``pretrain-tall-en-de``, seed 1): DAE
warm-up of the decoder (encoder frozen) then DAE + on-the-fly back-translation (everything trains) on monolingual
text only; round-trip BLEU on held-out lines of each language and BLEU against the Tatoeba references after every
evaluation (learning curves).  Ablations on en-ja, same
steps: ``dae_only`` (no back-translation) and ``bt_only`` (no denoising, also in the first phase).

NLU (config ``xsid-zero-shot``: 1000 steps x 32, lr 3e-4, frozen embeddings, checkpoint chosen on the ENGLISH dev
set; all 19 xSID test languages): method ``tall`` on each pre-trained model (seeds 1-3); ``encoder_only`` fine-tunes
the TALL-pre-trained encoder alone (method zero_shot); the baseline is the shipped encoder with the same config and
seeds (rows of ``results/xsid-zero-shot.json``).

Translator (``translate-en-ja``, ``translate-en-de``): the pre-trained model as xlt's ``tall`` translation backend on
in-domain text with human references — the English originals (``# text-en``) of the xSID test set of the target
language and its human translations (``# text``), both directions: BLEU and sentences/s.  Apertium has neither pair
here; for scale, Apertium eng->hbs (Serbian) on the xSID sr test set, same measures (another language: throughput,
not quality, compares).

Probe (``probe-en-ja``, ``probe-en-de``; ``probes/tall_probe.py``): how alike the encoder's and the decoder's states are for
an xSID test utterance and its translation (retrieval top-1, cosines), before and after NLU fine-tuning.

    python benchmarks/tall.py --data-dir ../shared/data [--seeds 1 2 3] [--only JOB ...]
    python benchmarks/tall.py --collect

Jobs run one at a time, each in its own process, resumable; the results are rewritten after each job:
``benchmarks/results/tall.{json,md}``.  ``touch benchmarks/runs/PAUSE`` holds the queue between jobs.
"""
from __future__ import annotations

import json
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


def measure_translator(translator, name: str, en: list[str], tgt: list[str], lang: str) -> list[dict]:
    """BLEU against the human side and sentences/s, en->lang and lang->en (no cache: the timing is the backend's)."""
    import time

    from xlt.stages.translation_eval import CHARACTER_BLEU, bleu, tokenize_of

    rows = []
    for src, dst, texts, refs in (("en", lang, en, tgt), (lang, "en", tgt, en)):
        start = time.perf_counter()
        out = translator.translate(texts, src, dst)
        seconds = time.perf_counter() - start
        rows.append({"method": "translator", "translator": name, "dataset": "xsid-test", "lang": f"{src}-{dst}",
                     "seed": 1, "bleu": round(bleu(out, refs, dst), 2), "tokenize": tokenize_of(dst),
                     **({"char_bleu": round(bleu(out, refs, dst, "char"), 2)} if dst in CHARACTER_BLEU else {}),
                     "sentences": len(texts),
                     "seconds": round(seconds, 2), "sentences_per_second": round(len(texts) / seconds, 1),
                     "identical_rate": round(sum(o == t for o, t in zip(out, texts)) / len(texts), 3),
                     "samples": [f"{t} → {o} (ref: {r})" for t, o, r in list(zip(texts, out, refs))[:4]]})
    return rows


def run_translate(pair: str, data_dir: str) -> None:
    import torch

    from probes.tall_probe import xsid_pairs
    from xlt.translate import get_translator

    torch.set_num_threads(2)
    stage = RUNS / pretrain_name(pair, "none")
    if not (stage / "results.json").exists():
        raise SystemExit(f"{stage}: pre-train first (job pretrain-{pair})")
    lang = pair.split("-")[1]
    rows = measure_translator(get_translator("tall", model=str(stage)), f"tall {pair}", *xsid_pairs(data_dir, lang),
                              lang)
    if pair == "en-ja":  # Apertium for scale, once
        try:
            rows += measure_translator(get_translator("apertium"), "apertium", *xsid_pairs(data_dir, "sr"), "sr")
        except Exception as err:  # noqa: BLE001 - Apertium is only the point of comparison
            print(f"apertium en-sr not measured: {err}")
    (stage / "xsid_translation.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    for r in rows:
        print(f"{r['translator']:14} {r['lang']:6} BLEU {r['bleu']:6.2f}  {r['sentences_per_second']:7.1f} sent/s")


def run_probe(pair: str, data_dir: str) -> None:
    from probes.tall_probe import probe

    stage = RUNS / pretrain_name(pair, "none")
    if not (stage / "results.json").exists():
        raise SystemExit(f"{stage}: pre-train first (job pretrain-{pair})")
    rows = probe(pair, data_dir, stage, RUNS / f"xsid-tall-{pair}-none-seed1")
    (stage / "probe.json").write_text(json.dumps(rows, indent=1) + "\n")


def queue(seeds: list[int]) -> list[tuple[str, int]]:
    """The main comparison first (en-ja, then en-de), then the en-ja ablations."""
    q = [("pretrain-en-ja", 1)] + [("nlu-en-ja-none", s) for s in seeds]
    q += [("pretrain-en-de", 1)] + [("nlu-en-de-none", s) for s in seeds]
    q += [("translate-en-ja", 1), ("translate-en-de", 1), ("probe-en-ja", 1), ("probe-en-de", 1)]
    q += [("nlu-en-ja-encoder_only", s) for s in seeds]
    for variant in ABLATIONS:
        q += [(f"pretrain-en-ja-{variant}", 1)] + [(f"nlu-en-ja-{variant}", s) for s in seeds]
    return q


def run_job(job: str, seed: int, data_dir: str) -> None:
    kind, rest = job.split("-", 1)
    pair, variant = rest[:5], rest[6:] or "none"
    if kind == "pretrain":
        run_pretrain(pair, variant, data_dir)
    elif kind == "translate":
        run_translate(pair, data_dir)
    elif kind == "probe":
        run_probe(pair, data_dir)
    else:
        run_nlu(pair, variant, seed, data_dir)


def main() -> None:
    queue_main(__doc__, __file__, "tall_report", run_job, queue,
               "job names (pretrain-en-ja, translate-en-ja: seed 1; nlu-en-ja-none: every seed)",
               seeds_of=lambda job, seeds: seeds if job.startswith("nlu") else [1])


if __name__ == "__main__":
    main()
