"""Shared by the word-level tasks (intent_slot slots, token_classification tags): sub-word encoding of pre-split
words, and reading per-word outputs.

Each word's label is trained on and read from ONE sub-token, the first piece of the word that is not a lone "▁"
(``xlt.serve.words.align_words``, torch-free so that the exported runtime encodes exactly as training did); reading
the slot from a lone "▁" gave slot F1 0.0 on Japanese in a trial run.
"""
from __future__ import annotations

import torch

from xlt.core.batching import IGNORE, Encoded
from xlt.errors import DataError
from xlt.serve.words import align_words  # torch-free: the exported runtime encodes with it too


def encode_words(tokenizer, words: list[str], origin: str) -> tuple[list[int], list[int]]:
    try:
        return align_words(tokenizer, words)
    except DataError as err:
        raise DataError(f"{origin}: {err}") from None


def word_label_tensor(items: list[Encoded], key: str, seq_len: int) -> torch.Tensor:
    """(B, T) label ids at each word's label-carrying sub-token, IGNORE elsewhere."""
    rows = []
    for e in items:
        row = [IGNORE] * seq_len
        if e.word_positions:  # an item without words carries no word labels (as before: not checked)
            for pos, label in zip(e.word_positions, e.labels[key], strict=True):
                row[pos] = label
        rows.append(row)
    return torch.tensor(rows, dtype=torch.long).view(len(items), seq_len)  # (0, T) when there are no items


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """logits (N, C), labels (N,) with IGNORE -> mean cross-entropy over labelled rows; 0 (not NaN) when no row is
    labelled (a translated side whose labels were all lost), so such a batch teaches nothing instead of NaN."""
    # the summed loss over the count of labelled rows: the same bits as reduction="mean" (forward and gradient,
    # checked by tests/test_batching.py), without asking the device whether any row is labelled -- that question
    # made the host wait for a GPU at every step
    labelled = (labels != IGNORE).sum().clamp(min=1)
    return torch.nn.functional.cross_entropy(logits, labels, ignore_index=IGNORE, reduction="sum") / labelled


def token_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """logits (B, T, C), labels (B, T) with IGNORE -> mean cross-entropy over labelled sub-tokens."""
    return cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def word_argmax(logits: torch.Tensor, batch: dict) -> list[list[int]]:
    """Per item, the argmax label id of each word (read at its label-carrying sub-token)."""
    positions = batch["word_positions"]
    word_logits = torch.gather(logits, 1, positions.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))
    ids = word_logits.argmax(-1).cpu()
    counts = batch["word_mask"].sum(1).tolist()
    return [ids[b, :n].tolist() for b, n in enumerate(counts)]
