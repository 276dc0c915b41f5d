"""FILTER's fusion encoder (Fang et al., "FILTER: An Enhanced Fusion Method for Cross-lingual Language
Understanding", AAAI 2021) over any encoder family whose layer stack ``xlt.models.families`` reaches.

An input (side a) and its translation (side b) are embedded separately, each with positions counted from 0 (the
paper's language-specific position handling), encoded separately by the first ``m`` layers ("local"), concatenated
and encoded jointly by the next ``k`` layers ("fusion": every token attends to both sides), then split and encoded
separately again by the remaining L - m - k layers.  Every layer's weights are shared by both sides, so the model
has exactly the encoder's parameters.  m = L, k = 0 encodes each side alone (= translate-train's model); m = 0,
k = L is plain concatenation.  Without a pair, side a goes through every layer alone.

There are no segment embeddings and positions restart for each side, so self-attention is symmetric in the two
sides: a's output for (a, b) equals its output as the second input of (b, a).  The prediction for a target input
is read from its own side, so word-level labels are on its own words.
"""
from __future__ import annotations

import torch
from torch import nn

from xlt.models import TaskModel
from xlt.models.families import family_of


def fusion_encode(encoder: nn.Module, m: int, k: int, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  pair_input_ids: torch.Tensor | None = None, pair_attention_mask: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """input_ids/attention_mask (B, Ta), pair_* (B, Tb) -> hidden states (B, Ta, H) and (B, Tb, H) (None without a
    pair): m local layers per side, k fusion layers over the concatenation, the rest per side again."""
    family = family_of(encoder)
    layers = list(family.layers(encoder))
    a = family.embed(encoder, input_ids, attention_mask)  # positions from the start for each side
    if pair_input_ids is None:
        return family.run(encoder, layers, a, attention_mask), None
    b = family.embed(encoder, pair_input_ids, pair_attention_mask)
    local, fusion, rest = layers[:m], layers[m:m + k], layers[m + k:]
    a, b = family.run(encoder, local, a, attention_mask), family.run(encoder, local, b, pair_attention_mask)
    if fusion:
        both = torch.cat([attention_mask, pair_attention_mask], 1)
        # each side's positions from 0, as its embeddings: no distance depends on the other side's padding
        positions = torch.cat([torch.arange(a.shape[1]), torch.arange(b.shape[1])]).to(a.device)
        fused = family.run(encoder, fusion, torch.cat([a, b], 1), both, positions)
        a, b = fused[:, :a.shape[1]], fused[:, a.shape[1]:]
    return family.run(encoder, rest, a, attention_mask), family.run(encoder, rest, b, pair_attention_mask)


class FusionModel(TaskModel):
    """Task heads (shared by both sides) on the fusion encoder; attribute names as ``TaskModel``'s, so
    checkpoints load the same way."""

    def __init__(self, encoder: nn.Module, heads: nn.Module, local_layers: int, fusion_layers: int) -> None:
        super().__init__(encoder, heads)
        n_layers = len(family_of(encoder).layers(encoder))
        if local_layers < 0 or fusion_layers < 0 or local_layers + fusion_layers > n_layers:
            raise ValueError(f"FILTER needs 0 <= m, 0 <= k and m + k <= {n_layers} (the encoder's layers); got "
                             f"m={local_layers}, k={fusion_layers}")
        self.local_layers, self.fusion_layers = local_layers, fusion_layers

    def forward(self, batch: dict) -> dict:
        """Outputs of side a as ``TaskModel``'s; with a nested ``pair`` batch also ``out["pair"]``, the same outputs
        for side b (the translation), encoded jointly in the fusion layers."""
        pair = batch.get("pair")
        a, b = fusion_encode(self.encoder, self.local_layers, self.fusion_layers, batch["input_ids"],
                             batch["attention_mask"], pair["input_ids"] if pair else None,
                             pair["attention_mask"] if pair else None)
        out: dict = {"hidden": a, **self.heads(a, batch["attention_mask"])}
        if b is not None:
            out["pair"] = {"hidden": b, **self.heads(b, pair["attention_mask"])}
        return out
