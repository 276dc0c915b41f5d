"""Fine-tuning methods.  A method is one small class in one file of this package, found automatically: it takes the
run context and has a fixed, typed surface — options, training examples, the model, the loss of a batch, the
evaluation inputs and the test-time prediction.  Every hook has a default (the zero-shot behaviour), so generic
code never asks whether a method "has" one.  Adding a method = that file + a config + a test row.
"""
from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from xlt.core.batching import Encoded
from xlt.models import TaskModel
from xlt import registry


class Method:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    needs: ClassVar[str] = ""  # what a user must have beyond labelled source data (``xlt methods`` shows it)
    takes_target_shots: ClassVar[bool] = True  # data.target_shots can join its training examples
    Options: ClassVar[type | None] = None  # a dataclass filled from the config's ``options:`` section
    uses_translation_at_test_time: ClassVar[bool] = False  # its results carry the translation statistics
    serve_with_translation: ClassVar[bool] = False  # served models read each input with its translation (FILTER)
    serve_via_translation: ClassVar[bool] = False  # served models predict on the input's translation (translate-test)
    serve_with_language: ClassVar[bool] = False  # served models read each input's language (TALL's decoder token)
    fidelity: ClassVar[tuple] = ()  # xlt.fidelity.Deviation entries: where xlt follows its paper and where not

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and cls.name:
            METHODS.add(cls.name, cls)

    def __init__(self, ctx) -> None:
        self.ctx = ctx  # xlt.core.context.RunContext
        self.cfg = ctx.cfg
        self.task = ctx.task
        self.options = ctx.cfg.options

    def check(self) -> None:
        """Raise ConfigError for settings or task combinations that make no sense, before any work is done."""

    def train_examples(self) -> list:
        """The training examples (before deduplication and subsetting): by default the source training set."""
        return self.ctx.load_split(self.cfg.data.source_lang, "train")

    def build_model(self, encoder: nn.Module, labels: dict) -> nn.Module:
        """By default the encoder with the task's heads."""
        heads = self.task.heads(encoder.config.hidden_size, labels, self.cfg.model.pooling, self.cfg.model.dropout)
        return TaskModel(encoder, heads)

    def loss(self, model: nn.Module, batch: dict) -> dict[str, torch.Tensor]:
        """``{"loss": scalar to optimise, other named parts detached for logging}``; by default the task loss."""
        return self.task.loss(model(batch), batch)

    def before_training(self, data, pad_id: int) -> None:
        """Run once the data is prepared and before the first step (self-teaching: the teacher's soft labels)."""

    def eval_inputs(self, examples: list, lang: str, report: dict) -> list:
        """What the model reads for dev/test examples of ``lang`` (paired models: each with its translation)."""
        return examples

    def predict(self, run, examples: list, lang: str, report: dict, accelerator=None) -> list:
        """Predictions for ``examples`` of ``lang`` with a trained ``run`` (``xlt.trained.TrainedRun``)."""
        return run.predict(self.eval_inputs(examples, lang, report), accelerator)


METHODS = registry.METHODS


def get_method(name: str) -> type[Method]:
    return METHODS.get(name)


__all__ = ["Encoded", "METHODS", "Method", "get_method"]
