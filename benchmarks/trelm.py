"""Benchmark: TreLM (Li et al., ICLR 2021 submission) — migrate the English MiniLM (minilm-l6-en) to Spanish, against
the un-migrated model, a model of the same size pre-trained from scratch on the same Spanish text, and
multilingual-e5-small, on the Spanish MTOD task (trained on the human Spanish training set, selected on Spanish dev,
tested on Spanish test: a SUPERVISED target-language task, as in the paper; not zero-shot).

Pre-training (``xlt pretrain``, seed 1; the shipped config ``pretrain-trelm-es``: commonality 1000 steps, s2t and
t2s 1000 each, language-specific 1000, batch 32):
- ``migrated``: the config as shipped (its base: new vocabulary + MUSE-aligned fastText embeddings);
- ``without_cdlm``: the paper's Table 3 ablation: the two transfer phases replaced by Spanish MLM for the same
  2000 steps (everything trainable), on the migrated base;
- ``random_init``: the migrated run's vocabulary with random embedding rows (English layers kept), same phases
  (and the migrated run's CdLM links: the same sub-token pairs, so the ablation changes the initialisation alone);
- ``from_scratch``: the same vocabulary and architecture, every weight random, Spanish MLM for the same 4000 steps
  at lr 1e-4 (the migrated model's transfer and language-specific rate). Kept as a record, not queued:
  ``from_scratch_lr5e-4``, the first attempt at lr 5e-4, whose encoder collapsed (every token's output state the
  same vector, MLM stuck at unigram level, fine-tuning at the majority intent); a 600-step probe at 1e-4 did not
  collapse. The rate was chosen on those pre-training diagnostics, not on any downstream result.
BPW on held-out Spanish text (fixed masked positions, the same for every model on this vocabulary) after each phase.
Alignment only (job ``align-bridged``: the base folder, no phases): ``bridged`` aligns the Spanish fastText space to
an English fastText space (both whitened; identical-strings seed + Procrustes refinement) and builds each row from
the nearest English entries' MiniLM rows (``options.vocabulary.map_into=english_fasttext``,
xlt.align.fasttext_bridge), against the paper's direct map into MiniLM's input embeddings; word-translation P@1 of
every map and of the initialised rows; ``pretrain-bridged`` then runs the shipped phases on that base (the same
steps as ``migrated``; only the initial rows differ) and ``mtod-bridged`` fine-tunes it.  ``bridged_libreoffice``
(job ``align-bridged_libreoffice``): the same alignment with more text, the LibreOffice help (issue 49's "more
text": ``mono/{en,es}/libreoffice.txt``, the two sides of one help's paragraphs, deduplicated apart, so comparable
text on the same topics and not line-aligned) added to both languages' text, i.e. to the vocabulary and the fastText
spaces.

Fine-tuning (config ``mtod-target-trained-es``: 1000 steps x 32, seeds 1-3) of each pre-trained model and of
``unmigrated`` (minilm-l6-en as shipped) and ``multilingual`` (multilingual-e5-small).

    python benchmarks/trelm.py --data-dir ../shared/data [--seeds 1 2 3] [--only JOB ...]
    python benchmarks/trelm.py --collect

Writes ``benchmarks/results/trelm.{json,md}``; resumable; ``touch benchmarks/runs/PAUSE`` holds the queue.
"""
from __future__ import annotations

from pathlib import Path

from jobqueue import RUNS, pretrain, queue_main, train_evaluate, trelm_base

ALIGNED = ["migrated", "bridged", "bridged_libreoffice"]  # the bases whose alignment rows the report collects
PRETRAINED = ["migrated", "bridged", "without_cdlm", "random_init", "from_scratch", "from_scratch_lr5e-4"]
FINE_TUNED = ["migrated", "bridged", "unmigrated", "from_scratch", "multilingual", "without_cdlm", "random_init",
              "from_scratch_lr5e-4"]
SHIPPED = {"unmigrated": "minilm-l6-en", "multilingual": "multilingual-e5-small"}
ALL = '["*"]'


def stage_dir(variant: str) -> Path:
    return RUNS / f"trelm-{variant}"


def _shipped(key: str):
    """A top-level section of the shipped config ``pretrain-trelm-es``."""
    import yaml

    from xlt.config import find_config
    return yaml.safe_load(Path(find_config("pretrain-trelm-es")).read_text())[key]


