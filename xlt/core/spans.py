"""BIO / IOBES tags -> labelled spans, read exactly as seqeval's ``get_entities`` reads them (its default,
conlleval-compatible mode: an orphan ``I-X`` starts a span, a change of type ends one), in pure Python.

Why not seqeval itself: importing ``seqeval.metrics`` pulls in scikit-learn and SciPy (about 1.1 s and hundreds of
modules), which the serving runtime -- prediction, export, the HTTP server -- has no other use for.  Metrics still
come from seqeval (``xlt.tasks``); ``tests/test_spans.py`` checks this reading against seqeval's on random tag
sequences.
"""
from __future__ import annotations

# (previous tag, tag) pairs at which a span ends before / starts at the current word, besides a change of type
_ENDS = {("B", "B"), ("B", "S"), ("B", "O"), ("I", "B"), ("I", "S"), ("I", "O")}
_STARTS = {("E", "E"), ("E", "I"), ("S", "E"), ("S", "I"), ("O", "E"), ("O", "I")}


def get_entities(tags: list[str]) -> list[tuple[str, int, int]]:
    """``["B-PER", "I-PER", "O", "B-LOC"]`` -> ``[("PER", 0, 1), ("LOC", 3, 3)]``: (type, first, last word index),
    in order.  Tags are ``O`` or ``<B|I|E|S>-TYPE``; a bare ``B`` / ``I`` has type ``_`` (as in seqeval)."""
    spans: list[tuple[str, int, int]] = []
    prev_tag, prev_type, begin = "O", "", 0
    for i, chunk in enumerate([*tags, "O"]):
        tag, type_ = chunk[0], chunk[1:].split("-", maxsplit=1)[-1] or "_"
        if prev_tag in ("E", "S") or (prev_tag, tag) in _ENDS or (prev_tag not in ("O", ".") and prev_type != type_):
            spans.append((prev_type, begin, i - 1))
        if tag in ("B", "S") or (prev_tag, tag) in _STARTS or (tag not in ("O", ".") and prev_type != type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return spans
