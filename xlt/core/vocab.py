"""Tokenizer settings and embedding-vocabulary trimming.

A run keeps only the embedding rows its data uses (``VocabTrim``): rows are copied unchanged, so a trimmed model
computes exactly what the full one does on covered text, and the full matrix is restored by scattering the rows
back (``untrim_into``) for text outside the covered vocabulary.  Output vocabularies (an MLM head tied to the input
embeddings) are trimmed by the same map, so their softmax runs over the kept ids only; labels are mapped with
``map_ids`` and exported weights are untrimmed.
"""
from __future__ import annotations

import torch

SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>", "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")


def prepare_tokenizer(tokenizer):
    """Turn off any truncation/padding stored in tokenizer.json: xlt never truncates silently."""
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def special_ids(tokenizer) -> list[int]:
    return [i for i in (tokenizer.token_to_id(t) for t in SPECIAL_TOKENS) if i is not None]


def token_id(tokenizer, *names: str) -> int:
    """The id of the first of ``names`` the tokenizer knows (``<pad>`` for XLM-R, ``[PAD]`` for BERT)."""
    for name in names:
        i = tokenizer.token_to_id(name)
        if i is not None:
            return i
    raise ValueError(f"the tokenizer has none of {names}")


class VocabTrim:
    """``kept`` (sorted old ids) is the exact two-way map between the full and the trimmed id space."""

    def __init__(self, kept: list[int]) -> None:
        self.kept = sorted(set(kept))
        self.old_to_new = {old: new for new, old in enumerate(self.kept)}

    @classmethod
    def from_ids(cls, id_lists, always: list[int]) -> "VocabTrim":
        ids = set(always)
        for ids_of_one in id_lists:
            ids.update(ids_of_one)
        return cls(sorted(ids))

    def map_ids(self, ids: list[int]) -> list[int]:
        return [self.old_to_new[i] for i in ids]

    def covers(self, ids: list[int]) -> bool:
        return all(i in self.old_to_new for i in ids)

    def trim_embedding(self, embedding: torch.nn.Embedding) -> torch.nn.Embedding:
        rows = embedding.weight.data[torch.tensor(self.kept, device=embedding.weight.device)]
        # built from the kept rows, not initialised and overwritten: a fresh nn.Embedding draws len(kept) x H numbers
        # from the global RNG, so the heads' initialisation and every dropout mask after it would depend on how many
        # ids the run's evaluation sets add to the vocabulary (data.eval_langs, train.select=target_dev)
        return torch.nn.Embedding.from_pretrained(rows.clone(), freeze=False)

    def untrim_into(self, trimmed: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
        out = full.clone()  # on full's device: a model trained on a GPU is exported into a matrix read on the CPU
        out[torch.tensor(self.kept, device=full.device)] = trimmed.to(full.device)
        return out
