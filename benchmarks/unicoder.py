"""Benchmark: Unicoder pre-training (Huang et al. 2019) ablations, fine-tuned zero-shot on XNLI and xSID.

Pre-training (``xlt pretrain pretrain-unicoder``, seed 1; the shipped budget: 200 steps of new heads on the frozen
encoder, then 1600 steps of everything, batch 32) in the variants of the paper's ablation: ``mlm`` (MLM only),
``mlm+tlm`` (XLM), ``word_recovery`` / ``paraphrase`` / ``cs_mlm`` (XLM + that task), ``all5`` -- these with TLM's
translation positions running on, as they were run -- and ``mlm+tlm_reset`` / ``all5_reset`` (positions from 0 again
on the translation, as XLM's TLM and xlt's default), ``mlm+tlm_reset_libreoffice`` (the same with the LibreOffice help
text added to every language and pair, the same steps), ``word_recovery_reset`` (XLM + word recovery, the reset).  Fine-tuning, 3 seeds
each, checkpoint chosen on the ENGLISH dev set: ``xnli-zero-shot`` (learning rate as chosen by benchmarks/tasks.py's
English-dev probes) and ``xsid-zero-shot``, on each pre-trained encoder; ``all5+multi_language`` adds
multi-language fine-tuning where translations exist (XNLI: es by Apertium; xSID: sr by Apertium, da shipped MT).
``none`` (the shipped encoder) rows come from the runs of benchmarks/tasks.py (xnli-zero-shot) and
results/xsid-zero-shot.json: the same configs and seeds.

    python benchmarks/unicoder.py --data-dir ../shared/data [--seeds 1 2 3] [--only JOB ...]
    python benchmarks/unicoder.py --only probe-all   # benchmarks/probes/unicoder_probe.py on every finished pre-training
    python benchmarks/unicoder.py --collect

Writes ``benchmarks/results/unicoder.{json,md}``; resumable; ``touch benchmarks/runs/PAUSE`` holds the queue.
"""
from __future__ import annotations

from pathlib import Path

from jobqueue import RUNS, pretrain, queue_main, train_evaluate

VARIANTS = {
    "mlm": ["mlm"],
    "mlm+tlm": ["mlm", "tlm"],
    "word_recovery": ["mlm", "tlm", "word_recovery"],
    "paraphrase": ["mlm", "tlm", "paraphrase"],
    "cs_mlm": ["mlm", "tlm", "cs_mlm"],
    "all5": ["mlm", "tlm", "word_recovery", "paraphrase", "cs_mlm"],
    # the variants above ran with TLM's translation positions running on after the English side (xlt before XLM's
    # reset, Lample & Conneau 2019 section 3.3, was added) and are re-run so; *_reset: the translation from 0 again
    "mlm+tlm_reset": ["mlm", "tlm"],
    "all5_reset": ["mlm", "tlm", "word_recovery", "paraphrase", "cs_mlm"],
    # XLM with the reset on MORE text, the same 1800 batches (issue 49): the LibreOffice help added to every
    # language's monolingual text and to every translation pair (human-translated paragraphs, 13k-27k a language)
    "mlm+tlm_reset_libreoffice": ["mlm", "tlm"],
    # XLM + word recovery with the reset (issue 49): on the synthetic pair this addition alone gave all5's transfer
    "word_recovery_reset": ["mlm", "tlm", "word_recovery"],
}
MORE_TEXT = {"mlm+tlm_reset_libreoffice": "libreoffice"}
MULTI = {"xnli": ["train.method=multi_language", "translation.translator=apertium", "translation.languages=[es]"],
         "xsid": ["train.method=multi_language", "translation.translator=apertium", "translation.languages=[sr,da]",
                  "translation.per_language=[da=file]"]}


def seen_languages(runs: Path) -> set[str]:
    """The languages a pre-training read: English, those of its translation pairs and of its mono/{lang}/ files."""
    import json
    import re

    for run in sorted(runs.glob("unicoder-*/results.json")):
        res = json.loads(run.read_text())
        mono = {m.group(1) for f in res["corpus"]["files"] if (m := re.search(r"/mono/([^/]+)/", f["file"]))}
        return {"en", *mono, *(res["export"]["data"]["parallel"].get("pairs_per_language") or {})}
    return set()


def stage_dir(variant: str) -> Path:
    return RUNS / f"unicoder-{variant.replace('+', '-')}"


def more_text(files: list[str], parallel: dict[str, list[str]], source: str) -> list[str]:
    """Overrides adding ``mono/LANG/SOURCE.txt`` for every language of ``files`` and ``parallel/en-L/SOURCE.L`` to
    every translation pair."""
    langs = sorted({f.split("/")[1] for f in files})
    return ["corpus.files=[" + ", ".join([*files, *(f"mono/{lang}/{source}.txt" for lang in langs)]) + "]",
            "corpus.parallel={" + ", ".join(f"{lang}: [{', '.join([*fs, f'parallel/en-{lang}/{source}.{lang}'])}]"
                                            for lang, fs in parallel.items()) + "}"]


