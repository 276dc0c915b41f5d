"""Encoded examples, length-bucketed batch order and collation into (nested) tensor batches.

A batch is a dict of tensors.  A paired example (a source example with its translation: XeroAlign, FILTER) is a
*nested* batch: ``batch["pair"]`` holds the translation's batch with the same keys, and, for self-teaching, the
teacher's soft distributions under ``batch["pair"]["soft"]`` (``soft_mask`` marks the word positions of token-level
distributions).  The task adds its label tensors (``Task.collate_labels``); nothing here knows what a label is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

IGNORE = -100  # label id of positions and examples that carry no loss


@dataclass
class Encoded:
    input_ids: list[int]  # with special tokens, in the tokenizer's (full) id space, or the run's trimmed space
    # word-level tasks: for each word, the index in input_ids of the sub-token that carries its label
    word_positions: list[int] = field(default_factory=list)
    labels: dict[str, Any] = field(default_factory=dict)  # the task's label ids, e.g. {"intent": 3, "slots": [...]}
    pair: "Encoded | None" = None  # paired methods: the encoded translation
    # self-teaching: a teacher's soft distributions for the translated side (``pair``), per output of the task:
    # sentence-level (n_classes,) or word-level (n_words, n_classes)
    soft: dict[str, torch.Tensor] | None = None


def length_bucketed_batches(lengths: list[int], batch_size: int, bucket_size: int, seed: int,
                            epoch: int) -> list[list[int]]:
    """Shuffle, sort by length inside buckets of ``bucket_size`` batches, cut into batches, shuffle the batches.

    Deterministic in (seed, epoch), so a resumed run regenerates the exact same order."""
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    order = torch.randperm(len(lengths), generator=g).tolist()
    chunk = batch_size * bucket_size
    batches = []
    for start in range(0, len(order), chunk):
        bucket = sorted(order[start:start + chunk], key=lambda i: lengths[i])
        batches += [bucket[i:i + batch_size] for i in range(0, len(bucket), batch_size)]
    perm = torch.randperm(len(batches), generator=g).tolist()
    return [batches[i] for i in perm]


def padded_length(longest: int, static_lengths: tuple[int, ...] = ()) -> int:
    """The length a batch pads to: its longest item, or, with ``static_lengths`` (ascending), the smallest of them
    that holds it -- a few fixed shapes, which ``torch.compile`` / CUDA graphs capture once each.  Longer than the
    largest: the longest item (one more shape)."""
    return next((n for n in static_lengths if n >= longest), longest)


def collate(task, items: list[Encoded], pad_id: int, static_lengths: tuple[int, ...] = ()) -> dict[str, Any]:
    """Pad to the longest item: input_ids / attention_mask (B, T), word_positions / word_mask (B, W) for word-level
    tasks, the task's label tensors; a nested ``pair`` batch when the items are paired (all or none).
    ``static_lengths``: T and W pad to the smallest of these that holds them (``padded_length``); pad positions carry
    no attention and no loss, so a batch's loss is the same up to float rounding."""
    batch = collate_side(task, items, pad_id, static_lengths)
    with_pair = [e.pair is not None for e in items]
    if any(with_pair):
        if not all(with_pair):
            raise ValueError("a batch mixes paired and unpaired examples")
        pair = collate_side(task, [e.pair for e in items], pad_id, static_lengths)  # type: ignore[misc]
        if items[0].soft is not None:
            pair["soft"], pair["soft_mask"] = _collate_soft(task, items, pair["input_ids"].shape[1])
        batch["pair"] = pair
    return batch


def collate_side(task, items: list[Encoded], pad_id: int, static_lengths: tuple[int, ...] = ()) -> dict[str, Any]:
    T = padded_length(max(len(e.input_ids) for e in items), static_lengths)
    W = max(len(e.word_positions) for e in items)
    # padded Python lists, then one tensor per field: a tensor per item and field cost ~50 us an item (27 ms for a
    # batch of 512 on a CPU core, a third of a GPU step at that batch)
    input_ids, attention = pad_ids([e.input_ids for e in items], pad_id, T)
    batch: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention}
    if W:
        positions, word_mask = pad_ids([e.word_positions for e in items], 0, padded_length(W, static_lengths))
        batch["word_positions"], batch["word_mask"] = positions, word_mask.bool()
    batch.update(task.collate_labels(items, T))
    return batch


def _collate_soft(task, items: list[Encoded], pair_len: int) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Sentence-level soft targets stacked (B, C); word-level ones placed at each translated word's label-carrying
    sub-token (B, T', C), with ``soft_mask`` (B, T') marking those positions."""
    soft: dict[str, torch.Tensor] = {}
    mask = torch.zeros((len(items), pair_len), dtype=torch.bool)
    for name, level in task.outputs.items():
        if level == "sentence":
            soft[name] = torch.stack([e.soft[name] for e in items])  # type: ignore[index]
            continue
        n_classes = items[0].soft[name].shape[-1]  # type: ignore[index]
        values = torch.zeros((len(items), pair_len, n_classes))
        for b, e in enumerate(items):
            pos = torch.tensor(e.pair.word_positions, dtype=torch.long)  # type: ignore[union-attr]
            values[b, pos] = e.soft[name]  # type: ignore[index]
            mask[b, pos] = True
        soft[name] = values
    return soft, mask


def inference_device() -> torch.device:
    """Where a single process predicts (evaluation, test-time methods): the GPU when there is one.  Training places
    its model through Accelerate instead."""
    from xlt.core.attention import configure_cuda_attention

    configure_cuda_attention()
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def to_device(batch: Any, device: torch.device | str) -> Any:
    """Move a (nested) batch of tensors to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    return batch


def item_tokens(e: Encoded) -> int:
    """Sub-tokens an item feeds the model (both sides of a pair): compute-matched comparisons count these."""
    return len(e.input_ids) + (len(e.pair.input_ids) if e.pair is not None else 0)


def item_sentences(e: Encoded) -> int:
    return 2 if e.pair is not None else 1


def pad_ids(seqs: list[list[int]], pad: int, length: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Id sequences -> (B, T) ids padded with ``pad`` and the (B, T) attention mask (1 = real token); T is
    ``length`` when given (at least the longest sequence), else the longest."""
    T = max(length or 0, max(map(len, seqs)))
    ids = torch.tensor([list(s) + [pad] * (T - len(s)) for s in seqs], dtype=torch.long)
    mask = torch.tensor([[1] * len(s) + [0] * (T - len(s)) for s in seqs], dtype=torch.long)
    return ids, mask
