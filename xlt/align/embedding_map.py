"""Cross-lingual alignment of word-embedding spaces without a dictionary (MUSE: Conneau et al. ICLR 2018, "Word
translation without parallel data"), as TreLM uses it to map target-language word vectors into an English model's
input-embedding space:

- ``adversarial_map``: a linear map W (initialised to the identity) learns to fool a discriminator that tells mapped
  source vectors from target vectors (the most frequent words of each side); after every update W is pulled back
  towards the orthogonal matrices, W <- (1 + β) W - β (W Wᵀ) W;
- ``csls`` retrieval (cross-domain similarity local scaling): 2 cos(Wx, y) - r_T(Wx) - r_S(y), r = the mean cosine
  to the k nearest neighbours in the other space, which penalises hubs;
- ``build_dictionary`` + ``procrustes``: refinement — a dictionary induced by CSLS among the most frequent words
  (mutual nearest neighbours), then the orthogonal W minimising ‖WX - Y‖ on it (W = UVᵀ, SVD of YᵀX), repeated;
- ``heldout_anchor_precision``: a diagnostic of isomorphism — maps fitted on half of a seed dictionary
  (Procrustes, and unconstrained ``least_squares``) retrieving the other half;
- ``precision_at_1``: word translation accuracy on a test dictionary with CSLS (MUSE's evaluation), and
  ``mean_cosine``: MUSE's unsupervised model-selection criterion.

Rows of the matrices are words, most frequent first; every function works on CPU tensors of shape (words, dim).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from xlt.config import positive, ranged


def _unit(x: torch.Tensor) -> torch.Tensor:
    return nn.functional.normalize(x, dim=-1)


class Normaliser:
    """MUSE's "renorm,center,renorm", with the centre fitted on one matrix and applied to any vector of its space."""

    def __init__(self, matrix: torch.Tensor) -> None:
        self.centre = torch.nn.functional.normalize(matrix, dim=1).mean(0, keepdim=True)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(torch.nn.functional.normalize(x, dim=1) - self.centre, dim=1)


def orthogonalize(W: torch.Tensor, beta: float) -> torch.Tensor:
    """One step of W <- (1 + β) W - β (W Wᵀ) W (MUSE's update keeping W close to orthogonal)."""
    return (1 + beta) * W - beta * (W @ W.T) @ W


def knn_mean_similarity(queries: torch.Tensor, keys: torch.Tensor, k: int, chunk: int = 4096) -> torch.Tensor:
    """(Q,) mean cosine of each query to its k nearest keys (both sides unit-normalised here)."""
    q, keys = _unit(queries), _unit(keys)
    out = []
    for start in range(0, len(q), chunk):
        out.append((q[start:start + chunk] @ keys.T).topk(min(k, len(keys)), dim=1).values.mean(1))
    return torch.cat(out)


def csls(mapped: torch.Tensor, target: torch.Tensor, k: int = 10, rows: torch.Tensor | None = None,
         r_target: torch.Tensor | None = None) -> torch.Tensor:
    """(len(rows), T) CSLS scores of the mapped source words ``rows`` (all by default) against every target word."""
    rows = torch.arange(len(mapped)) if rows is None else rows
    r_src = knn_mean_similarity(mapped[rows], target, k)
    r_tgt = knn_mean_similarity(target, mapped, k) if r_target is None else r_target
    return 2 * _unit(mapped[rows]) @ _unit(target).T - r_src.unsqueeze(1) - r_tgt.unsqueeze(0)


def build_dictionary(mapped: torch.Tensor, target: torch.Tensor, max_rank: int = 15000, k: int = 10
                     ) -> torch.Tensor:
    """(n, 2) pairs (source row, target row): mutual CSLS nearest neighbours among the ``max_rank`` most frequent
    words of each side."""
    s, t = mapped[:max_rank], target[:max_rank]
    scores = csls(s, t, k)
    s2t = scores.argmax(1)
    t2s = scores.argmax(0)
    mutual = t2s[s2t] == torch.arange(len(s))
    rows = torch.arange(len(s))[mutual]
    return torch.stack([rows, s2t[mutual]], dim=1)


