"""Tasks: the only place a label type lives.

A task says how its examples become model inputs and label tensors, which heads sit on the encoder, the loss,
how outputs become predictions, how predictions are scored (metric names and the selection metric), which text
fields a translator must translate, and how labels cross a translation (for training data) and come back across
one (translate-test).  Every method and the training loop talk to a task only through this surface.  A task is one
file in this package; it is found automatically (``get_task``).

Registered: ``intent_slot`` (joint intent + BIO slots), ``pair_classification`` (XNLI, PAWS-X),
``token_classification`` (PAN-X NER with BIO spans, UD POS with word tags).
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar

import torch
from torch import nn

from xlt.align.project import ProjectionStats
from xlt.core.batching import Encoded
from xlt.errors import ConfigError
from xlt import registry

Labels = dict[str, list[str]]  # label vocabularies by name, e.g. {"intents": [...], "slots": [...]}; labels.json
Links = set[tuple[int, int]]  # word alignment: (source word index, target word index)


class Task:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    metrics: ClassVar[tuple[str, ...]] = ()  # reported per language, in this order (fractions in [0, 1])
    select_metric: ClassVar[str] = ""  # the default checkpoint-selection metric on the source dev set
    outputs: ClassVar[dict[str, str]] = {}  # logits name -> "sentence" | "token" (distillation needs the level)
    needs_alignment: ClassVar[bool] = True  # do labels cross a translation through a word alignment?
    # translate-test: fill target words the back-projection leaves unlabelled from a direct prediction
    back_projection_fallback: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and cls.name:
            TASKS.add(cls.name, cls)

    def __init__(self, **options: Any) -> None:
        if options:
            raise ConfigError(f"task {self.name} takes no options, got {sorted(options)}")

    # -- labels, encoding, batching ------------------------------------------------------------------------------
    def label_space(self, examples: list) -> Labels: raise NotImplementedError
    def unseen_labels(self, examples: list, labels: Labels) -> dict: raise NotImplementedError
    def encode(self, tokenizer, example, labels: Labels) -> Encoded: raise NotImplementedError
    def collate_labels(self, items: list[Encoded], seq_len: int) -> dict[str, torch.Tensor]: raise NotImplementedError

    # -- model ---------------------------------------------------------------------------------------------------
    def heads(self, hidden_size: int, labels: Labels, pooling: str, dropout: float) -> nn.Module:
        """A module ``(hidden (B, T, H), attention_mask (B, T)) -> {"sentence": (B, H), <outputs>: logits}``."""
        raise NotImplementedError

    def loss(self, out: dict, batch: dict) -> dict[str, torch.Tensor]:
        """``{"loss": scalar to optimise, other named parts detached}`` for one side of a batch."""
        raise NotImplementedError

    def decode(self, out: dict, batch: dict, labels: Labels) -> list: raise NotImplementedError
    def score(self, examples: list, predictions: list) -> dict[str, float]: raise NotImplementedError

    # -- translation ---------------------------------------------------------------------------------------------
    def texts(self, example) -> list[str]:
        """The text fields a translator must translate, in a fixed order."""
        raise NotImplementedError

    def translated(self, example, texts: list[str], lang: str, origin: str,
                   words_of: Callable[[str], list[str]]) -> Any:
        """``example`` rewritten with translated ``texts`` (labels unknown, sentence labels kept)."""
        raise NotImplementedError

    def words(self, example) -> list[str]:
        """The words a word alignment is computed over (word-level tasks)."""
        return list(example.words)

    def transfer_labels(self, source, translated, links: Links) -> tuple[Any, bool, ProjectionStats]:
        """Move ``source``'s labels onto ``translated`` through ``links``: (labelled example, lost: some label could
        not be placed, statistics)."""
        raise NotImplementedError

    def bio_tags(self, example) -> list[str] | None:
        """The example's BIO tags, for BIO-validity statistics of projected data (None: the task has none)."""
        return None

    def without_word_labels(self, example) -> Any:
        """The example with its word-level labels unknown (no loss), sentence-level labels kept."""
        return example

    def project_back(self, prediction, original, translated, links: Links, direct) -> tuple[Any, ProjectionStats]:
        """Translate-test: a prediction made on ``translated`` (source language) moved onto ``original``'s words;
        ``direct`` is the model's own prediction on ``original`` when ``back_projection_fallback`` is set."""
        raise NotImplementedError

    # -- inputs longer than the model takes ----------------------------------------------------------------------
    def split_long(self, example, tokenizer, limit: int) -> list | None:
        """Pieces of an example whose encoding exceeds ``limit`` sub-tokens, each within it (None: the task cannot
        split; the caller reports an error).  Predictions of the pieces are joined by ``join_predictions``."""
        return None

    def join_predictions(self, predictions: list) -> Any:
        raise NotImplementedError

    # -- serving: raw text in, JSON out (xlt.serve) -------------------------------------------------------------
    def serving_spec(self) -> dict:
        """How a runtime reads raw input and turns logits into JSON without torch (stored in an export's metadata):
        ``{"input": "words" | "pair", "outputs": {logits name: {"level": "sentence" | "token", "labels": label
        vocabulary name, "key": JSON key, "spans": token labels are BIO spans}}}``."""
        raise NotImplementedError

    def from_serving(self, prediction: dict) -> Any:
        """A labelled serving prediction (``xlt.serve.decode.labelled``) -> this task's prediction, for ``score``."""
        raise NotImplementedError


TASKS = registry.TASKS


def get_task(name: str, **options: Any) -> Task:
    return TASKS.get(name)(**options)


def task_of_dataset(dataset: str) -> Task:
    from xlt.data.datasets import get_dataset

    ds = get_dataset(dataset)
    return get_task(ds.task, **ds.task_options)
