"""Pre-training stages (``xlt pretrain CONFIG``): recipes with phases that produce a new encoder before fine-tuning.

A stage is one class in one file of this package (found automatically).  It owns its objectives (loss modules with
their own heads, ``xlt.losses``), makes their batches from the stage's corpora, and evaluates held-out text.  A
phase (``phases:`` in the config) runs objectives in turn (one batch each, losses scaled by their weights) with
only the parameters matching its ``trainable`` patterns updated, on the SAME loop as fine-tuning
(``xlt.core.loop``: checkpoints, exact resume, progress bar, JSONL metrics).  The result is an ordinary Hugging
Face folder ``RUN_DIR/model`` (full vocabulary; extra modules such as an MLM head beside it as safetensors + JSON)
that fine-tuning takes as ``model.name=RUN_DIR/model`` or ``model.init_from=RUN_DIR/model``.
"""
from __future__ import annotations

import fnmatch
import json
import shutil
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from xlt.errors import XltError
from xlt import registry


class PretrainModel(nn.Module):
    """The encoder, the stage's objectives, and modules several objectives use (``shared``: TALL's decoder, registered
    once); ``forward(batch)`` runs ``objectives[batch["objective"]](encoder, batch, **shared)``."""

    def __init__(self, encoder: nn.Module, objectives: dict[str, nn.Module],
                 shared: dict[str, nn.Module] | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.objectives = nn.ModuleDict(objectives)
        self.shared = nn.ModuleDict(shared or {})

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        return self.objectives[batch["objective"]](self.encoder, batch, **self.shared)


class Stage:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    Options: ClassVar[type] = dict  # a dataclass filled from the config's ``options:`` section
    # a synthetic language named in the config grows the model's vocabulary (xlt.synthetic); False for a stage
    # that builds its own target vocabulary (TreLM)
    grows_synthetic_vocabulary: ClassVar[bool] = True
    fidelity: ClassVar[tuple] = ()  # xlt.fidelity.Deviation entries: where xlt follows its paper and where not

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and cls.name:
            STAGES.add(cls.name, cls)

    def __init__(self, cfg, tokenizer, corpus, trim) -> None:
        self.cfg, self.options, self.tokenizer, self.corpus, self.trim = cfg, cfg.options, tokenizer, corpus, trim

    @classmethod
    def extra_vocabulary(cls, cfg, tokenizer) -> list[list[int]]:
        """Id sequences (besides the corpora) a trimmed vocabulary must cover: the stage's evaluation sets."""
        return []

    @classmethod
    def prepare_base(cls, cfg) -> Path | None:
        """Build the folder the stage starts from, before its tokenizer and corpora load (TreLM: a new vocabulary
        and its embedding matrix); None = ``cfg.model.name`` itself."""
        return None

    def wrap_encoder(self, encoder: nn.Module) -> nn.Module:
        """The module the stage trains around the loaded encoder (TreLM: halves + TRILayer); itself by default."""
        return encoder

    def export_encoder(self, encoder: nn.Module) -> nn.Module:
        """The Hugging Face model inside ``wrap_encoder``'s module, saved as the exported folder's encoder."""
        return encoder

    def objectives(self, encoder: nn.Module) -> dict[str, nn.Module]:
        raise NotImplementedError

    def shared_modules(self, encoder: nn.Module) -> dict[str, nn.Module]:
        """Modules more than one objective uses (passed to each by name); none by default."""
        return {}

    def batches(self, phase, epoch: int) -> list[list[int]]:
        """The global batches of one epoch of a phase (indices into the stage's training sequences)."""
        raise NotImplementedError

    def make_batch(self, objective: str, indices: list[int], step: int, rank: int) -> dict:
        raise NotImplementedError

    def count(self, indices: list[int]) -> tuple[int, int]:
        raise NotImplementedError

    def evaluate(self, model: PretrainModel, accelerator) -> tuple[dict, float]:
        """Held-out metrics and a selection value (higher is better)."""
        raise NotImplementedError

    def merge_states(self, states: dict[str, dict[str, torch.Tensor]], phase) -> dict[str, torch.Tensor]:
        """One model state from the end states of several earlier phases (``phases[].start_from`` with two or more
        names); stages without such a recipe refuse."""
        from xlt.errors import ConfigError
        raise ConfigError(f"phases[{phase.name}].start_from names {len(states)} phases: stage {self.name} cannot "
                          f"merge models")

    def export(self, model: PretrainModel, folder: Path) -> dict:
        """Write extra modules (heads) beside the encoder; returns what was written, for the stage's JSON."""
        return {}


STAGES = registry.STAGES


def get_stage(name: str) -> type[Stage]:
    return STAGES.get(name)


def set_trainable(model: nn.Module, patterns: list[str]) -> dict:
    """requires_grad = name matches one of the fnmatch ``patterns``; a pattern matching nothing is an error."""
    from xlt.errors import ConfigError

    names = [n for n, _ in model.named_parameters()]
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
            raise ConfigError(f"phases[].trainable: pattern {pattern!r} matches no parameter (names start with "
                              f"{sorted({n.split('.')[0] + '.' + n.split('.')[1] for n in names})})")
    counts = {"trainable": 0, "frozen": 0}
    for name, p in model.named_parameters():
        p.requires_grad_(any(fnmatch.fnmatchcase(name, pat) for pat in patterns))
        counts["trainable" if p.requires_grad else "frozen"] += p.numel()
    return counts


def run_stage(cfg, resume: bool = False, stop_after: tuple[int, int] | None = None, overwrite: bool = False) -> Path:
    """Run (or resume) every phase of a stage; returns the exported encoder folder ``RUN_DIR/model``.
    ``stop_after=(phase index, steps)``: leave as if interrupted there (tests); ``overwrite``: replace an existing
    stage folder of that name (kept aside until this one is exported: ``xlt.core.run_folder``)."""
    from accelerate import DistributedDataParallelKwargs
    from accelerate.utils import set_seed

    from xlt import zoo
    from xlt.core.loop import configure_threads, make_accelerator
    from xlt.core.run_folder import check_run_dir, replacing
    from xlt.models.families import check_supported

    run_dir = cfg.run_dir
    _check_start_from(cfg)  # config errors before any data is read
    check_supported(zoo.resolve(cfg.model.name), "stage", cfg.stage)  # the family can run this stage
    objectives_used = {o for p in cfg.phases for o in p.objectives}
    accelerator = make_accelerator(cfg.mixed_precision, kwargs_handlers=[DistributedDataParallelKwargs(
        find_unused_parameters=len(objectives_used) > 1)])
    if overwrite and resume:
        raise XltError("--resume and --overwrite (resume=True, overwrite=True in the API) contradict each other: "
                       "pass one")
    if overwrite or not resume or not (run_dir / "config.yaml").exists():  # a stage resumes phase by phase
        resume = check_run_dir(run_dir, False, overwrite, accelerator.is_main_process)
    accelerator.wait_for_everyone()
    configure_threads(cfg.threads, accelerator.num_processes)
    set_seed(cfg.seed)
    stage_class = get_stage(cfg.stage)
    with replacing(run_dir, overwrite, accelerator.is_main_process) as replacement:
        out = _run_phases(cfg, stage_class, accelerator, resume, stop_after)
        replacement.finished = (out / "config.json").exists()
    return out


def _run_phases(cfg, stage_class, accelerator, resume: bool, stop_after: tuple[int, int] | None) -> Path:
    """Everything a stage writes: its config, base, phases (each resumable) and the exported encoder folder
    (``RUN_DIR/model``, which does not exist when ``stop_after`` left a phase early)."""
    from xlt import zoo
    from xlt.config import save_config
    from xlt.core import checkpoint
    from xlt.core.loop import LoopHooks, LoopSettings, run_loop
    from xlt.core.vocab import VocabTrim, prepare_tokenizer, special_ids
    from xlt.data.corpora import load_corpus

    run_dir = cfg.run_dir
    if accelerator.is_main_process:
        run_dir.mkdir(parents=True, exist_ok=True)
        save_config(cfg, run_dir / "config.yaml")
        stage_class.prepare_base(cfg)  # once, by one process; the others read it back below
    accelerator.wait_for_everyone()
    folder = stage_class.prepare_base(cfg) or zoo.resolve(cfg.model.name)
    tokenizer = prepare_tokenizer(zoo.load_tokenizer(folder))
    corpus = load_corpus(cfg.corpus, tokenizer, folder / "tokenizer.json", zoo.xlt_home() / "corpora")
    trim = None
    if cfg.model.trim_vocab:
        trim = VocabTrim.from_ids(corpus.train + corpus.heldout + stage_class.extra_vocabulary(cfg, tokenizer),
                                  special_ids(tokenizer))
        corpus.train = [trim.map_ids(s) for s in corpus.train]
        corpus.heldout = [trim.map_ids(s) for s in corpus.heldout]
    encoder, _, _ = zoo.load_encoder(str(folder), cfg.model.attention_dropout)
    if trim is not None:
        encoder.set_input_embeddings(trim.trim_embedding(encoder.get_input_embeddings()))
    stage = stage_class(cfg, tokenizer, corpus, trim)
    encoder = stage.wrap_encoder(encoder)
    objective_modules = stage.objectives(encoder)
    unknown = {o for p in cfg.phases for o in p.objectives} - set(objective_modules)
    if unknown:
        from xlt.errors import ConfigError
        raise ConfigError(f"phases[].objectives: stage {cfg.stage} has no objective {sorted(unknown)} (it has "
                          f"{sorted(objective_modules)})")
    model = PretrainModel(encoder, objective_modules, stage.shared_modules(encoder))
    report = {"corpus": corpus.report, "vocab_kept": len(trim.kept) if trim else None, "phases": []}
    for i, phase in enumerate(cfg.phases):
        phase_dir = run_dir / f"phase{i + 1}-{phase.name}"
        final = phase_dir / "final"
        counts = set_trainable(model, phase.trainable)
        if not (final / "model.safetensors").exists():
            if phase.start_from:  # (a resumed phase then loads its own last checkpoint over this)
                _start_from(cfg, model, stage, phase, run_dir)
            objectives = list(phase.objectives)

            def make_batch(idx, step, objectives=objectives):
                objective = objectives[step % len(objectives)]  # one batch of each objective in turn
                return stage.make_batch(objective, idx, step, accelerator.process_index)

            def loss(m, batch, weights=phase.objectives):
                parts = m(batch)
                return {**parts, "loss": weights[batch["objective"]] * parts["loss"]}

            hooks = LoopHooks(batches=lambda epoch, phase=phase: stage.batches(phase, epoch),
                              make_batch=lambda idx, step: _to(make_batch(idx, step), accelerator.device),
                              loss=loss, evaluate=lambda m: stage.evaluate(m, accelerator), count=stage.count)
            settings = LoopSettings(phase.steps, phase.lr, phase.weight_decay, phase.warmup_ratio, phase.grad_clip,
                                    phase.eval_every, 0, f"{phase.name}", schedule=phase.schedule)
            if accelerator.is_main_process:
                phase_dir.mkdir(parents=True, exist_ok=True)
            stop = stop_after[1] if stop_after and stop_after[0] == i else None
            summary = run_loop(accelerator, model, settings, hooks, phase_dir,
                               resume and (phase_dir / "last").exists(), stop)
            if summary is None:
                return run_dir / "model"
            model = accelerator.unwrap_model(model)
            if accelerator.is_main_process:
                checkpoint.save_model(model, final)
                (phase_dir / "summary.json").write_text(json.dumps({**summary, "parameters": counts}, indent=1))
                shutil.rmtree(phase_dir / "last", ignore_errors=True)
            accelerator.wait_for_everyone()
        checkpoint.load_model_state(model, final)  # the phase's last state (also after a resume)
        log = [json.loads(x) for x in (phase_dir / "metrics.jsonl").read_text().splitlines()]
        report["phases"].append({"name": phase.name, "steps": phase.steps, "objectives": phase.objectives,
                                 "trainable": phase.trainable, "parameters": counts, "final_eval": log[-1],
                                 "summary": json.loads((phase_dir / "summary.json").read_text())})
    out = run_dir / "model"
    if accelerator.is_main_process:
        extras = _export(cfg, model, stage, trim, folder, out)
        report["export"] = {"folder": str(out), **extras}
        (run_dir / "results.json").write_text(json.dumps({"stage": cfg.stage, **report}, indent=1,
                                                         ensure_ascii=False))
    accelerator.wait_for_everyone()
    return out


def _phase_final(cfg, run_dir: Path, name: str) -> Path:
    index = [p.name for p in cfg.phases].index(name)
    return run_dir / f"phase{index + 1}-{name}" / "final"


def _check_start_from(cfg) -> None:
    from xlt.errors import ConfigError

    names = [p.name for p in cfg.phases]
    if len(set(names)) != len(names):
        raise ConfigError(f"phases: names must differ ({names})")
    for i, phase in enumerate(cfg.phases):
        unknown = [n for n in phase.start_from if n not in names[:i]]
        if unknown:
            raise ConfigError(f"phases[{i}].start_from: {unknown} is not an earlier phase ({names[:i]})")


def _start_from(cfg, model: PretrainModel, stage: Stage, phase, run_dir: Path) -> None:
    from safetensors.torch import load_file

    states = {name: load_file(str(_phase_final(cfg, run_dir, name) / "model.safetensors"))
              for name in phase.start_from}
    state = next(iter(states.values())) if len(states) == 1 else stage.merge_states(states, phase)
    model.load_state_dict(state)


def _to(batch: dict, device) -> dict:
    from xlt.core.batching import to_device
    return to_device(batch, device)


def _export(cfg, model: PretrainModel, stage: Stage, trim, base: Path, out: Path) -> dict:
    """An ordinary HF folder over the FULL vocabulary: trained embedding rows scattered back into the pretrained
    matrix (rows of ids the corpora never used stay as they were), the base model's tokenizer files, and the stage's
    extra modules."""
    from xlt import zoo

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    encoder = stage.export_encoder(model.encoder)
    if trim is not None:
        full_encoder, _, _ = zoo.load_encoder(str(base))
        full = full_encoder.get_input_embeddings()
        full.weight.data = trim.untrim_into(encoder.get_input_embeddings().weight.data, full.weight.data)
        rows = encoder.get_input_embeddings().weight
        trimmed = next(name for name, p in encoder.named_parameters() if p is rows)  # the family's key for them
        full_encoder.load_state_dict({k: v for k, v in encoder.state_dict().items() if k != trimmed}, strict=False)
        encoder = full_encoder
    elif cfg.model.attention_dropout is not None:  # a training-time setting: the folder keeps the base's own
        from transformers import AutoConfig

        from xlt.models.families import family_of

        key = family_of(encoder).attention_dropout_key
        setattr(encoder.config, key, getattr(AutoConfig.from_pretrained(str(base), local_files_only=True), key))
    encoder.save_pretrained(str(tmp), safe_serialization=True)
    # synthetic.json: the vocabulary of a synthetic language the base was grown by (xlt.synthetic) comes along
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "synthetic.json"):
        if (base / name).exists():
            shutil.copyfile(base / name, tmp / name)
    extras = stage.export(model, tmp)
    (tmp / "xlt_stage.json").write_text(json.dumps({"stage": cfg.stage, "base_model": cfg.model.name,
                                                    "phases": [p.name for p in cfg.phases], **extras}, indent=1))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return extras
