"""Token classification: a label per word, read at the word's first content sub-token as for slots
(``xlt.tasks.words``; the ``run_ner.py`` convention of transformers' examples).  Two schemes, chosen by the dataset:

- ``bio`` (PAN-X NER): BIO entity tags; metric span F1 (seqeval, conlleval mode) with precision and recall; tags
  cross a translation by BIO span projection, like slots;
- ``tags`` (UD POS): one tag per word; metric accuracy over words; tags cross a translation word by word through
  one-to-one alignment links only (other words carry no loss).  Translate-test: words the back-projection leaves
  unlabelled take the model's own prediction on the target word (the share is reported as ``fallback``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from seqeval.metrics import f1_score, precision_score, recall_score
from torch import nn

from xlt.align.project import ProjectionStats, project_tags, project_word_tags
from xlt.core.batching import IGNORE, Encoded
from xlt.data.records import UNKNOWN_TAG, TaggedSentence
from xlt.errors import ConfigError
from xlt.models import pool
from xlt.tasks import Labels, Links, Task
from xlt.serve.words import word_windows
from xlt.tasks.words import encode_words, token_cross_entropy, word_argmax, word_label_tensor


@dataclass
class TagPrediction:
    tags: list[str]


class TokenHead(nn.Module):
    def __init__(self, hidden: int, n_tags: int, pooling: str, dropout: float) -> None:
        super().__init__()
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.tag_head = nn.Linear(hidden, n_tags)

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """hidden (B, T, H) -> sentence (B, H) (pooled; for sentence-level alignment losses), tag_logits (B, T, C)."""
        return {"sentence": pool(hidden, attention_mask, self.pooling),
                "tag_logits": self.tag_head(self.dropout(hidden))}


class TokenClassification(Task):
    name = "token_classification"
    description = "a label per word: BIO entities (panx, span F1) or word tags (udpos, accuracy)"
    outputs = {"tag_logits": "token"}

    def __init__(self, scheme: str = "bio") -> None:
        if scheme not in ("bio", "tags"):
            raise ConfigError(f"token_classification: scheme must be bio or tags, not {scheme!r}")
        self.scheme = scheme
        self.metrics = ("f1", "precision", "recall") if scheme == "bio" else ("accuracy",)  # type: ignore[misc]
        self.select_metric = "f1" if scheme == "bio" else "accuracy"  # type: ignore[misc]
        self.back_projection_fallback = scheme == "tags"  # type: ignore[misc]

    def label_space(self, examples: list[TaggedSentence]) -> Labels:
        tags = sorted({t for e in examples for t in e.tags} - {UNKNOWN_TAG, "O"})
        return {"tags": (["O"] if self.scheme == "bio" else []) + tags}

    def unseen_labels(self, examples: list[TaggedSentence], labels: Labels) -> dict:
        return {"tags": sorted({t for e in examples for t in e.tags} - set(labels["tags"]))}

    def encode(self, tokenizer, e: TaggedSentence, labels: Labels) -> Encoded:
        ids, positions = encode_words(tokenizer, e.words, e.origin)
        index = {name: i for i, name in enumerate(labels["tags"])}
        return Encoded(ids, positions, {"tags": [index.get(t, IGNORE) for t in e.tags]})

    def collate_labels(self, items: list[Encoded], seq_len: int) -> dict[str, torch.Tensor]:
        return {"tag_labels": word_label_tensor(items, "tags", seq_len)}

    def heads(self, hidden_size: int, labels: Labels, pooling: str, dropout: float) -> nn.Module:
        return TokenHead(hidden_size, len(labels["tags"]), pooling, dropout)

    def loss(self, out: dict, batch: dict) -> dict[str, torch.Tensor]:
        loss = token_cross_entropy(out["tag_logits"], batch["tag_labels"])
        return {"loss": loss, "tag_loss": loss.detach()}

    def decode(self, out: dict, batch: dict, labels: Labels) -> list[TagPrediction]:
        return [TagPrediction([labels["tags"][t] for t in tags]) for tags in word_argmax(out["tag_logits"], batch)]

    def score(self, examples: list[TaggedSentence], predictions: list[TagPrediction]) -> dict[str, float]:
        gold, pred = [e.tags for e in examples], [p.tags for p in predictions]
        if len(gold) != len(pred) or not gold:
            raise ValueError("gold and predictions must be non-empty and of equal length")
        for i, (g, p) in enumerate(zip(gold, pred)):
            if len(g) != len(p):
                raise ValueError(f"example {i}: {len(g)} gold tags but {len(p)} predicted")
        if self.scheme == "bio":
            return {"f1": float(f1_score(gold, pred)), "precision": float(precision_score(gold, pred, zero_division=0)),
                    "recall": float(recall_score(gold, pred, zero_division=0)), "n": len(gold)}
        words = sum(len(g) for g in gold)
        return {"accuracy": sum(a == b for g, p in zip(gold, pred) for a, b in zip(g, p)) / words, "n": len(gold),
                "words": words}

    def texts(self, e: TaggedSentence) -> list[str]:
        return [" ".join(e.words)]

    def translated(self, e: TaggedSentence, texts: list[str], lang: str, origin: str, words_of) -> TaggedSentence:
        words = words_of(texts[0])
        return TaggedSentence(words, [UNKNOWN_TAG] * len(words), lang, origin)

    def transfer_labels(self, source: TaggedSentence, translated: TaggedSentence, links: Links):
        n = len(translated.words)
        if self.scheme == "bio":
            tags, stats = project_tags(source.tags, links, n)
            return dataclasses.replace(translated, tags=tags), bool(stats.utterances["dropped"]), stats
        tags, stats = project_word_tags(source.tags, links, n, UNKNOWN_TAG)
        return dataclasses.replace(translated, tags=tags), stats.tokens["one_to_one"] == 0, stats

    def bio_tags(self, e: TaggedSentence) -> list[str] | None:
        return e.tags if self.scheme == "bio" else None

    def without_word_labels(self, e: TaggedSentence) -> TaggedSentence:
        return dataclasses.replace(e, tags=[UNKNOWN_TAG] * len(e.words))

    def project_back(self, prediction: TagPrediction, original: TaggedSentence, translated, links: Links,
                     direct: TagPrediction | None) -> tuple[TagPrediction, ProjectionStats]:
        n = len(original.words)
        if self.scheme == "bio":
            tags, stats = project_tags(prediction.tags, links, n)
        else:
            tags, stats = project_word_tags(prediction.tags, links, n, UNKNOWN_TAG,
                                            direct.tags if direct is not None else None)
        return TagPrediction(tags), stats

    def split_long(self, e: TaggedSentence, tokenizer, limit: int) -> list[TaggedSentence]:
        """Word windows (PAN-X ja/zh dev sentences reach 1,492 sub-tokens, over the encoder's 512 positions)."""
        return [TaggedSentence(e.words[a:b], e.tags[a:b], e.lang, f"{e.origin}[words {a + 1}-{b}]")
                for a, b in word_windows(tokenizer, e.words, limit)]

    def join_predictions(self, predictions: list[TagPrediction]) -> TagPrediction:
        return TagPrediction([t for p in predictions for t in p.tags])

    def serving_spec(self) -> dict:
        key = "entities" if self.scheme == "bio" else "tags"
        return {"input": "words", "outputs": {
            "tag_logits": {"level": "token", "labels": "tags", "key": key, "spans": self.scheme == "bio"}}}

    def from_serving(self, p: dict) -> TagPrediction:
        return TagPrediction(p["entities" if self.scheme == "bio" else "tags"])
