"""Per-language metrics: intent accuracy, span-level slot F1 (seqeval's default, conlleval-compatible mode) and
semantic (exact-frame) accuracy: intent correct and the predicted set of slot spans equal to the gold set."""
from __future__ import annotations

from seqeval.metrics import f1_score
from seqeval.metrics.sequence_labeling import get_entities


def score(gold_intents: list[str], gold_slots: list[list[str]], pred_intents: list[str],
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
    return {"intent_acc": sum(intent_ok) / n, "slot_f1": float(f1_score(gold_slots, pred_slots)),
            "semantic_acc": sum(frames_ok) / n, "n": n}


def selection_value(metrics: dict[str, float], name: str) -> float:
    if name == "intent_slot_mean":
        return (metrics["intent_acc"] + metrics["slot_f1"]) / 2
    if name in metrics:
        return float(metrics[name])
    raise ValueError(f"unknown selection metric {name!r}")
