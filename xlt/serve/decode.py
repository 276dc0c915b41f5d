"""Model outputs -> predictions -> JSON, torch-free (numpy), the same for PyTorch and ONNX Runtime, so both give the
same answer for the same logits.  What to read is the task's ``serving_spec()``:

- a ``sentence`` output (B, C) is a label with probabilities (intent, pair label);
- a ``token`` output (B, T, C) is one label per word, read at the word's label-carrying sub-token; BIO labels come
  back as spans ``{label, start, end, text}`` with character offsets into the original text, other labels per word.
"""
from __future__ import annotations

import numpy as np
from xlt.core.spans import get_entities

from xlt.serve.words import Words

TOP_K = 5  # probabilities returned per sentence-level output


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def decode_rows(outputs: dict[str, np.ndarray], positions: list[list[int]], spec: dict) -> list[dict]:
    """Raw outputs of a batch -> per row ``{output name: probabilities (C,) | label ids per word}``."""
    rows: list[dict] = [{} for _ in positions]
    for name, how in spec["outputs"].items():
        values = outputs[name]
        for b, pos in enumerate(positions):
            if how["level"] == "sentence":
                rows[b][name] = softmax(values[b].astype(np.float64))
            else:
                rows[b][name] = values[b, pos].argmax(-1).tolist() if pos else []
    return rows


def join_rows(rows: list[dict], spec: dict) -> dict:
    """The windows of one long input -> one row: sentence probabilities averaged, word labels concatenated."""
    if len(rows) == 1:
        return rows[0]
    out: dict = {}
    for name, how in spec["outputs"].items():
        if how["level"] == "sentence":
            out[name] = np.mean([r[name] for r in rows], axis=0)
        else:
            out[name] = [t for r in rows for t in r[name]]
    return out


def labelled(row: dict, spec: dict, labels: dict) -> dict:
    """Label ids -> label names: ``{key: {"label": str, "probs": {label: p}}}`` for sentence outputs, ``{key: [tag per
    word]}`` for token outputs (what ``Task.from_serving`` turns into the task's own prediction)."""
    out: dict = {}
    for name, how in spec["outputs"].items():
        names = labels[how["labels"]]
        if how["level"] == "sentence":
            probs = row[name]
            out[how["key"]] = {"label": names[int(np.argmax(probs))],
                               "probs": {names[i]: float(probs[i]) for i in np.argsort(-probs)}}
        else:
            out[how["key"]] = [names[i] for i in row[name]]
    return out


def to_json(pred: dict, words: Words | None, spec: dict) -> dict:
    """A labelled prediction -> the JSON answer; spans and tags carry character offsets into ``words.text``."""
    out: dict = {}
    for how in spec["outputs"].values():
        key, value = how["key"], pred[how["key"]]
        if how["level"] == "sentence":
            top = list(value["probs"].items())[:TOP_K]
            out[key] = value["label"]
            out[f"{key}_prob"] = round(top[0][1], 4)
            out[f"{key}_probs"] = {label: round(p, 4) for label, p in top}
        elif how["spans"]:
            out[key] = [_piece(words, label, s, e) for label, s, e in get_entities(list(value))]
        else:
            out[key] = [_piece(words, label, i, i) for i, label in enumerate(value)]
    return out


def _piece(words: Words | None, label: str, first: int, last: int) -> dict:
    """Words first..last (inclusive) as ``{label, start, end, text}`` with ``text == words.text[start:end]``."""
    start, end = words.spans[first][0], words.spans[last][1]
    return {"label": label, "start": start, "end": end, "text": words.text[start:end]}
