"""The rows of TreLM's unified MLM / CdLM batches (``xlt.losses.trelm``) and the word alignments CdLM reorders by.

Sequences carry their special tokens (``[CLS] … [SEP]``).  A CdLM row's input is the source sentence with one
placeholder token appended (``[MASK]``): target positions that no source sub-token is aligned to take its state.
Alignments are between sub-tokens (eflomal on the sub-token strings; the paper aligns words with fast_align and
gives each sub-token its word's link), with ``[CLS]`` and ``[SEP]`` linked to each other.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from xlt.core.batching import IGNORE, pad_ids
from xlt.losses.mlm import mask_tokens
from xlt.models.trilayer import alignment_order


@dataclass
class Row:
    input_ids: list[int]
    lang: int
    out_lang: int
    order: list[int]
    labels: list[int]
    cdlm: bool


def mlm_row(seq: list[int], lang: int, specials: torch.Tensor, mask_id: int, vocab: int, generator: torch.Generator,
            mask_prob: float) -> Row:
    ids = torch.tensor([seq])
    masked, labels = mask_tokens(ids, torch.ones_like(ids), torch.isin(ids, specials), mask_id, vocab, generator,
                                 mask_prob)
    return Row(masked[0].tolist(), lang, lang, list(range(len(seq))), labels[0].tolist(), False)


def cdlm_row(source: list[int], target: list[int], links: list[tuple[int, int]], lang: int, out_lang: int,
             placeholder_id: int, specials: set[int]) -> Row:
    """``links``: (source position, target position) over the sequences with their special tokens."""
    order = alignment_order(links, len(target), placeholder=len(source))
    labels = [IGNORE if t in specials else t for t in target]
    return Row(source + [placeholder_id], lang, out_lang, order, labels, True)


def collate(rows: list[Row], pad: int) -> dict:
    ids, attention = pad_ids([r.input_ids for r in rows], pad)
    T = max(len(r.order) for r in rows)
    order = torch.zeros((len(rows), T), dtype=torch.long)
    order_mask = torch.zeros((len(rows), T), dtype=torch.long)
    labels = torch.full((len(rows), T), IGNORE, dtype=torch.long)
    for b, r in enumerate(rows):
        n = len(r.order)
        order[b, :n], order_mask[b, :n], labels[b, :n] = torch.tensor(r.order), 1, torch.tensor(r.labels)
    return {"input_ids": ids, "attention_mask": attention, "lang": torch.tensor([r.lang for r in rows]),
            "out_lang": torch.tensor([r.out_lang for r in rows]), "order": order, "order_mask": order_mask,
            "labels": labels, "cdlm_row": torch.tensor([r.cdlm for r in rows])}


def subtoken_links(source: list[list[int]], target: list[list[int]], id_to_token) -> list[list[tuple[int, int]]]:
    """eflomal links between the sub-tokens of each pair (positions counted with the leading special token), plus
    [CLS]-[CLS] and [SEP]-[SEP]."""
    from xlt.align.eflomal_align import align

    def pieces(seq: list[int]) -> list[str]:
        return [id_to_token(i) for i in seq[1:-1]]

    found = align([pieces(s) for s in source], [pieces(t) for t in target], lowercase=False)
    out = []
    for s, t, links in zip(source, target, found):
        out.append([(0, 0)] + sorted((i + 1, j + 1) for i, j in links) + [(len(s) - 1, len(t) - 1)])
    return out
