"""Method registry.  A method is one small module that registers a ``Method`` under its name; the training loop
asks it for the training examples and for the loss of a batch.  Adding a method = that file + a config + a test row.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

import torch

from xlt.data.records import Utterance


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    # (config, load_train(lang) -> utterances, report dict) -> training utterances, e.g. source only (zero-shot)
    # or source + translations; statistics go into the report (written to RUN_DIR/data_report.json)
    train_examples: Callable[..., list[Utterance]]
    # (model, batch, options) -> {"loss": scalar to optimise, other named parts detached for logging};
    # ``options`` is the run's typed ``cfg.options`` (None for methods without options)
    loss: Callable[..., dict[str, torch.Tensor]]
    # optional test-time procedure for target languages (translate-test):
    # (cfg, model, tokenizer, labels, pad_id, lang, rows) -> (intents, BIO tags per row, statistics)
    predict_target: Callable[..., tuple[list[str], list[list[str]], dict]] | None = None
    # optional dataclass of the method's settings, filled from the config's ``options:`` section
    options: type | None = None
    # optional (cfg, encoder, labels) -> model, for methods with their own architecture (FILTER); default JointModel
    build_model: Callable[..., torch.nn.Module] | None = None
    # optional (cfg, rows, lang, report) -> rows with ``translation`` attached, for dev/test inputs of paired
    # models (FILTER predicts from an utterance together with its translation)
    pair_eval_rows: Callable[..., list[Utterance]] | None = None
    # optional (cfg, data, pad_id, run_dir) -> None, run once the data is prepared and before the first step
    # (self-teaching attaches a teacher's soft labels to the training examples)
    before_training: Callable[..., None] | None = None


REGISTRY: dict[str, Method] = {}
_MODULES = ["zero_shot", "translate_train", "multi_language", "translate_test", "xeroalign", "filter",
            "filter_self_teaching"]


def register(method: Method) -> Method:
    if method.name in REGISTRY:
        raise ValueError(f"method {method.name!r} registered twice")
    REGISTRY[method.name] = method
    return method


def get_method(name: str) -> Method:
    for module in _MODULES:
        importlib.import_module(f"xlt.methods.{module}")
    if name not in REGISTRY:
        raise KeyError(f"unknown method {name!r}; available: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]