def procrustes(source: torch.Tensor, target: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """The orthogonal W minimising Σ ‖W x_i - y_j‖² over the dictionary ``pairs``: W = U Vᵀ, U Σ Vᵀ = svd(Yᵀ X)."""
    X, Y = source[pairs[:, 0]], target[pairs[:, 1]]
    U, _, Vt = torch.linalg.svd(Y.T @ X)
    return U @ Vt


def least_squares(source: torch.Tensor, target: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """The unconstrained linear W minimising Σ ‖W x_i - y_j‖² over ``pairs`` (a diagnostic next to Procrustes: if even
    this map cannot relate the two spaces on held-out pairs, no orthogonal one can)."""
    X, Y = source[pairs[:, 0]], target[pairs[:, 1]]
    return torch.linalg.lstsq(X, Y).solution.T


def heldout_anchor_precision(source: torch.Tensor, target: torch.Tensor, pairs: torch.Tensor, k: int = 10
                             ) -> dict:
    """Are the two spaces linearly related at all?  Fit on the even-numbered anchor pairs, then retrieve the
    odd-numbered ones: P@1 (CSLS over every target row) of each held-out source row landing on its own target row,
    for the orthogonal (Procrustes) and the unconstrained (least squares) map."""
    fit, test = pairs[0::2], pairs[1::2]
    out: dict = {"anchors_fit": len(fit), "anchors_test": len(test)}
    if len(fit) == 0 or len(test) == 0:
        return out
    gold = {i: {int(t)} for i, t in enumerate(test[:, 1])}
    for name, fit_map in (("procrustes", procrustes), ("least_squares", least_squares)):
        W = fit_map(source, target, fit)
        out[f"{name}_precision_at_1"] = precision_at_1(source[test[:, 0]] @ W.T, target, gold, k)
    return out


def precision_at_1(mapped: torch.Tensor, target: torch.Tensor, test: dict[int, set[int]], k: int = 10) -> float:
    """Share of the test dictionary's source words whose CSLS nearest target word is one of their translations."""
    rows = torch.tensor(sorted(test))
    if len(rows) == 0:
        return 0.0
    best = csls(mapped, target, k, rows).argmax(1).tolist()
    return sum(b in test[r] for r, b in zip(rows.tolist(), best)) / len(rows)


def mean_cosine(mapped: torch.Tensor, target: torch.Tensor, words: int = 10000, k: int = 10) -> float:
    """MUSE's validation criterion: mean cosine of the CSLS translations of the ``words`` most frequent source
    words (no dictionary needed)."""
    s = mapped[:words]
    best = csls(s, target, k).argmax(1)
    return float((_unit(s) * _unit(target[best])).sum(1).mean())


@dataclass
class AdversarialSettings:
    epochs: int = 5  # epochs of MUSE's adversarial game (0: skip the adversarial map)
    epoch_size: int = positive(100_000)  # examples per epoch (MUSE: 1M; this machine has 2 cores)
    batch_size: int = positive(32)  # words per adversarial batch
    discriminator_steps: int = 5  # discriminator updates per mapping update
    discriminator_hidden: int = positive(2048)  # hidden width of the discriminator
    discriminator_input_dropout: float = ranged(0.1, 0, below=1)  # dropout on the discriminator's input
    smooth: float = ranged(0.1, 0, below=0.5)  # label smoothing of the discriminator's targets
    most_frequent: int = 75000  # only the N most frequent words are fed to the discriminator
    beta: float = 0.001  # orthogonalisation (TreLM's MUSE setting)
    lr: float = positive(0.1)  # SGD for both, decayed by lr_decay each epoch, shrunk when the criterion drops
    lr_decay: float = ranged(0.98, above=0, high=1)  # learning-rate factor after each epoch
    lr_shrink: float = ranged(0.5, above=0, high=1)  # learning-rate factor when the validation criterion drops
    seed: int = 1  # seeds the adversarial game


class Discriminator(nn.Module):
    def __init__(self, dim: int, hidden: int, input_dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Dropout(input_dropout), nn.Linear(dim, hidden), nn.LeakyReLU(0.2),
                                 nn.Linear(hidden, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def adversarial_map(source: torch.Tensor, target: torch.Tensor, s: AdversarialSettings,
                    log=None) -> tuple[torch.Tensor, list[dict]]:
    """Learn W (dim, dim) mapping source rows into the target space; returns the W of the epoch with the best
    ``mean_cosine`` and the per-epoch log (discriminator loss, criterion, orthogonality error ‖WWᵀ - I‖)."""
    g = torch.Generator().manual_seed(s.seed)
    with torch.random.fork_rng():
        torch.manual_seed(s.seed)
        dim = source.shape[1]
        mapping = nn.Linear(dim, dim, bias=False)
        mapping.weight.data.copy_(torch.eye(dim))
        disc = Discriminator(dim, s.discriminator_hidden, s.discriminator_input_dropout)
        map_opt = torch.optim.SGD(mapping.parameters(), lr=s.lr)
        dis_opt = torch.optim.SGD(disc.parameters(), lr=s.lr)
        n_src, n_tgt = min(len(source), s.most_frequent), min(len(target), s.most_frequent)
        labels = torch.cat([torch.full((s.batch_size,), 1 - s.smooth), torch.full((s.batch_size,), s.smooth)])
        history, best = [], (-float("inf"), mapping.weight.detach().clone())
        for epoch in range(s.epochs):
            losses = []
            for _ in range(0, s.epoch_size, s.batch_size):
                for _ in range(s.discriminator_steps):
                    x = source[torch.randint(n_src, (s.batch_size,), generator=g)]
                    y = target[torch.randint(n_tgt, (s.batch_size,), generator=g)]
                    with torch.no_grad():
                        mapped = mapping(x)
                    loss = nn.functional.binary_cross_entropy_with_logits(disc(torch.cat([mapped, y])), labels)
                    dis_opt.zero_grad()
                    loss.backward()
                    dis_opt.step()
                    losses.append(float(loss.detach()))
                x = source[torch.randint(n_src, (s.batch_size,), generator=g)]
                y = target[torch.randint(n_tgt, (s.batch_size,), generator=g)]
                disc.eval()
                fool = nn.functional.binary_cross_entropy_with_logits(disc(torch.cat([mapping(x), y])), 1 - labels)
                disc.train()
                map_opt.zero_grad()
                fool.backward()
                map_opt.step()
                with torch.no_grad():
                    mapping.weight.copy_(orthogonalize(mapping.weight, s.beta))
            W = mapping.weight.detach().clone()
            criterion = mean_cosine(source @ W.T, target)
            entry = {"epoch": epoch + 1, "discriminator_loss": sum(losses) / len(losses), "mean_cosine": criterion,
                     "orthogonality_error": float(torch.linalg.norm(W @ W.T - torch.eye(dim))),
                     "lr": map_opt.param_groups[0]["lr"]}
            history.append(entry)
            if log:
                log(entry)
            if criterion > best[0]:
                best = (criterion, W)
            elif s.lr_shrink < 1:
                for opt in (map_opt, dis_opt):
                    opt.param_groups[0]["lr"] *= s.lr_shrink
            for opt in (map_opt, dis_opt):
                opt.param_groups[0]["lr"] *= s.lr_decay
    return best[1], history


def refine(source: torch.Tensor, target: torch.Tensor, W: torch.Tensor, iterations: int = 5,
           max_rank: int = 15000) -> tuple[torch.Tensor, list[dict]]:
    """Iterative Procrustes refinement from ``W``; keeps the W with the best ``mean_cosine``."""
    best, history = (mean_cosine(source @ W.T, target), W), []
    for it in range(iterations):
        pairs = build_dictionary(source @ W.T, target, max_rank)
        W = procrustes(source, target, pairs)
        criterion = mean_cosine(source @ W.T, target)
        history.append({"iteration": it + 1, "dictionary_pairs": len(pairs), "mean_cosine": criterion})
        if criterion > best[0]:
            best = (criterion, W)
    return best[1], history
