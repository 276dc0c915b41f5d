"""Unicoder's cross-lingual pre-training objectives (Huang et al. EMNLP 2019, "Unicoder: A Universal Language Encoder
by Pre-training with Multiple Cross-lingual Tasks"), on one encoder and one MLM head shared by every token-prediction
task (``lm_head``: ``xlt.losses.mlm.MaskedLanguageModel``, tied to the input embeddings; the stage passes it to each
objective by name).

- ``SharedHeadMLM``: masked-LM on whatever the stage put in the batch: plain sentences (MLM), a sentence and its
  translation concatenated ``<s> X </s></s> Y </s>`` with tokens masked in both halves (TLM, Lample & Conneau
  2019), or a code-switched document whose sentences alternate between the languages (cross-lingual MLM).
- ``WordRecovery``: every word embedding x_i of X is replaced by an attention mixture of Y's word embeddings,
  x_i^t = Σ_j softmax_j(A_ij) y_j with A_ij = w·[x_i; y_j; x_i ⊙ y_j] (w ∈ R^{3h}, owned here); the encoder
  reads X^t (positions added as usual) and predicts every original token of X at once.
- ``ParaphraseClassifier``: ``<s> X </s></s> Y </s>`` -> translation of each other or not (positives: translation
  pairs; negatives: hard negatives mined by the stage), from the mean of the encoder states.

Every objective returns ``{"loss", "<name>_loss", "<name>_accuracy"}``.
"""
from __future__ import annotations

import torch
from torch import nn

from xlt.core.batching import IGNORE
from xlt.losses.mlm import MaskedLanguageModel


def _named(name: str, out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"loss": out["loss"], f"{name}_loss": out["mlm_loss"], f"{name}_accuracy": out["mlm_accuracy"]}


class SharedHeadMLM(nn.Module):
    """MLM / TLM / code-switched MLM through the shared head: batch ``input_ids`` (masked), ``attention_mask``,
    ``mlm_labels`` (B, T).  No parameters of its own."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def forward(self, encoder: nn.Module, batch: dict, lm_head: MaskedLanguageModel) -> dict[str, torch.Tensor]:
        return _named(self.name, lm_head(encoder, batch))


class WordRecovery(nn.Module):
    """Batch: ``input_ids`` (B, S) the sentence X to recover, ``attention_mask`` (B, S), ``other_ids`` /
    ``other_mask`` (B, T) its translation Y, ``recover_labels`` (B, S) X's ids where a prediction is asked (its
    real, non-special tokens), IGNORE elsewhere."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.score = nn.Linear(3 * hidden, 1, bias=False)  # the paper's W ∈ R^{3h}
        nn.init.normal_(self.score.weight, std=0.02)

    def mixture(self, x: torch.Tensor, y: torch.Tensor, y_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, S, H), y (B, T, H), y_mask (B, T) -> (X^t (B, S, H), attention (B, S, T))."""
        # w·[x; y; x ⊙ y] = w1·x + w2·y + (w3 ⊙ x)·y: the same scores without a (B, S, T, 3H) tensor
        w1, w2, w3 = self.score.weight[0].chunk(3)
        scores = (x @ w1).unsqueeze(2) + (y @ w2).unsqueeze(1) + (x * w3) @ y.transpose(1, 2)  # (B, S, T)
        scores = scores.masked_fill(~y_mask.bool().unsqueeze(1), float("-inf"))
        attention = scores.softmax(-1)
        return attention @ y, attention

    def forward(self, encoder: nn.Module, batch: dict, lm_head: MaskedLanguageModel) -> dict[str, torch.Tensor]:
        embed = encoder.get_input_embeddings()
        mixed, _ = self.mixture(embed(batch["input_ids"]), embed(batch["other_ids"]), batch["other_mask"])
        hidden = encoder(inputs_embeds=mixed, attention_mask=batch["attention_mask"]).last_hidden_state
        labels = batch["recover_labels"]
        chosen = labels != IGNORE
        logits = lm_head.logits(encoder, hidden[chosen])
        loss = nn.functional.cross_entropy(logits, labels[chosen])
        accuracy = (logits.argmax(-1) == labels[chosen]).float().mean()
        return {"loss": loss, "word_recovery_loss": loss.detach(), "word_recovery_accuracy": accuracy.detach()}


class ParaphraseClassifier(nn.Module):
    """Batch: ``input_ids`` / ``attention_mask`` (B, T) the pairs ``<s> X </s></s> Y </s>``, ``paraphrase``
    (B,) 1 = Y is X's translation, 0 = a negative."""

    def __init__(self, hidden: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(hidden, hidden), nn.Tanh(), nn.Dropout(dropout),
                                  nn.Linear(hidden, 2))

    def logits(self, encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return self.head((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0))

    def forward(self, encoder: nn.Module, batch: dict, lm_head: MaskedLanguageModel | None = None
                ) -> dict[str, torch.Tensor]:
        logits = self.logits(encoder, batch["input_ids"], batch["attention_mask"])
        loss = nn.functional.cross_entropy(logits, batch["paraphrase"])
        accuracy = (logits.argmax(-1) == batch["paraphrase"]).float().mean()
        return {"loss": loss, "paraphrase_loss": loss.detach(), "paraphrase_accuracy": accuracy.detach()}
