"""Masked language modelling (BERT, Devlin et al. 2019): 15 % of the non-special tokens are chosen; of those 80 %
become ``<mask>``, 10 % a random token, 10 % stay; the model predicts the original token at the chosen positions.

The head (dense -> GELU -> LayerNorm -> decoder) is owned by the loss module; the decoder's weight is the encoder's
input embedding matrix (tied, as in BERT), so with a trimmed vocabulary the softmax runs over the run's kept ids.
Masking draws from a ``torch.Generator`` seeded by (seed, step, process), so a resumed run masks exactly as an
uninterrupted one.
"""
from __future__ import annotations

import torch
from torch import nn

from xlt.core.batching import IGNORE


def mask_tokens(input_ids: torch.Tensor, attention_mask: torch.Tensor, special: torch.Tensor, mask_id: int,
                vocab_size: int, generator: torch.Generator, mask_prob: float = 0.15
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids, attention_mask (B, T); ``special`` (B, T) bool marks tokens never chosen.  Returns (masked
    input_ids, labels with IGNORE where no prediction is asked)."""
    candidates = attention_mask.bool() & ~special
    chosen = (torch.rand(input_ids.shape, generator=generator) < mask_prob) & candidates
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    action = torch.rand(input_ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator)
    masked = torch.where(chosen & (action < 0.8), torch.full_like(input_ids, mask_id), input_ids)
    masked = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, masked)
    return masked, labels


class MaskedLanguageModel(nn.Module):
    """The MLM objective: ``forward(encoder, batch)`` with batch ``input_ids`` (masked), ``attention_mask``,
    ``mlm_labels`` (B, T) -> {"loss", "mlm_loss", "mlm_accuracy"}."""

    def __init__(self, hidden: int, layer_norm_eps: float = 1e-12, embedding_size: int | None = None) -> None:
        """``embedding_size``: the input embeddings' width when it is not ``hidden`` (ELECTRA): the dense layer
        maps down to it, as ELECTRA's generator head does."""
        super().__init__()
        out = embedding_size or hidden
        self.dense = nn.Linear(hidden, out)
        self.norm = nn.LayerNorm(out, eps=layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(0))  # sized to the vocabulary by ``resize``

    @classmethod
    def for_encoder(cls, config) -> "MaskedLanguageModel":
        """The head for an encoder's ``config`` (its width, LayerNorm epsilon and embedding width)."""
        from xlt.models.families import layer_norm_eps

        return cls(config.hidden_size, layer_norm_eps(config), getattr(config, "embedding_size", None))

    def resize(self, vocab_size: int) -> "MaskedLanguageModel":
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        return self

    def logits(self, encoder: nn.Module, hidden: torch.Tensor, ids: torch.Tensor | None = None) -> torch.Tensor:
        """(N, H) hidden states -> (N, V) scores over the encoder's (possibly trimmed) vocabulary, or (N, len(ids))
        over the ids ``ids`` alone."""
        h = self.norm(nn.functional.gelu(self.dense(hidden)))
        weight, bias = encoder.get_input_embeddings().weight, self.bias
        if ids is not None:
            weight, bias = weight[ids], bias[ids]
        return h @ weight.T + bias

    def forward(self, encoder: nn.Module, batch: dict) -> dict[str, torch.Tensor]:
        # position_ids (B, T), when the batch brings its own (TLM's pairs, each side from 0); else the encoder's 0..T-1
        positions = {"position_ids": batch["position_ids"]} if "position_ids" in batch else {}
        hidden = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                         **positions).last_hidden_state
        labels = batch["mlm_labels"]
        chosen = labels != IGNORE
        if not bool(chosen.any()):
            zero = hidden.sum() * 0.0
            return {"loss": zero, "mlm_loss": zero.detach(), "mlm_accuracy": zero.detach()}
        logits = self.logits(encoder, hidden[chosen])  # only at the chosen positions: V-wide scores are costly
        loss = nn.functional.cross_entropy(logits, labels[chosen])
        accuracy = (logits.argmax(-1) == labels[chosen]).float().mean()
        return {"loss": loss, "mlm_loss": loss.detach(), "mlm_accuracy": accuracy.detach()}


def save_mlm_head(head: MaskedLanguageModel, folder, trim, full_vocab_size: int) -> dict:
    """The MLM head beside an exported encoder: ``mlm_head.safetensors`` (its bias over the FULL vocabulary: 0 for
    ids a trimmed run never used) + ``mlm_head.json``."""
    import json

    from safetensors.torch import save_file

    bias = head.bias.detach().cpu()
    if trim is not None:
        bias = trim.untrim_into(bias, torch.zeros(full_vocab_size))
    state = {"dense.weight": head.dense.weight, "dense.bias": head.dense.bias, "norm.weight": head.norm.weight,
             "norm.bias": head.norm.bias}
    save_file({**{k: v.detach().cpu().contiguous() for k, v in state.items()}, "bias": bias.contiguous()},
              str(folder / "mlm_head.safetensors"))
    (folder / "mlm_head.json").write_text(json.dumps({"kind": "bert_mlm_head", "tied_to": "input embeddings",
                                                      "hidden": int(head.dense.weight.shape[0])}))
    return {"mlm_head": "mlm_head.safetensors"}
