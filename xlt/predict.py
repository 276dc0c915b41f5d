"""Batched inference: intent labels and per-word BIO tags read at each word's slot-carrying sub-token."""
from __future__ import annotations

import torch

from xlt.features import Encoded, LabelSet, collate


def model_inputs(batch: dict[str, torch.Tensor], device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """The model's inputs from a collated batch: input_ids/attention_mask, plus the translation's for paired
    models (FILTER reads its prediction from the first input and uses the pair as context)."""
    keys = ["input_ids", "attention_mask"] + (["pair_input_ids", "pair_attention_mask"]
                                              if "pair_input_ids" in batch else [])
    return {k: batch[k].to(device) for k in keys}


@torch.no_grad()
def predict(model: torch.nn.Module, items: list[Encoded], labels: LabelSet, pad_id: int, batch_size: int = 128,
            device: torch.device | str = "cpu") -> tuple[list[str], list[list[str]], list[torch.Tensor]]:
    """Return (intent per item, BIO tags per item, intent probabilities per item), in the order of ``items``.
    Items are sorted by length internally so batches carry little padding.  Paired items (FILTER) are predicted
    from their first side, with the translation as context."""
    was_training = model.training
    model.eval()
    order = sorted(range(len(items)), key=lambda i: len(items[i].input_ids))
    intents: list[str] = [""] * len(items)
    slots: list[list[str]] = [[] for _ in items]
    probs: list[torch.Tensor] = [torch.empty(0)] * len(items)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = collate([items[i] for i in idx], pad_id)
        out = model(**model_inputs(batch, device))
        p_intent = out["intent_logits"].float().softmax(-1).cpu()
        positions = batch["word_positions"].to(device)
        word_logits = torch.gather(out["slot_logits"], 1,
                                   positions.unsqueeze(-1).expand(-1, -1, out["slot_logits"].shape[-1]))
        word_tags = word_logits.argmax(-1).cpu()
        for row, i in enumerate(idx):
            n = len(items[i].word_positions)
            intents[i] = labels.intents[int(p_intent[row].argmax())]
            slots[i] = [labels.slots[int(t)] for t in word_tags[row, :n]]
            probs[i] = p_intent[row]
    model.train(was_training)
    return intents, slots, probs


def spans(words: list[str], tags: list[str]) -> list[dict]:
    """BIO tags -> [{"slot", "text", "start_word", "end_word"}] (seqeval's span reading)."""
    from seqeval.metrics.sequence_labeling import get_entities

    return [{"slot": t, "text": " ".join(words[s:e + 1]), "start_word": s, "end_word": e}
            for t, s, e in get_entities(tags)]
