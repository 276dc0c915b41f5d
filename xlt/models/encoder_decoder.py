"""BART-style NLU over an encoder + ``TiedDecoder`` (TALL, Xia et al. 2021, after Lewis et al. 2020): the encoder
reads the utterance; the decoder reads the same utterance with its language token in place of ``<s>`` (causal
self-attention, cross-attention to the encoder); the decoder's states — (B, T, H), aligned with the encoder's
positions, position 0 being the language token — feed the task's heads.  Sentence-level heads pool over all states
but the last (``</s>``), as the paper averages "all but the last" decoder states; word-level heads read the states at
each word's sub-tokens as for a plain encoder.

``language`` is the index (in the decoder's language list) of the language the inputs are in: the source language
while training, the test language when evaluating (set by the ``tall`` method for each language); a batch may
instead carry ``language`` (B,), one index per row (serving: requests in several languages in one batch).
"""
from __future__ import annotations

import torch
from torch import nn

from xlt.models.decoder import TiedDecoder


class EncoderDecoderTaskModel(nn.Module):
    def __init__(self, encoder: nn.Module, decoder: TiedDecoder, heads: nn.Module, language: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.heads = heads
        self.language = language

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        ids, mask = batch["input_ids"], batch["attention_mask"]
        lang = batch.get("language")  # (B,) per-row language indices (serving); else every row in self.language
        if lang is None:
            lang = torch.full((ids.shape[0],), self.language, dtype=torch.long, device=ids.device)
        _, hidden, pool_mask = decoder_states(self.encoder, self.decoder, ids, mask, lang)
        return {"hidden": hidden, **self.heads(hidden, pool_mask)}


def decoder_states(encoder: nn.Module, decoder: TiedDecoder, ids: torch.Tensor, mask: torch.Tensor,
                   lang: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(B, T) ids and mask, (B,) language indices -> encoder states (B, T, H), decoder states (B, T, H) aligned with
    them (position 0 = the language token) and the (B, T) pooling mask: ``mask`` without each row's ``</s>``."""
    memory = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
    hidden = decoder(encoder.get_input_embeddings(), lang, ids[:, 1:], memory, mask, token_mask=mask[:, 1:])
    pool_mask = mask.clone()
    pool_mask[torch.arange(ids.shape[0], device=ids.device), mask.sum(1) - 1] = 0  # each row's </s>
    return memory, hidden, pool_mask
