"""Two steps of VecMap (Artetxe et al.; github artetxem/vecmap, ``map_embeddings.py``):

- ``similarity_seed``: a seed dictionary without a discriminator and without shared strings (ACL 2018, "A robust
  self-learning method for fully unsupervised cross-lingual mappings of word embeddings").  Two isomorphic spaces
  have the same distribution of similarities, so each word is described by its SORTED similarities to the most
  frequent words and matched to the word of the other language with the nearest description.  The seed is noisy
  (on the synthetic language: 5-14 % right); MUSE's Procrustes refinement (``embedding_map.refine``) grows it.
- ``Whitener``: each space's covariance to the identity (AAAI 2018), so that an orthogonal map can reach what only a
  general linear one could before.

Why here: MUSE's adversarial game needs ~1M-example epochs and, on this machine's corpora, found nothing
(benchmarks/results/trelm.json, docs/benchmarks/synthetic.md).  Rows are words, most frequent first.
"""
from __future__ import annotations

import torch

from xlt.align.embedding_map import Normaliser, knn_mean_similarity


class Whitener:
    """x -> unit(x C^(-1/2)), C the covariance of the rows it was fitted on (VecMap's whitening step; Artetxe et al.,
    AAAI 2018, "Generalizing and improving bilingual word embedding mappings...").  Two spaces related by any
    invertible linear map are related by an orthogonal one once both are whitened, so an orthogonal map (Procrustes
    and its refinement) can then reach what only a general linear map reached before."""

    def __init__(self, rows: torch.Tensor, eps: float = 1e-6) -> None:
        values, vectors = torch.linalg.eigh((rows.T @ rows / len(rows)).double())
        self.matrix = (vectors * values.clamp_min(eps).rsqrt()) @ vectors.T

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize((x.double() @ self.matrix).float(), dim=1)


def similarity_seed(source: torch.Tensor, target: torch.Tensor, words: int = 4000, k: int = 10) -> torch.Tensor:
    """(n, 2) (source row, target row) seed pairs: each side's ``words`` most frequent rows described by the sorted
    rows of sqrt(X Xᵀ) (the matrix square root of the Gram matrix, as VecMap), nearest descriptions under CSLS in
    both directions."""
    def descriptions(x: torch.Tensor) -> torch.Tensor:
        u, s, _ = torch.linalg.svd(x.double(), full_matrices=False)
        described = ((u * s) @ u.T).sort(dim=1).values.float()
        return Normaliser(described)(described)

    n = min(words, len(source), len(target))
    xs, zs = descriptions(source[:n]), descriptions(target[:n])
    sim = xs @ zs.T
    sim = sim - knn_mean_similarity(xs, zs, k).unsqueeze(1) / 2 - knn_mean_similarity(zs, xs, k).unsqueeze(0) / 2
    forward = torch.stack([torch.arange(n), sim.argmax(1)], dim=1)
    backward = torch.stack([sim.argmax(0), torch.arange(n)], dim=1)
    return torch.cat([forward, backward])
