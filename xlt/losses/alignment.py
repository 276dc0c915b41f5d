"""Sentence-embedding alignment (XeroAlign, Gritta & Iacobacci, Findings of ACL 2021): a distance between the
sentence embedding of an input and that of its translation, added to the task loss."""
from __future__ import annotations

import torch
from torch import nn

from xlt.errors import ConfigError


def alignment_loss(a: torch.Tensor, b: torch.Tensor, distance: str, reduction: str) -> torch.Tensor:
    """a, b: (B, H) sentence embeddings of inputs and their translations -> scalar distance, averaged over B.
    ``mse`` with ``mean`` averages the squared error over hidden dimensions too (``torch.nn.MSELoss``, as in the
    paper's code); ``sum`` sums over dimensions; ``cosine`` is 1 - cosine similarity."""
    if distance == "mse":
        squared = (a - b).pow(2)
        return squared.mean() if reduction == "mean" else squared.sum(-1).mean()
    if distance == "cosine":
        return (1 - nn.functional.cosine_similarity(a, b, dim=-1)).mean()
    raise ConfigError(f"options.distance must be mse or cosine, not {distance!r}")


class SentenceAlignmentLoss(nn.Module):
    def __init__(self, distance: str = "mse", reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in ("mean", "sum"):
            raise ConfigError(f"options.reduction must be mean or sum, not {reduction!r}")
        alignment_loss(torch.zeros(1, 2), torch.zeros(1, 2), distance, reduction)  # validate before any work
        self.distance, self.reduction = distance, reduction

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return alignment_loss(a, b, self.distance, self.reduction)
