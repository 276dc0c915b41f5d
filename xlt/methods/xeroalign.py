"""XeroAlign (Gritta & Iacobacci, Findings of ACL 2021): the task loss on source utterances plus a distance between
the sentence embedding of each source utterance and that of its translation, trained JOINTLY (the paper found that
aligning before or after task training both fail).  Translations need no labels; they come from any translator of
the translation layer (``translation.translator``, ``per_language``, ``file_tsv``), one pair per language in
``translation.languages``.  Only the source language is labelled; at test time the model is a plain encoder.

Options (``options:`` in the config):
- ``weight``: multiplier of the alignment loss;
- ``distance``: ``mse`` (the paper) or ``cosine`` (1 - cosine similarity);
- ``reduction``: ``mean`` averages the squared error over hidden dimensions, as ``torch.nn.MSELoss`` in the paper's
  code does (the term is then ~1e-3 of the task loss on e5-small); ``sum`` sums over dimensions (per sentence);
- ``pooling``: ``cls``, ``mean``, or ``""`` = the intent head's pooling (the paper aligns the classifier's vector).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from xlt.config import ConfigError
from xlt.methods import Method, register
from xlt.model import joint_loss, pool
from xlt.translate.pairs import training_pairs


@dataclass
class XeroAlignOptions:
    weight: float = 1.0
    distance: str = "mse"  # mse | cosine
    reduction: str = "mean"  # mean | sum over the hidden dimensions
    pooling: str = ""  # "" = model.pooling; cls | mean


def alignment_loss(a: torch.Tensor, b: torch.Tensor, distance: str, reduction: str) -> torch.Tensor:
    """a, b: (B, H) sentence embeddings of utterances and their translations -> scalar distance, averaged over B."""
    if distance == "mse":
        squared = (a - b).pow(2)
        return squared.mean() if reduction == "mean" else squared.sum(-1).mean()
    if distance == "cosine":
        return (1 - nn.functional.cosine_similarity(a, b, dim=-1)).mean()
    raise ConfigError(f"options.distance must be mse or cosine, not {distance!r}")


def train_examples(cfg, load_train, report: dict) -> list:
    opts: XeroAlignOptions = cfg.options
    if opts.reduction not in ("mean", "sum"):
        raise ConfigError(f"options.reduction must be mean or sum, not {opts.reduction!r}")
    alignment_loss(torch.zeros(1, 2), torch.zeros(1, 2), opts.distance, opts.reduction)  # validate before work
    return training_pairs(cfg, load_train(cfg.data.source_lang), cfg.translation.languages, report,
                          labelled=False)


def loss(model, batch: dict[str, torch.Tensor], opts: XeroAlignOptions) -> dict[str, torch.Tensor]:
    """Task loss on the source side (B utterances) + weight * distance(source, translation) embeddings."""
    out = model(batch["input_ids"], batch["attention_mask"])
    parts = joint_loss(out, batch)
    translated = model(batch["pair_input_ids"], batch["pair_attention_mask"])
    how = opts.pooling or getattr(model, "module", model).pooling  # DDP wraps the model
    src = pool(out["hidden"], batch["attention_mask"], how)
    tgt = pool(translated["hidden"], batch["pair_attention_mask"], how)
    align = alignment_loss(src, tgt, opts.distance, opts.reduction)
    return {**parts, "loss": parts["loss"] + opts.weight * align, "task_loss": parts["loss"].detach(),
            "align_loss": align.detach()}


register(Method("xeroalign", "task loss + distance between sentence embeddings of source utterances and their "
                "translations (Gritta & Iacobacci 2021)", train_examples, loss, options=XeroAlignOptions))
