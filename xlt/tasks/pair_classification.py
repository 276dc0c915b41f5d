"""Sentence-pair classification (XNLI: entailment / neutral / contradiction; PAWS-X: paraphrase or not): both
sentences encoded as ONE input (``<s> A </s></s> B </s>`` for XLM-R), a classifier on the pooled sentence vector
(the setup of ``run_xnli.py`` in transformers' examples and of XTREME).  Metric: accuracy.  Both sentences are
translated; the label is copied across a translation (no word alignment is needed).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch
from torch import nn

from xlt.align.project import ProjectionStats
from xlt.core.batching import IGNORE, Encoded
from xlt.data.records import UNKNOWN_TAG, SentencePair
from xlt.models import pool
from xlt.tasks import Labels, Links, Task
from xlt.tasks.words import cross_entropy



@dataclass
class ClassPrediction:
    label: str
    probs: torch.Tensor | None = field(default=None, compare=False)


class ClassificationHead(nn.Module):
    def __init__(self, hidden: int, n_classes: int, pooling: str, dropout: float) -> None:
        super().__init__()
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden, n_classes)

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """hidden (B, T, H) -> sentence (B, H), logits (B, n_classes)."""
        sentence = pool(hidden, attention_mask, self.pooling)
        return {"sentence": sentence, "logits": self.classifier(self.dropout(sentence))}


class PairClassification(Task):
    name = "pair_classification"
    description = "sentence-pair classification, both sentences as one input (xnli, pawsx)"
    metrics = ("accuracy",)
    select_metric = "accuracy"
    outputs = {"logits": "sentence"}
    needs_alignment = False

    def label_space(self, examples: list[SentencePair]) -> Labels:
        return {"classes": sorted({e.label for e in examples} - {UNKNOWN_TAG})}

    def unseen_labels(self, examples: list[SentencePair], labels: Labels) -> dict:
        return {"classes": sorted({e.label for e in examples} - set(labels["classes"]))}

    def encode(self, tokenizer, e: SentencePair, labels: Labels) -> Encoded:
        classes = {name: i for i, name in enumerate(labels["classes"])}
        return Encoded(list(tokenizer.encode(e.text_a, e.text_b).ids), [], {"label": classes.get(e.label, IGNORE)})

    def collate_labels(self, items: list[Encoded], seq_len: int) -> dict[str, torch.Tensor]:
        return {"labels": torch.tensor([e.labels["label"] for e in items], dtype=torch.long)}

    def heads(self, hidden_size: int, labels: Labels, pooling: str, dropout: float) -> nn.Module:
        return ClassificationHead(hidden_size, len(labels["classes"]), pooling, dropout)

    def loss(self, out: dict, batch: dict) -> dict[str, torch.Tensor]:
        loss = cross_entropy(out["logits"], batch["labels"])
        return {"loss": loss, "class_loss": loss.detach()}

    def decode(self, out: dict, batch: dict, labels: Labels) -> list[ClassPrediction]:
        probs = out["logits"].float().softmax(-1).cpu()
        return [ClassPrediction(labels["classes"][int(p.argmax())], p) for p in probs]

    def score(self, examples: list[SentencePair], predictions: list[ClassPrediction]) -> dict[str, float]:
        if len(examples) != len(predictions) or not examples:
            raise ValueError("gold and predictions must be non-empty and of equal length")
        return {"accuracy": sum(e.label == p.label for e, p in zip(examples, predictions)) / len(examples),
                "n": len(examples)}

    def texts(self, e: SentencePair) -> list[str]:
        return [e.text_a, e.text_b]

    def translated(self, e: SentencePair, texts: list[str], lang: str, origin: str, words_of) -> SentencePair:
        return SentencePair(texts[0], texts[1], e.label, lang, origin)

    def words(self, e: SentencePair) -> list[str]:
        return (e.text_a + " " + e.text_b).split()

    def transfer_labels(self, source: SentencePair, translated: SentencePair, links: Links):
        return dataclasses.replace(translated, label=source.label), False, ProjectionStats()

    def project_back(self, prediction: ClassPrediction, original, translated, links: Links, direct):
        return prediction, ProjectionStats()

    def serving_spec(self) -> dict:
        return {"input": "pair", "outputs": {
            "logits": {"level": "sentence", "labels": "classes", "key": "label", "spans": False}}}

    def from_serving(self, p: dict) -> ClassPrediction:
        return ClassPrediction(p["label"]["label"], None)
