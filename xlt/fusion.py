"""FILTER's fusion encoder (Fang et al., "FILTER: An Enhanced Fusion Method for Cross-lingual Language
Understanding", AAAI 2021) over any BERT-style ``transformers`` encoder (``.embeddings`` + ``.encoder.layer``).

An utterance (side a) and its translation (side b) are embedded separately, each with positions counted from 0 (the
paper's language-specific position handling), encoded separately by the first ``m`` layers ("local"), concatenated
and encoded jointly by the next ``k`` layers ("fusion": every token attends to both sides), then split and encoded
separately again by the remaining L - m - k layers.  Every layer's weights are shared by both sides, so the model
has exactly the encoder's parameters.  m = L, k = 0 encodes each side alone (= translate-train's model); m = 0,
k = L is plain concatenation.  Without a pair, side a goes through every layer alone.

There are no segment embeddings and positions restart for each side, so self-attention is symmetric in the two
sides: a's output for (a, b) equals its output as the second input of (b, a).  The prediction for a target
utterance is read from its own side, so its slot tags are on its own tokens.
"""
from __future__ import annotations

import torch
from torch import nn
from transformers.masking_utils import create_bidirectional_mask

from xlt.model import joint_loss, pool


def _run(encoder: nn.Module, layers, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    # the attention implementation's own mask format (eager: additive 4-D; sdpa: boolean or None)
    mask = create_bidirectional_mask(config=encoder.config, inputs_embeds=hidden, attention_mask=attention_mask)
    for layer in layers:
        hidden = layer(hidden, mask)
        hidden = hidden[0] if isinstance(hidden, tuple) else hidden
    return hidden


def fusion_encode(encoder: nn.Module, m: int, k: int, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  pair_input_ids: torch.Tensor | None = None, pair_attention_mask: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """input_ids/attention_mask (B, Ta), pair_* (B, Tb) -> hidden states (B, Ta, H) and (B, Tb, H) (None without a
    pair): m local layers per side, k fusion layers over the concatenation, the rest per side again."""
    layers = list(encoder.encoder.layer)
    a = encoder.embeddings(input_ids=input_ids)  # positions 0.. for each side
    if pair_input_ids is None:
        return _run(encoder, layers, a, attention_mask), None
    b = encoder.embeddings(input_ids=pair_input_ids)
    local, fusion, rest = layers[:m], layers[m:m + k], layers[m + k:]
    a, b = _run(encoder, local, a, attention_mask), _run(encoder, local, b, pair_attention_mask)
    if fusion:
        fused = _run(encoder, fusion, torch.cat([a, b], 1), torch.cat([attention_mask, pair_attention_mask], 1))
        a, b = fused[:, :a.shape[1]], fused[:, a.shape[1]:]
    return _run(encoder, rest, a, attention_mask), _run(encoder, rest, b, pair_attention_mask)


class FilterModel(nn.Module):
    """Joint intent + slot heads (shared by both sides) on the fusion encoder.  Attribute names match
    ``JointModel`` (``encoder``, ``intent_head``, ``slot_head``), so checkpoints load the same way."""

    def __init__(self, encoder: nn.Module, n_intents: int, n_slots: int, local_layers: int, fusion_layers: int,
                 pooling: str = "mean", dropout: float = 0.1) -> None:
        super().__init__()
        n_layers = len(encoder.encoder.layer)
        if local_layers < 0 or fusion_layers < 0 or local_layers + fusion_layers > n_layers:
            raise ValueError(f"FILTER needs 0 <= m, 0 <= k and m + k <= {n_layers} (the encoder's layers); got "
                             f"m={local_layers}, k={fusion_layers}")
        self.encoder = encoder
        self.local_layers, self.fusion_layers = local_layers, fusion_layers
        self.pooling = pooling
        hidden = encoder.config.hidden_size
        self.dropout = nn.Dropout(dropout)
        self.intent_head = nn.Linear(hidden, n_intents)
        self.slot_head = nn.Linear(hidden, n_slots)

    def _heads(self, hidden: torch.Tensor, mask: torch.Tensor, prefix: str) -> dict[str, torch.Tensor]:
        sentence = pool(hidden, mask, self.pooling)
        return {f"{prefix}hidden": hidden, f"{prefix}sentence": sentence,
                f"{prefix}intent_logits": self.intent_head(self.dropout(sentence)),
                f"{prefix}slot_logits": self.slot_head(self.dropout(hidden))}

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, pair_input_ids: torch.Tensor | None = None,
                pair_attention_mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Outputs of side a as JointModel's (hidden (B, Ta, H), sentence (B, H), intent_logits (B, n_intents),
        slot_logits (B, Ta, n_slots)); with a pair also the same for side b, prefixed ``pair_``."""
        a, b = fusion_encode(self.encoder, self.local_layers, self.fusion_layers, input_ids, attention_mask,
                             pair_input_ids, pair_attention_mask)
        out = self._heads(a, attention_mask, "")
        if b is not None:
            out.update(self._heads(b, pair_attention_mask, "pair_"))
        return out


def paired_task_loss(out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor],
                     target_weight: float) -> dict[str, torch.Tensor]:
    """L_src + λ·L_tgt: the joint intent + slot loss on side a (gold source labels) and on side b (the translation:
    the source intent, projected slot tags; words whose tags are unknown carry no loss)."""
    src = joint_loss(out, batch)
    if target_weight == 0:
        return {**src, "source_loss": src["loss"].detach()}
    pair_out = {k[5:]: v for k, v in out.items() if k.startswith("pair_")}
    pair_batch = {k[5:]: v for k, v in batch.items() if k.startswith("pair_")}
    tgt = joint_loss(pair_out, pair_batch)
    return {"loss": src["loss"] + target_weight * tgt["loss"], "source_loss": src["loss"].detach(),
            "target_loss": tgt["loss"].detach()}


def self_teaching_kl(out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor],
                     temperature: float = 1.0) -> torch.Tensor:
    """KL(p_teacher ‖ p_student) on the translated side (FILTER's self-teaching loss): intents (B, n_intents) and
    slots at every translated word's slot-carrying sub-token (``pair_soft_mask``), each averaged, then summed;
    scaled by T² as in distillation so its gradient does not shrink with the temperature."""
    kl = nn.functional.kl_div
    log_intent = (out["pair_intent_logits"] / temperature).log_softmax(-1)
    intent = kl(log_intent, batch["pair_soft_intent"], reduction="batchmean")
    mask = batch["pair_soft_mask"]
    log_slots = (out["pair_slot_logits"][mask] / temperature).log_softmax(-1)
    slots = kl(log_slots, batch["pair_soft_slots"][mask], reduction="batchmean")
    return (intent + slots) * temperature ** 2
