"""Backbones and task models.  A task model is a backbone (a BERT-style ``transformers`` encoder) plus the task's
heads (``Task.heads``): ``model(batch) -> {"hidden": (B, T, H), "sentence": (B, H), <the task's logits>}``.
``FusionModel`` (``xlt.models.fusion``) encodes a batch together with its nested ``pair`` (FILTER)."""
from __future__ import annotations

import torch
from torch import nn


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, how: str) -> torch.Tensor:
    """(B, T, H) hidden states -> (B, H) sentence vectors by ``mean`` over real tokens or the ``cls`` token."""
    if how == "cls":
        return hidden[:, 0]
    if how == "mean":
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    raise ValueError(f"pooling must be 'mean' or 'cls', not {how!r}")


class TaskModel(nn.Module):
    """Encoder + task heads; the plain model of zero-shot, translate-train/test, multi-language and XeroAlign."""

    def __init__(self, encoder: nn.Module, heads: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.heads = heads

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """(B, T) ids and mask -> (B, T, H) last hidden states."""
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        """Reads ``input_ids`` / ``attention_mask`` (B, T); a nested ``pair`` is ignored (see ``FusionModel``)."""
        hidden = self.encode(batch["input_ids"], batch["attention_mask"])
        return {"hidden": hidden, **self.heads(hidden, batch["attention_mask"])}
