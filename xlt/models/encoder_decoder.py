"""BART-style NLU over an encoder + ``TiedDecoder`` (TALL, Xia et al. 2021, after Lewis et al. 2020): the encoder
reads the utterance; the decoder reads the same utterance with its language token in place of ``<s>`` (causal
self-attention, cross-attention to the encoder), and "the final hidden states of the decoder except the last one"
feed the task's heads (TALL, section 2).  That is BART's shifted read-out: the token at position t is represented by
the decoder state that has read the language token and the tokens before t, never the token's own raw,
language-specific embedding (Lewis et al. 2020, section 3).  So the (B, T, H) states the heads see are the decoder's
shifted one place right: word-level heads read them at each word's sub-token as for a plain encoder, and
sentence-level heads pool positions 1..(last), i.e. every decoder state but the last.

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
    """(B, T) ids and mask, (B,) language indices -> encoder states (B, T, H), the read-out (B, T, H) aligned with
    them (position t: the decoder state that has read the language token and ids[1:t]; position 0, which holds no
    word, repeats the first state) and the (B, T) pooling mask: ``mask`` without position 0, so that pooling covers
    every decoder state but the last (the one that has read ``</s>``)."""
    memory = decoder.memory(encoder, ids, mask)
    states = decoder(encoder.get_input_embeddings(), lang, ids[:, 1:], memory, mask, token_mask=mask[:, 1:])
    hidden = torch.cat([states[:, :1], states[:, :-1]], dim=1)  # shifted: token t reads the state before it
    pool_mask = mask.clone()
    pool_mask[:, 0] = 0
    return memory, hidden, pool_mask