def _phases(phases: list[dict]) -> str:
    """A ``phases=[...]`` override (JSON is YAML flow syntax)."""
    import json
    return "phases=" + json.dumps(phases)


def variant_overrides(variant: str) -> list[str]:
    base = f"options.base_from={stage_dir('migrated') / 'base'}"
    shipped = _shipped("phases")
    steps = {p["name"]: p["steps"] for p in shipped}
    if variant == "migrated":
        return []
    if variant == "bridged":
        return ["options.vocabulary.map_into=english_fasttext", "options.vocabulary.alignment=identical_strings",
                "options.vocabulary.adversarial.epochs=0"]
    if variant == "bridged_libreoffice":
        langs = {lang: [*files, f"mono/{lang}/libreoffice.txt"] for lang, files in _shipped("corpus")["langs"].items()}
        return [*variant_overrides("bridged"),
                "corpus.langs={" + ", ".join(f"{k}: [{', '.join(v)}]" for k, v in langs.items()) + "}"]
    if variant == "random_init":
        return ["options.init=random", base]
    if variant == "without_cdlm":  # commonality and language-specific as shipped; Spanish MLM where s2t + t2s were
        transfer = {"name": "transfer", "steps": steps["s2t"] + steps["t2s"], "lr": shipped[1]["lr"],
                    "eval_every": shipped[1]["eval_every"], "objectives": {"mlm_target": 1.0}, "trainable": ["*"]}
        specific = {k: v for k, v in shipped[3].items() if k != "start_from"}
        return [base, _phases([shipped[0], transfer, specific])]
    if variant in ("from_scratch", "from_scratch_lr5e-4"):
        lr = 5.0e-4 if variant == "from_scratch_lr5e-4" else 1.0e-4
        mlm = {"name": "mlm", "steps": sum(steps.values()), "lr": lr, "eval_every": 500,
               "objectives": {"mlm_target": 1.0}, "trainable": ["*"]}
        return ["options.init=scratch", base, _phases([mlm])]
    raise ValueError(variant)


def run_pretrain(variant: str, data_dir: str, base_only: bool = False) -> Path:
    from xlt.config import find_config, load_stage_config

    cfg = load_stage_config(find_config("pretrain-trelm-es"), [
        f"corpus.data_dir={data_dir}", f"output_dir={RUNS}", f"name={stage_dir(variant).name}",
        *variant_overrides(variant)])
    return trelm_base(cfg) if base_only else pretrain(cfg)


def run_fine_tune(variant: str, seed: int, data_dir: str) -> Path:
    from xlt.config import find_config, load_config

    if variant in SHIPPED:
        model = SHIPPED[variant]
    else:
        model = str(stage_dir(variant) / "model")
        if not Path(model, "config.json").exists():
            raise SystemExit(f"{model}: pre-train first (job pretrain-{variant})")
    cfg = load_config(find_config("mtod-target-trained-es"), [
        f"data.data_dir={data_dir}", f"train.seed={seed}", f"model.name={model}", f"output_dir={RUNS}",
        f"name=mtod-es-trelm-{variant}-seed{seed}"])
    return train_evaluate(cfg)


def queue(seeds: list[int]) -> list[tuple[str, int]]:
    """The migrated model and its two references first (the main question), then the ablations."""
    q = [("pretrain-migrated", 1)] + [(f"mtod-{v}", s) for s in seeds for v in ("migrated", "unmigrated")]
    q += [("pretrain-from_scratch", 1)] + [("mtod-from_scratch", s) for s in seeds]
    q += [("mtod-multilingual", s) for s in seeds]
    for variant in ("without_cdlm", "random_init"):
        q += [(f"pretrain-{variant}", 1)] + [(f"mtod-{variant}", s) for s in seeds]
    return q


def run_job(job: str, seed: int, data_dir: str) -> None:
    kind, variant = job.split("-", 1)
    if kind in ("pretrain", "align"):
        run_pretrain(variant, data_dir, base_only=kind == "align")
    else:
        run_fine_tune(variant, seed, data_dir)


def main() -> None:
    queue_main(__doc__, __file__, "trelm_report", run_job, queue,
               "job names (pretrain-migrated: seed 1; mtod-migrated, mtod-unmigrated: every seed)",
               seeds_of=lambda job, seeds: [1] if job.startswith(("pretrain", "align")) else seeds)


if __name__ == "__main__":
    main()
