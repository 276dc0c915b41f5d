"""Typed example records (one per task family) and the read report that every reader fills while it validates.

Every record has ``lang``, ``origin`` ("file:line", for error messages), ``reference`` (a human translation of each
of its text fields into the source language, where the data has one: xSID's ``# text-en``, the parallel English row
of XNLI / PAWS-X; used by the ``oracle`` translator) and ``translation`` (paired methods: the same example in
another language, its labels transferred, or UNKNOWN where none could be).  What the labels are, and how they move
across a translation, is the business of the task (``xlt.tasks``), not of these records.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol, Union

from xlt.errors import DataError

UNKNOWN_TAG = "?"  # a label no label set contains: encoded as "ignore" (no loss is taken on it)


@dataclass
class Utterance:
    """One intent + slot example.  ``slots`` holds one BIO tag per word."""

    words: list[str]
    slots: list[str]
    intent: str
    lang: str
    origin: str
    reference: list[str] | None = None
    translation: "Utterance | None" = None

    def __post_init__(self) -> None:
        if len(self.words) != len(self.slots):
            raise ValueError(f"{self.origin}: {len(self.words)} words but {len(self.slots)} tags")


@dataclass
class SentencePair:
    """One sentence-pair classification example (NLI: premise / hypothesis; paraphrase: sentence 1 / 2)."""

    text_a: str
    text_b: str
    label: str
    lang: str
    origin: str
    reference: list[str] | None = None
    translation: "SentencePair | None" = None


@dataclass
class TaggedSentence:
    """One token-classification example: a tag per word (BIO entity tags for NER, UPOS for POS)."""

    words: list[str]
    tags: list[str]
    lang: str
    origin: str
    reference: list[str] | None = None
    translation: "TaggedSentence | None" = None

    def __post_init__(self) -> None:
        if len(self.words) != len(self.tags):
            raise ValueError(f"{self.origin}: {len(self.words)} words but {len(self.tags)} tags")


Example = Union[Utterance, SentencePair, TaggedSentence]


class HasOrigin(Protocol):
    lang: str
    origin: str


__all__ = ["DataError", "Example", "ReadReport", "SentencePair", "TaggedSentence", "UNKNOWN_TAG", "Utterance"]


@dataclass
class ReadReport:
    """Counts of what a reader kept, repaired and skipped, with the first few ``file:line: problem`` lines."""

    path: str
    read: int = 0
    kept: int = 0
    skipped: Counter = field(default_factory=Counter)
    repaired: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    max_examples: int = 5
    first_skipped: dict[str, str] = field(default_factory=dict)  # kind -> its first "file:line: skipped (...)"

    def skip(self, line: int, kind: str, detail: str = "", path: str | None = None) -> None:
        """Count a skipped example; ``path``: the file the problem is in, when not ``self.path`` (xSID's train
        .text beside its .label)."""
        self.skipped[kind] += 1
        text = f"skipped ({kind}){': ' + detail if detail else ''}"
        where = f"{path or self.path}:{line}"
        self.first_skipped.setdefault(kind, f"{where}: {text}")
        if len(self.examples) < self.max_examples:
            self.examples.append(f"{where}: {text}")

    def repair(self, line: int, kind: str, count: int = 1) -> None:
        self.repaired[kind] += count
        self._example(line, f"repaired ({kind})")

    def _example(self, line: int, text: str) -> None:
        if len(self.examples) < self.max_examples:
            self.examples.append(f"{self.path}:{line}: {text}")

    def check_usable(self, max_skip_fraction: float = 0.5) -> None:
        """Fail fast: a file that yields nothing, or mostly garbage, is an error, not a warning."""
        n_skipped = sum(self.skipped.values())
        if self.kept == 0:
            raise DataError(f"{self.path}: no usable examples ({self.summary()})")
        if self.read and n_skipped / self.read > max_skip_fraction:
            raise DataError(f"{self.path}: {n_skipped} of {self.read} examples invalid; is this the right "
                            f"file/format? {self.summary()}")

    def summary(self) -> str:
        parts = [f"{self.path}: read {self.read}, kept {self.kept}"]
        if self.skipped:
            parts.append("skipped " + ", ".join(f"{k}={v}" for k, v in sorted(self.skipped.items())))
        if self.repaired:
            parts.append("repaired " + ", ".join(f"{k}={v}" for k, v in sorted(self.repaired.items())))
        text = "; ".join(parts)
        if self.examples:
            text += "\n  " + "\n  ".join(self.examples)
        return text

    def to_dict(self) -> dict:
        return {"path": self.path, "read": self.read, "kept": self.kept, "skipped": dict(self.skipped),
                "repaired": dict(self.repaired), "first_problems": self.examples}
