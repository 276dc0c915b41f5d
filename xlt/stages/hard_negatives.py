"""Hard negatives for Unicoder's cross-lingual paraphrase classification (Huang et al. 2019): a small, fast sentence
encoder — a deep averaging network (DAN; Iyyer et al. 2015): the mean of token embeddings through two dense layers —
is first trained on the translation pairs with random negatives (the other pairs of its batch, an in-batch softmax);
then, for each pair (X, Y), the hard negative is the sentence Y' of the same language most similar to X under the
DAN, excluding Y itself and any sentence with Y's text.

``mine(english, other, lang, ...)`` -> (negative index per pair, report); the report gives the DAN's retrieval
accuracy on the pairs (how often the true translation is X's nearest sentence), the share of hard negatives (the
rest fall back to a random sentence of another language when theirs has no other candidate) and the mean similarity
of positives and negatives.
"""
from __future__ import annotations

import torch
from torch import nn


class DeepAveragingNetwork(nn.Module):
    """ids (flattened) + offsets -> (N, H) unit-length sentence vectors."""

    def __init__(self, embeddings: torch.Tensor) -> None:
        super().__init__()
        V, H = embeddings.shape
        self.bag = nn.EmbeddingBag(V, H, mode="mean")
        self.bag.weight.data.copy_(embeddings)
        self.mlp = nn.Sequential(nn.Linear(H, H), nn.Tanh(), nn.Linear(H, H))

    def forward(self, seqs: list[list[int]]) -> torch.Tensor:
        flat = torch.tensor([t for s in seqs for t in s], dtype=torch.long)
        offsets = torch.tensor([0] + [len(s) for s in seqs[:-1]], dtype=torch.long).cumsum(0)
        return nn.functional.normalize(self.mlp(self.bag(flat, offsets)), dim=-1)


def _strip(seq: list[int], specials: set[int]) -> list[int]:
    inner = [t for t in seq if t not in specials]
    return inner or seq[:1]


def train_dan(english: list[list[int]], other: list[list[int]], embeddings: torch.Tensor, specials: set[int],
              seed: int, steps: int = 300, batch_size: int = 128, lr: float = 1e-3) -> DeepAveragingNetwork:
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        dan = DeepAveragingNetwork(embeddings)
    optimizer = torch.optim.Adam(dan.parameters(), lr=lr)
    en, ot = [_strip(s, specials) for s in english], [_strip(s, specials) for s in other]
    for _ in range(steps):
        idx = torch.randperm(len(en), generator=g)[:batch_size].tolist()
        sim = dan([en[i] for i in idx]) @ dan([ot[i] for i in idx]).T * 20.0  # scale: cosine -> logits
        target = torch.arange(len(idx))
        loss = (nn.functional.cross_entropy(sim, target) + nn.functional.cross_entropy(sim.T, target)) / 2
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return dan.eval()


@torch.no_grad()
def mine(english: list[list[int]], other: list[list[int]], lang: list[str], dan: DeepAveragingNetwork,
         specials: set[int], seed: int, chunk: int = 1024) -> tuple[list[int], dict]:
    """For each pair i: the index j != i (same language, other side's text different from i's) whose other-language
    sentence is most similar to english[i]; when the language has no such j, a random sentence of another
    language."""
    g = torch.Generator().manual_seed(seed)
    en = torch.cat([dan([_strip(s, specials) for s in english[i:i + chunk]]) for i in range(0, len(english), chunk)])
    ot = torch.cat([dan([_strip(s, specials) for s in other[i:i + chunk]]) for i in range(0, len(other), chunk)])
    negatives, hard, retrieved, pos_sim, neg_sim = [0] * len(english), 0, 0, 0.0, 0.0
    text_id: dict[tuple[int, ...], int] = {}
    other_key = torch.tensor([text_id.setdefault(tuple(s), len(text_id)) for s in other])
    for language in sorted(set(lang)):
        members = torch.tensor([i for i, x in enumerate(lang) if x == language])
        for start in range(0, len(members), chunk):
            rows = members[start:start + chunk]
            sim = en[rows] @ ot[members].T  # (rows, members)
            retrieved += int((members[sim.argmax(1)] == rows).sum())
            pos_sim += float((en[rows] * ot[rows]).sum())
            same_text = other_key[members].unsqueeze(0) == other_key[rows].unsqueeze(1)
            sim = sim.masked_fill(same_text, float("-inf"))  # the translation itself, and any copy of its text
            best = sim.max(1)
            for r, i in enumerate(rows.tolist()):
                if torch.isfinite(best.values[r]):
                    negatives[i] = int(members[best.indices[r]])
                    hard += 1
                    neg_sim += float(best.values[r])
                else:  # nothing else in this language: a random sentence of another language
                    pool = (other_key != other_key[i]).nonzero().flatten()
                    negatives[i] = int(pool[torch.randint(len(pool), (1,), generator=g)]) if len(pool) else i
    n = max(len(english), 1)
    return negatives, {"pairs": len(english), "hard_negatives": hard, "random_negatives": len(english) - hard,
                       "hard_share": hard / n, "dan_retrieval_accuracy": retrieved / n,
                       "mean_cosine_positive": pos_sim / n, "mean_cosine_hard_negative": neg_sim / max(hard, 1)}
