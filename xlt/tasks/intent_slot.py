"""Joint intent detection + slot filling (xSID, MTOD, MASSIVE): an intent head on a pooled sentence vector and a
slot head on every token, trained and read only at each word's label-carrying sub-token (``xlt.tasks.words``).
The standard joint model of the cross-lingual NLU literature (xSID, van der Goot et al. 2021; XeroAlign, Gritta &
Iacobacci 2021).  Metrics: intent accuracy, span-level slot F1 (seqeval's default, conlleval-compatible mode) and
semantic (exact-frame) accuracy: intent right and the predicted set of slot spans equal to the gold set.
Slots cross a translation by BIO span projection (``xlt.align.project``); the intent is copied.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch
from seqeval.metrics import f1_score
from xlt.core.spans import get_entities
from torch import nn

from xlt.align.project import ProjectionStats, project_tags
from xlt.core.batching import IGNORE, Encoded
from xlt.data.records import UNKNOWN_TAG, Utterance
from xlt.models import pool
from xlt.tasks import Labels, Links, Task
from xlt.tasks.words import cross_entropy, encode_words, token_cross_entropy, word_argmax, word_label_tensor


@dataclass
class IntentSlotPrediction:
    intent: str
    tags: list[str]  # one BIO tag per word
    intent_probs: torch.Tensor | None = field(default=None, compare=False)


class IntentSlotHeads(nn.Module):
    def __init__(self, hidden: int, n_intents: int, n_slots: int, pooling: str, dropout: float) -> None:
        super().__init__()
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.intent_head = nn.Linear(hidden, n_intents)
        self.slot_head = nn.Linear(hidden, n_slots)

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """hidden (B, T, H) -> sentence (B, H), intent_logits (B, n_intents), slot_logits (B, T, n_slots)."""
        sentence = pool(hidden, attention_mask, self.pooling)
        return {"sentence": sentence, "intent_logits": self.intent_head(self.dropout(sentence)),
                "slot_logits": self.slot_head(self.dropout(hidden))}


def score_intent_slot(gold_intents: list[str], gold_slots: list[list[str]], pred_intents: list[str],
                      pred_slots: list[list[str]]) -> dict[str, float]:
    n = len(gold_intents)
    if not (n == len(gold_slots) == len(pred_intents) == len(pred_slots)) or n == 0:
        raise ValueError("gold and predictions must be non-empty and of equal length")
    for i, (g, p) in enumerate(zip(gold_slots, pred_slots)):
        if len(g) != len(p):
            raise ValueError(f"example {i}: {len(g)} gold tags but {len(p)} predicted")
    intent_ok = [g == p for g, p in zip(gold_intents, pred_intents)]
    frames_ok = [ok and set(get_entities(g)) == set(get_entities(p))
                 for ok, g, p in zip(intent_ok, gold_slots, pred_slots)]
    intent_acc, slot_f1 = sum(intent_ok) / n, float(f1_score(gold_slots, pred_slots))
    return {"intent_acc": intent_acc, "slot_f1": slot_f1, "semantic_acc": sum(frames_ok) / n,
            "intent_slot_mean": (intent_acc + slot_f1) / 2, "n": n}


class IntentSlot(Task):
    name = "intent_slot"
    description = "joint intent classification + BIO slot filling (xsid, mtod, massive)"
    metrics = ("intent_acc", "slot_f1", "semantic_acc")
    select_metric = "intent_slot_mean"  # mean of intent accuracy and slot F1 on the source dev set
    outputs = {"intent_logits": "sentence", "slot_logits": "token"}

    def label_space(self, examples: list[Utterance]) -> Labels:
        slots = sorted(({t for u in examples for t in u.slots} | {"O"}) - {UNKNOWN_TAG})
        slots.remove("O")
        return {"intents": sorted({u.intent for u in examples} - {UNKNOWN_TAG}), "slots": ["O"] + slots}

    def unseen_labels(self, examples: list[Utterance], labels: Labels) -> dict:
        tags = {t[2:] for u in examples for t in u.slots if t != "O"}
        return {"slot_types": sorted(tags - {t[2:] for t in labels["slots"] if t != "O"}),
                "intents": sorted({u.intent for u in examples} - set(labels["intents"]))}

    def encode(self, tokenizer, u: Utterance, labels: Labels) -> Encoded:
        ids, positions = encode_words(tokenizer, u.words, u.origin)
        intents = {name: i for i, name in enumerate(labels["intents"])}
        slots = {name: i for i, name in enumerate(labels["slots"])}
        return Encoded(ids, positions, {"intent": intents.get(u.intent, IGNORE),
                                        "slots": [slots.get(t, IGNORE) for t in u.slots]})

    def collate_labels(self, items: list[Encoded], seq_len: int) -> dict[str, torch.Tensor]:
        return {"slot_labels": word_label_tensor(items, "slots", seq_len),
                "intent_labels": torch.tensor([e.labels["intent"] for e in items], dtype=torch.long)}

    def heads(self, hidden_size: int, labels: Labels, pooling: str, dropout: float) -> nn.Module:
        return IntentSlotHeads(hidden_size, len(labels["intents"]), len(labels["slots"]), pooling, dropout)

    def loss(self, out: dict, batch: dict) -> dict[str, torch.Tensor]:
        """Cross-entropy on intents + token-level cross-entropy on label-carrying sub-tokens (others ignored)."""
        intent = cross_entropy(out["intent_logits"], batch["intent_labels"])
        slot = token_cross_entropy(out["slot_logits"], batch["slot_labels"])
        return {"loss": intent + slot, "intent_loss": intent.detach(), "slot_loss": slot.detach()}

    def decode(self, out: dict, batch: dict, labels: Labels) -> list[IntentSlotPrediction]:
        p_intent = out["intent_logits"].float().softmax(-1).cpu()
        words = word_argmax(out["slot_logits"], batch)
        return [IntentSlotPrediction(labels["intents"][int(p.argmax())], [labels["slots"][t] for t in tags], p)
                for p, tags in zip(p_intent, words)]

    def score(self, examples: list[Utterance], predictions: list[IntentSlotPrediction]) -> dict[str, float]:
        return score_intent_slot([u.intent for u in examples], [u.slots for u in examples],
                                 [p.intent for p in predictions], [p.tags for p in predictions])

    def texts(self, u: Utterance) -> list[str]:
        return [" ".join(u.words)]

    def translated(self, u: Utterance, texts: list[str], lang: str, origin: str, words_of) -> Utterance:
        words = words_of(texts[0])
        return Utterance(words, [UNKNOWN_TAG] * len(words), u.intent, lang, origin)

    def transfer_labels(self, source: Utterance, translated: Utterance, links: Links):
        tags, stats = project_tags(source.slots, links, len(translated.words))
        return dataclasses.replace(translated, slots=tags), bool(stats.utterances["dropped"]), stats

    def bio_tags(self, u: Utterance) -> list[str]:
        return u.slots

    def without_word_labels(self, u: Utterance) -> Utterance:
        return dataclasses.replace(u, slots=[UNKNOWN_TAG] * len(u.words))

    def project_back(self, prediction: IntentSlotPrediction, original: Utterance, translated: Utterance,
                     links: Links, direct) -> tuple[IntentSlotPrediction, ProjectionStats]:
        tags, stats = project_tags(prediction.tags, links, len(original.words))
        return IntentSlotPrediction(prediction.intent, tags, prediction.intent_probs), stats

    def serving_spec(self) -> dict:
        return {"input": "words", "outputs": {
            "intent_logits": {"level": "sentence", "labels": "intents", "key": "intent", "spans": False},
            "slot_logits": {"level": "token", "labels": "slots", "key": "slots", "spans": True}}}

    def from_serving(self, p: dict) -> IntentSlotPrediction:
        return IntentSlotPrediction(p["intent"]["label"], p["slots"])
