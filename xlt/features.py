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
    pair: "Encoded | None" = None  # paired methods: the encoded translation (XeroAlign, FILTER)
    # self-teaching: a teacher's soft intent distribution (n_intents) and soft slot distributions (W, n_slots)
    # for this example's translated side (``pair``); None when the method does not use them
    soft_intent: torch.Tensor | None = None
    soft_slots: torch.Tensor | None = None


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


def _encode_one(tokenizer, u: Utterance, intents: dict, slots: dict) -> Encoded:
    try:
        ids, positions = align_words(tokenizer, u.words)
    except DataError as err:
        raise DataError(f"{u.origin}: {err}") from None
    return Encoded(ids, positions, [slots.get(t, IGNORE) for t in u.slots], intents.get(u.intent, IGNORE))


def encode_examples(tokenizer, rows: list[Utterance], labels: LabelSet,
                    max_length: int | None) -> tuple[list[Encoded], list[str]]:
    """Encode rows (and their attached translations); an example whose utterance or translation is longer than
    ``max_length`` sub-tokens is skipped and returned as a skipped origin (never cut)."""
    intents, slots = labels.intent_index(), labels.slot_index()
    out, too_long = [], []
    for u in rows:
        item = _encode_one(tokenizer, u, intents, slots)
        if u.translation is not None:
            item.pair = _encode_one(tokenizer, u.translation, intents, slots)
        longest = max(len(item.input_ids), len(item.pair.input_ids) if item.pair else 0)
        if max_length is not None and longest > max_length:
            too_long.append(f"{u.origin}: {longest} sub-tokens > max_length {max_length}")
            continue
        out.append(item)
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
                if e.pair is not None:
                    ids.update(e.pair.input_ids)
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
    its slot-carrying sub-token and IGNORE elsewhere, word_positions/word_mask (B, W), intent_labels (B,).

    Paired items (all or none) add the same keys for the translations prefixed ``pair_`` (lengths T', W'); items
    with a teacher's soft labels add ``pair_soft_intent`` (B, n_intents) and ``pair_soft_slots`` (B, T', n_slots),
    the latter at each pair word's slot-carrying sub-token (zero rows elsewhere; ``pair_soft_mask`` (B, T') marks
    them)."""
    batch = _collate_single(items, pad_id)
    with_pair = [e.pair is not None for e in items]
    if any(with_pair):
        if not all(with_pair):
            raise ValueError("a batch mixes paired and unpaired examples")
        pair = _collate_single([e.pair for e in items], pad_id)  # type: ignore[misc]
        batch.update({f"pair_{k}": v for k, v in pair.items()})
        if items[0].soft_intent is not None:
            batch["pair_soft_intent"] = torch.stack([e.soft_intent for e in items])  # type: ignore[misc]
            n_slots = items[0].soft_slots.shape[-1]  # type: ignore[union-attr]
            soft = torch.zeros((len(items), pair["input_ids"].shape[1], n_slots))
            mask = torch.zeros(soft.shape[:2], dtype=torch.bool)
            for b, e in enumerate(items):
                pos = torch.tensor(e.pair.word_positions, dtype=torch.long)  # type: ignore[union-attr]
                soft[b, pos] = e.soft_slots  # type: ignore[index]
                mask[b, pos] = True
            batch["pair_soft_slots"], batch["pair_soft_mask"] = soft, mask
    return batch


def _collate_single(items: list[Encoded], pad_id: int) -> dict[str, torch.Tensor]:
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