def run_pretrain(variant: str, data_dir: str) -> Path:
    from xlt.config import find_config, load_stage_config

    tasks = "{" + ", ".join(f"{t}: 1.0" for t in VARIANTS[variant]) + "}"
    overrides = [f"corpus.data_dir={data_dir}", f"output_dir={RUNS}", f"name={stage_dir(variant).name}",
                 f"phases.0.objectives={tasks}", f"phases.1.objectives={tasks}",
                 f"options.tlm_reset_positions={str('_reset' in variant).lower()}"]
    if variant in MORE_TEXT:
        shipped = load_stage_config(find_config("pretrain-unicoder"), overrides).corpus
        overrides += more_text(shipped.files, shipped.parallel, MORE_TEXT[variant])
    return pretrain(load_stage_config(find_config("pretrain-unicoder"), overrides))


def run_fine_tune(dataset: str, variant: str, seed: int, data_dir: str) -> Path:
    import sys

    from xlt.config import find_config, load_config

    base = variant.removesuffix("+multi_language")
    stage = stage_dir(base)
    if not (stage / "results.json").exists():
        raise SystemExit(f"{stage}: pre-train first (job pretrain-{base})")
    extra = MULTI[dataset] if variant.endswith("+multi_language") else []
    if dataset == "xnli":
        sys.path.insert(0, str(Path(__file__).parent))
        from tasks import chosen_lr  # the English-dev learning rate of the zero-shot XNLI runs
        extra = [f"train.lr={chosen_lr('xnli')}", *extra]
    cfg = load_config(find_config(f"{dataset}-zero-shot"), [
        f"data.data_dir={data_dir}", f"train.seed={seed}", f"model.name={stage / 'model'}", f"output_dir={RUNS}",
        f"name={dataset}-unicoder-{variant.replace('+', '-')}-seed{seed}", *extra])
    return train_evaluate(cfg)


def queue(seeds: list[int]) -> list[tuple[str, int]]:
    """all5 first (the main question), then XLM (mlm+tlm), then the single additions, then MLM alone; then XLM and
    all5 with TLM's positions reset, then XLM with the reset on more text, then XLM + word recovery with the reset."""
    q = []
    for variant in ("all5", "mlm+tlm", "word_recovery", "paraphrase", "cs_mlm", "mlm", "mlm+tlm_reset", "all5_reset",
                    "mlm+tlm_reset_libreoffice", "word_recovery_reset"):
        q += [(f"pretrain-{variant}", 1), ("probe-all", 1)]
        q += [(f"{d}-{variant}", s) for s in seeds for d in ("xsid", "xnli")]
        if variant == "all5":
            q += [(f"{d}-all5+multi_language", s) for s in seeds for d in ("xsid", "xnli")]
    return q


def run_probe(data_dir: str) -> None:
    """benchmarks/probes/unicoder_probe.py on the shipped encoder and every finished pre-training -> runs/unicoder-probe.json
    (rows merged with those of earlier probes: a pre-training no longer here keeps its committed rows)."""
    import json

    from probes.unicoder_probe import probe

    out = RUNS / "unicoder-probe.json"
    old = json.loads(out.read_text()) if out.exists() else []
    # the probe is deterministic: a variant's rows stay valid while its encoder is older than them
    def unchanged(variant: str) -> bool:
        done = stage_dir(variant) / "results.json"
        return variant == "none" or (done.exists() and done.stat().st_mtime < out.stat().st_mtime)
    keep = frozenset(r["variant"] for r in old if unchanged(r["variant"]))
    rows = [r for r in old if r["variant"] in keep] + probe(data_dir, RUNS, list(VARIANTS), seen_languages(RUNS), keep)
    out.write_text(json.dumps(rows, indent=1))


def run_job(job: str, seed: int, data_dir: str) -> None:
    kind, variant = job.split("-", 1)
    if kind == "probe":
        run_probe(data_dir)
    elif kind == "pretrain":
        run_pretrain(variant, data_dir)
    else:
        run_fine_tune(kind, variant, seed, data_dir)


def main() -> None:
    queue_main(__doc__, __file__, "unicoder_report", run_job, queue,
               "job names (pretrain-all5: seed 1; xnli-all5, xsid-mlm+tlm: every seed; probe-all: the states of "
               "each finished pre-training)",
               seeds_of=lambda job, seeds: [1] if job.startswith(("pretrain", "probe")) else seeds)


if __name__ == "__main__":
    main()
