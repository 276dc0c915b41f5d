"""Unsupervised-MT objectives on a shared encoder + ``TiedDecoder`` (Lample et al. ICLR 2018, "Unsupervised machine
translation using monolingual corpora only", and 2018b "Phrase-based & neural unsupervised MT"; used by TALL, Xia
et al. 2021):

- denoising auto-encoding (``DenoisingAutoEncoder``): the encoder reads a corrupted sentence (``add_noise``: tokens
  dropped, locally shuffled, optionally blanked), the decoder, started with the sentence's own language token,
  reconstructs the clean sentence (cross-entropy);
- on-the-fly back-translation (``BackTranslation``): the current model translates the sentence into the other
  language (greedy, eval mode, no gradient, output restricted to that language's tokens), then the encoder reads
  that translation and the decoder reconstructs the original.

Batches (built by the stage): ``input_ids`` / ``attention_mask`` (B, S) what the encoder reads (for back-translation
the clean sentence to translate first), ``targets`` (B, L) the clean sentence without its first special token
(ends with ``</s>``; ``pad`` after), ``lang`` (B,) the language of the sentence, ``other`` (B,) the language to
back-translate into.  Both return ``{"loss", "<name>_loss", "<name>_accuracy"}``; noise is drawn from a seeded
generator, so a resumed run corrupts exactly as an uninterrupted one.
"""
from __future__ import annotations

import torch
from torch import nn

from xlt.models.decoder import TiedDecoder, greedy_decode


def add_noise(ids: list[int], generator: torch.Generator, drop: float = 0.1, shuffle: float = 3.0,
              blank: float = 0.0, blank_id: int = 0) -> list[int]:
    """Corrupt the inner tokens of ``ids`` (its first and last, the special tokens, stay): each dropped with
    probability ``drop`` (at least one kept), then shuffled so that no token moves more than ``shuffle`` - 1 places
    (Lample et al.: sort by position + U(0, k)), then each replaced by ``blank_id`` with probability ``blank``.
    Sub-tokens, not words, are the unit (as in XLM): Japanese has no spaces to find words by."""
    head, inner, tail = ids[:1], ids[1:-1], ids[-1:]
    if not inner:
        return list(ids)
    keep = torch.rand(len(inner), generator=generator) >= drop
    if not bool(keep.any()):
        keep[int(torch.randint(len(inner), (1,), generator=generator))] = True
    inner = [t for t, k in zip(inner, keep.tolist()) if k]
    if shuffle > 1:
        scores = torch.arange(len(inner), dtype=torch.float) + torch.rand(len(inner), generator=generator) * shuffle
        inner = [inner[i] for i in scores.argsort().tolist()]
    if blank > 0:
        hit = (torch.rand(len(inner), generator=generator) < blank).tolist()
        inner = [blank_id if h else t for t, h in zip(inner, hit)]
    return head + inner + tail


def reconstruction_loss(decoder: TiedDecoder, embeddings: nn.Embedding, memory: torch.Tensor,
                        memory_mask: torch.Tensor, lang: torch.Tensor, targets: torch.Tensor, pad: int
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forced cross-entropy of ``targets`` (B, L) given the language token and the targets shifted right;
    returns (mean loss over real target tokens, token accuracy)."""
    prefix = targets[:, :-1]
    hidden = decoder(embeddings, lang, prefix, memory, memory_mask, token_mask=prefix != pad)  # (B, L, H)
    real = targets != pad
    logits = decoder.logits(embeddings, hidden[real])  # only real positions: V-wide scores are costly
    gold = targets[real]
    loss = nn.functional.cross_entropy(logits, gold)
    return loss, (logits.argmax(-1) == gold).float().mean()


class DenoisingAutoEncoder(nn.Module):
    """DAE: ``forward(encoder, batch, decoder)`` with ``input_ids`` already corrupted by ``add_noise``."""

    def __init__(self, pad: int) -> None:
        super().__init__()
        self.pad = pad

    def forward(self, encoder: nn.Module, batch: dict, decoder: TiedDecoder) -> dict[str, torch.Tensor]:
        memory = decoder.memory(encoder, batch["input_ids"], batch["attention_mask"])
        loss, acc = reconstruction_loss(decoder, encoder.get_input_embeddings(), memory, batch["attention_mask"],
                                        batch["lang"], batch["targets"], self.pad)
        return {"loss": loss, "dae_loss": loss.detach(), "dae_accuracy": acc.detach()}


class BackTranslation(nn.Module):
    """On-the-fly back-translation.  ``allowed`` (languages, V) bool: the ids each language may generate."""

    def __init__(self, bos: int, eos: int, pad: int, allowed: torch.Tensor, max_length: int) -> None:
        super().__init__()
        self.bos, self.eos, self.pad, self.max_length = bos, eos, pad, max_length
        self.register_buffer("allowed", allowed, persistent=False)

    @torch.no_grad()
    def translate(self, encoder: nn.Module, decoder: TiedDecoder, input_ids: torch.Tensor,
                  attention_mask: torch.Tensor, into: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy translation of (B, S) sentences into languages ``into`` (B,), in eval mode; returns the encoder
        input for the reverse direction: (B, S') ids ``<s> … </s>`` and their mask.  Output length is capped at
        ~1.5 × the input's (+ 5) and at ``max_length``."""
        modes = encoder.training, decoder.training
        encoder.eval()
        decoder.eval()
        try:
            memory = decoder.memory(encoder, input_ids, attention_mask)
            limit = (attention_mask.sum(1) * 3 // 2 + 5).clamp(max=self.max_length)
            out = torch.full((len(into), int(limit.max())), self.pad, dtype=torch.long, device=into.device)
            for lang in into.unique():  # one language at a time: each decodes over its own tokens only
                rows = (into == lang).nonzero().squeeze(1)
                got = greedy_decode(decoder, encoder.get_input_embeddings(), into[rows], memory[rows],
                                    attention_mask[rows], self.eos, self.pad, limit[rows], self.allowed[into[rows]])
                out[rows, :got.shape[1]] = got
        finally:
            encoder.train(modes[0])
            decoder.train(modes[1])
        return sentences_from_generation(out, self.bos, self.eos, self.pad)

    def forward(self, encoder: nn.Module, batch: dict, decoder: TiedDecoder) -> dict[str, torch.Tensor]:
        ids, mask = self.translate(encoder, decoder, batch["input_ids"], batch["attention_mask"], batch["other"])
        memory = decoder.memory(encoder, ids, mask)
        loss, acc = reconstruction_loss(decoder, encoder.get_input_embeddings(), memory, mask, batch["lang"],
                                        batch["targets"], self.pad)
        return {"loss": loss, "bt_loss": loss.detach(), "bt_accuracy": acc.detach()}


def sentences_from_generation(out: torch.Tensor, bos: int, eos: int, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, L) generated ids (``eos`` then ``pad``, or cut) -> encoder input ``<s> tokens </s>`` (B, L + 2) + mask."""
    B, L = out.shape
    ids = torch.full((B, L + 2), pad, dtype=torch.long, device=out.device)
    mask = torch.zeros((B, L + 2), dtype=torch.long, device=out.device)
    for b in range(B):
        row = out[b][out[b] != pad].tolist()
        if eos in row:
            row = row[:row.index(eos)]
        seq = [bos] + row + [eos]
        ids[b, :len(seq)] = torch.tensor(seq, device=out.device)
        mask[b, :len(seq)] = 1
    width = int(mask.sum(1).max())
    return ids[:, :width], mask[:, :width]
