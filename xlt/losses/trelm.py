"""TreLM's objectives in one unified formulation (Li et al., ICLR 2021 submission, github agcbi2017/TreLM): every row
of a batch is (input ids, input language, output language, an order that maps each output position to an input
position, the ids to predict at output positions).

- MLM row: the masked sentence; order = identity; predict the masked tokens;
- CdLM row (cross-lingual LM): the source sentence (plus a placeholder token); order = the word alignment into the
  target sentence (unaligned target positions -> the placeholder); predict every target token.

So MLM and CdLM rows train in one batch through one ``xlt.models.trilayer.TreLMEncoder`` forward and one MLM head
(``lm_head``, tied to the input embeddings, shared by every objective; the stage passes it by name).
"""
from __future__ import annotations

import torch
from torch import nn

from xlt.core.batching import IGNORE
from xlt.losses.mlm import MaskedLanguageModel


class TreLMObjective(nn.Module):
    """Batch: ``input_ids`` / ``attention_mask`` (B, S), ``lang`` / ``out_lang`` (B,), ``order`` / ``order_mask``
    (B, T), ``labels`` (B, T) (IGNORE where nothing is predicted), ``cdlm_row`` (B,) bool.  Returns ``loss`` (mean
    cross-entropy over every predicted token) and, by row kind present, ``<name>_{cdlm,mlm}_{loss,accuracy}``;
    ``<name>_accuracy`` is over all predicted tokens.  No parameters of its own."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def forward(self, encoder: nn.Module, batch: dict, lm_head: MaskedLanguageModel) -> dict[str, torch.Tensor]:
        hidden = encoder(batch["input_ids"], batch["attention_mask"], batch["lang"], out_lang=batch["out_lang"],
                         order=batch["order"], order_mask=batch["order_mask"])
        labels = batch["labels"]
        chosen = labels != IGNORE
        if not bool(chosen.any()):
            zero = hidden.sum() * 0.0
            return {"loss": zero, f"{self.name}_accuracy": zero.detach()}
        logits = lm_head.logits(encoder, hidden[chosen])
        per_token = nn.functional.cross_entropy(logits, labels[chosen], reduction="none")
        right = (logits.argmax(-1) == labels[chosen]).float()
        out = {"loss": per_token.mean(), f"{self.name}_accuracy": right.mean().detach()}
        row_of_token = batch["cdlm_row"].unsqueeze(1).expand_as(labels)[chosen]
        for kind, rows in (("cdlm", row_of_token), ("mlm", ~row_of_token)):
            if bool(rows.any()):
                out[f"{self.name}_{kind}_loss"] = per_token[rows].mean().detach()
                out[f"{self.name}_{kind}_accuracy"] = right[rows].mean().detach()
        return out
