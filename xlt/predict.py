"""Batched inference for any task: items sorted by length (little padding), the model's outputs decoded by the task.
Under several processes (``accelerator`` given), each process predicts a shard and the predictions are gathered,
so no process predicts everything."""
from __future__ import annotations

import torch

from xlt.core.batching import Encoded, collate, to_device


@torch.no_grad()
def predict(model: torch.nn.Module, task, labels: dict, items: list[Encoded], pad_id: int, batch_size: int = 128,
            device: torch.device | str = "cpu", accelerator=None) -> list:
    """The task's predictions for ``items``, in their order.  Paired items (FILTER) are predicted from their first
    side, with the translation as context."""
    was_training = model.training
    model.eval()
    order = sorted(range(len(items)), key=lambda i: len(items[i].input_ids))
    shards = accelerator.num_processes if accelerator is not None else 1
    if shards > 1:
        order = order[accelerator.process_index::shards]
    found: list[tuple[int, object]] = []
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = to_device(collate(task, [items[i] for i in idx], pad_id), device)
        found += zip(idx, task.decode(model(batch), batch, labels))
    if shards > 1:
        from accelerate.utils import gather_object

        found = gather_object(found)
    model.train(was_training)
    out: list = [None] * len(items)
    for i, p in found:
        out[i] = p
    return out
