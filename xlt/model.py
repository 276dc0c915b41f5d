"""Joint intent + slot model: a BERT-style encoder, an intent head on a pooled sentence vector and a slot head on
every token (trained and read only at each word's slot-carrying sub-token, see ``xlt.features``).

This is the standard joint model of the cross-lingual NLU literature (e.g. the zero-shot baselines of xSID,
van der Goot et al. 2021, and of XeroAlign, Gritta & Iacobacci 2021).
"""
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


class JointModel(nn.Module):
    def __init__(self, encoder: nn.Module, n_intents: int, n_slots: int, pooling: str = "mean",
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        self.pooling = pooling
        hidden = encoder.config.hidden_size
        self.dropout = nn.Dropout(dropout)
        self.intent_head = nn.Linear(hidden, n_intents)
        self.slot_head = nn.Linear(hidden, n_slots)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """input_ids, attention_mask: (B, T).  Returns hidden (B, T, H), sentence (B, H),
        intent_logits (B, n_intents) and slot_logits (B, T, n_slots)."""
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        sentence = pool(hidden, attention_mask, self.pooling)
        return {"hidden": hidden, "sentence": sentence,
                "intent_logits": self.intent_head(self.dropout(sentence)),
                "slot_logits": self.slot_head(self.dropout(hidden))}


def joint_loss(out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Cross-entropy on intents plus token-level cross-entropy on slot-carrying sub-tokens (others ignored)."""
    intent = nn.functional.cross_entropy(out["intent_logits"], batch["intent_labels"], ignore_index=-100)
    logits = out["slot_logits"]
    slot = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["slot_labels"].reshape(-1),
                                       ignore_index=-100)
    return {"loss": intent + slot, "intent_loss": intent.detach(), "slot_loss": slot.detach()}


def task_loss(model: "JointModel", batch: dict[str, torch.Tensor], options: object = None) -> dict[str, torch.Tensor]:
    """The plain intent + slot loss of a batch (the loss of zero-shot, translate-train, multi-language, ...)."""
    return joint_loss(model(batch["input_ids"], batch["attention_mask"]), batch)
