"""Sub-word encoding with word alignment, label vocabularies, embedding-vocabulary trimming and batching.

Word alignment: each word's slot is read from (and trained on) ONE sub-token, the first piece of the word that is
not a lone "▁".  XLM-R's sentencepiece emits a lone "▁" before a pre-split word whose "▁"-prefixed form is not in
the vocabulary (typical for CJK: "▁" + "東京"); that piece carries no word content, and reading the slot from it gave
slot F1 0.0 on Japanese in a trial run.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from xlt.data.records import DataError, Utterance

IGNORE = -100
LONE_SPACE_PIECE = "▁"


@dataclass
class Encoded:
    input_ids: list[int]  # with special tokens, in the tokenizer's (full) id space
    word_positions: list[int]  # for each word: index into input_ids of the sub-token carrying its slot
    slot_ids: list[int]  # one per word (IGNORE where the gold tag is unknown to the label set)
    intent_id: int  # IGNORE where the gold intent is unknown to the label set


@dataclass
class LabelSet:
    intents: list[str]
    slots: list[str]

    @classmethod
    def from_examples(cls, rows: list[Utterance]) -> "LabelSet":
        slots = sorted({t for u in rows for t in u.slots} | {"O"})
        slots.remove("O")
        return cls(sorted({u.intent for u in rows}), ["O"] + slots)

    def intent_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.intents)}

    def slot_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.slots)}


def prepare_tokenizer(tokenizer):
    """Turn off any truncation/padding stored in tokenizer.json: xlt never truncates silently."""
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def align_words(tokenizer, words: list[str]) -> tuple[list[int], list[int]]:
    """Encode pre-split ``words``; return (input_ids with specials, slot-carrying sub-token index per word)."""
    enc = tokenizer.encode(words, is_pretokenized=True)
    first: dict[int, int] = {}
    for pos, (word, piece) in enumerate(zip(enc.word_ids, enc.tokens)):
        if word is None:
            continue
        if word not in first or (enc.tokens[first[word]] == LONE_SPACE_PIECE and piece != LONE_SPACE_PIECE):
            first[word] = pos
    missing = [i for i in range(len(words)) if i not in first]
    if missing:
        raise DataError(f"word {missing[0] + 1} ({words[missing[0]]!r}) produced no sub-tokens")
    return list(enc.ids), [first[i] for i in range(len(words))]


def encode_examples(tokenizer, rows: list[Utterance], labels: LabelSet,
                    max_length: int | None) -> tuple[list[Encoded], list[str]]:
    """Encode rows; those longer than ``max_length`` sub-tokens are returned as skipped origins (never cut)."""
    intents, slots = labels.intent_index(), labels.slot_index()
    out, too_long = [], []
    for u in rows:
        try:
            ids, positions = align_words(tokenizer, u.words)
        except DataError as err:
            raise DataError(f"{u.origin}: {err}") from None
        if max_length is not None and len(ids) > max_length:
            too_long.append(f"{u.origin}: {len(ids)} sub-tokens > max_length {max_length}")
            continue
        out.append(Encoded(ids, positions, [slots.get(t, IGNORE) for t in u.slots], intents.get(u.intent, IGNORE)))
    return out, too_long


class VocabTrim:
    """Keep only the embedding rows a run needs.  ``kept`` (sorted old ids) is the exact two-way mapping: rows are
    copied unchanged, so a trimmed model computes exactly what the full one does on covered text, and the full
    matrix can be restored by scattering the rows back (``untrim``) for text outside the covered vocabulary."""

    def __init__(self, kept: list[int]) -> None:
        self.kept = sorted(set(kept))
        self.old_to_new = {old: new for new, old in enumerate(self.kept)}

    @classmethod
    def from_encoded(cls, groups: list[list[Encoded]], always: list[int]) -> "VocabTrim":
        ids = set(always)
        for group in groups:
            for e in group:
                ids.update(e.input_ids)
        return cls(sorted(ids))

    def map_ids(self, ids: list[int]) -> list[int]:
        return [self.old_to_new[i] for i in ids]

    def covers(self, ids: list[int]) -> bool:
        return all(i in self.old_to_new for i in ids)

    def trim_embedding(self, embedding: torch.nn.Embedding) -> torch.nn.Embedding:
        rows = embedding.weight.data[torch.tensor(self.kept)]
        new = torch.nn.Embedding(len(self.kept), rows.shape[1])
        new.weight.data.copy_(rows)
        return new

    def untrim_into(self, trimmed: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
        out = full.clone()
        out[torch.tensor(self.kept)] = trimmed
        return out


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


def collate(items: list[Encoded], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad to the longest item.  Returns input_ids/attention_mask (B, T), slot_labels (B, T) with the word's tag at
    its slot-carrying sub-token and IGNORE elsewhere, word_positions/word_mask (B, W), intent_labels (B,)."""
    T = max(len(e.input_ids) for e in items)
    W = max(len(e.word_positions) for e in items)
    B = len(items)
    input_ids = torch.full((B, T), pad_id, dtype=torch.long)
    attention = torch.zeros((B, T), dtype=torch.long)
    slot_labels = torch.full((B, T), IGNORE, dtype=torch.long)
    positions = torch.zeros((B, W), dtype=torch.long)
    word_mask = torch.zeros((B, W), dtype=torch.bool)
    for b, e in enumerate(items):
        n = len(e.input_ids)
        input_ids[b, :n] = torch.tensor(e.input_ids)
        attention[b, :n] = 1
        pos = torch.tensor(e.word_positions, dtype=torch.long)
        slot_labels[b, pos] = torch.tensor(e.slot_ids)
        positions[b, :len(pos)] = pos
        word_mask[b, :len(pos)] = True
    return {"input_ids": input_ids, "attention_mask": attention, "slot_labels": slot_labels,
            "word_positions": positions, "word_mask": word_mask,
            "intent_labels": torch.tensor([e.intent_id for e in items], dtype=torch.long)}
