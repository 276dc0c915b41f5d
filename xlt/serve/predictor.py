"""Predictors: raw texts in, JSON answers out, for any task, on any backend.  ``Predictor`` (torch-free) checks and
encodes inputs, batches them by length, decodes and formats; a backend only maps padded ``input_ids`` /
``attention_mask`` (B, T) to the task's logits: ``TorchPredictor`` (a trained run folder, eager PyTorch) and
``OnnxPredictor`` (an ``xlt export`` folder, ONNX Runtime; no torch import).

Inputs the model cannot take get an ``InputError`` naming the problem (or, with ``on_error="record"``, an
``{"error": ...}`` answer in their place): empty or whitespace-only text, a sentence pair that is not two texts, a
pair longer than the encoder's positions.  A word-level input longer than the encoder's positions is predicted in
word windows that fit (documented behaviour, flagged in the answer: ``"windows": n`` and a warning).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from xlt.serve.decode import decode_rows, join_rows, labelled, to_json
from xlt.serve.words import InputError, Words, align_words, split_words, word_windows

PAIR_SEPARATOR = "|||"  # a sentence pair typed as one string: "first sentence ||| second sentence" (or a TAB)


@dataclass
class Request:
    """One input: ``texts`` (one text, or two for a sentence pair) or pre-split ``words`` (evaluation sets)."""
    texts: list[str] = field(default_factory=list)
    words: list[str] | None = None
    lang: str | None = None

    @classmethod
    def of(cls, value, lang: str | None = None, pair: bool = False) -> "Request":
        """A str (for a sentence-pair model: 'first ||| second' or 'first TAB second'), or a list of str."""
        if isinstance(value, str):
            sep = "\t" if "\t" in value else PAIR_SEPARATOR
            return cls([p.strip() for p in value.split(sep)] if pair and sep in value else [value], lang=lang)
        return cls(list(value), lang=lang)


def pad_batch(seqs: list[list[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Id lists -> (input_ids, attention_mask) (B, T) int64, padded to the longest."""
    ids = np.full((len(seqs), max(map(len, seqs))), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    for b, seq in enumerate(seqs):
        ids[b, :len(seq)], mask[b, :len(seq)] = seq, 1
    return ids, mask


@dataclass
class Prepared:
    rows: list[tuple[list[int], list[int]]]  # (input_ids, label-carrying sub-token per word) per window
    words: Words | None
    warnings: list[str]


class Predictor:
    """``labels``: the run's label vocabularies; ``spec``: ``Task.serving_spec()``; ``max_tokens``: encoder
    positions; ``info``: what ``GET /info`` shows."""
    backend = ""

    def __init__(self, tokenizer, labels: dict, spec: dict, max_tokens: int, pad_id: int, info: dict,
                 batch_size: int = 32) -> None:
        self.tokenizer, self.labels, self.spec = tokenizer, labels, spec
        self.max_tokens, self.pad_id, self.batch_size = max_tokens, pad_id, batch_size
        self.info = dict(info, backend=self.backend, max_tokens=max_tokens)
        self.pair = spec["input"] == "pair"

    def run_batch(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
        """(B, T) int64 ids and mask -> {logits name: (B, C) or (B, T, C) float array}."""
        raise NotImplementedError

    # -- inputs ----------------------------------------------------------------------------------------------------
    def prepare(self, req: Request) -> Prepared:
        if self.spec["input"] == "pair":
            return self._prepare_pair(req)
        if req.words is not None:
            if not req.words or any(not w or w.isspace() or any(c.isspace() for c in w) for w in req.words):
                raise InputError("words must be a non-empty list of non-empty words without spaces")
            words = Words.from_words(req.words)
        else:
            if len(req.texts) != 1:
                raise InputError(f"this model reads one text per input, got {len(req.texts)}")
            text = req.texts[0]
            if not text.strip():
                raise InputError("empty text" if not text else "text is whitespace only")
            words = split_words(text, self.tokenizer)
            if not words.spans:
                raise InputError("text has no words the tokenizer can read")
        ids, positions = align_words(self.tokenizer, words.words)
        if len(ids) <= self.max_tokens:
            return Prepared([(ids, positions)], words, [])
        windows = word_windows(self.tokenizer, words.words, self.max_tokens)
        rows = [align_words(self.tokenizer, words.words[a:b]) for a, b in windows]
        return Prepared(rows, words, [f"input is {len(ids)} sub-tokens, over the model's {self.max_tokens}: predicted "
                                      f"in {len(rows)} windows of whole words (sentence-level probabilities "
                                      f"averaged over them)"])

    def _prepare_pair(self, req: Request) -> Prepared:
        if len(req.texts) != 2 or req.words is not None:
            raise InputError("a sentence-pair model takes two texts: [first, second], or 'first ||| second'")
        for i, t in enumerate(req.texts):
            if not t.strip():
                raise InputError(f"text {i + 1} of the pair is {'empty' if not t else 'whitespace only'}")
        ids = list(self.tokenizer.encode(req.texts[0], req.texts[1]).ids)
        if len(ids) > self.max_tokens:
            raise InputError(f"the pair is {len(ids)} sub-tokens; the model takes at most {self.max_tokens} "
                             f"(max_tokens) and a pair cannot be split")
        return Prepared([(ids, [])], None, [])

    # -- prediction ------------------------------------------------------------------------------------------------
    def predict_labelled(self, prepared: list[Prepared]) -> list[dict]:
        """Prepared inputs -> labelled predictions (``decode.labelled``), batched by length."""
        flat = [(i, row) for i, p in enumerate(prepared) for row in p.rows]
        order = sorted(range(len(flat)), key=lambda k: len(flat[k][1][0]))
        decoded: list = [None] * len(flat)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            rows = [flat[k][1] for k in idx]
            outputs = self.run_batch(*pad_batch([ids for ids, _ in rows], self.pad_id))
            for k, row in zip(idx, decode_rows(outputs, [p for _, p in rows], self.spec)):
                decoded[k] = row
        per_input: list[list] = [[] for _ in prepared]
        for (i, _), row in zip(flat, decoded):
            per_input[i].append(row)
        return [labelled(join_rows(rows, self.spec), self.spec, self.labels) for rows in per_input]

    def predict(self, requests: list[Request], on_error: str = "raise") -> list[dict]:
        """JSON answers in request order.  ``on_error="record"``: a bad input gets ``{"error": ...}`` instead of
        raising ``InputError``."""
        prepared: list[Prepared | None] = []
        errors: dict[int, str] = {}
        for i, req in enumerate(requests):
            try:
                prepared.append(self.prepare(req))
            except InputError as err:
                if on_error == "raise":
                    raise
                prepared.append(None)
                errors[i] = str(err)
        good = [p for p in prepared if p is not None]
        answers = iter(self.predict_labelled(good))
        out = []
        for i, (req, p) in enumerate(zip(requests, prepared)):
            if p is None:
                out.append({"error": errors[i]})
                continue
            answer = {"text": req.texts[0]} if p.words is not None and req.words is None else (
                {"texts": req.texts} if req.words is None else {"words": req.words})
            if req.lang:
                answer["lang"] = req.lang
            answer.update(to_json(next(answers), p.words, self.spec))
            if len(p.rows) > 1:
                answer["windows"] = len(p.rows)
            if p.warnings:
                answer["warnings"] = p.warnings
            out.append(answer)
        return out


class OnnxPredictor(Predictor):
    """An ``xlt export`` folder on ONNX Runtime (``graph``: ``model.onnx`` or ``model.int8.onnx``; default: the one
    the export made last).  Imports onnxruntime, tokenizers and numpy only."""
    backend = "onnxruntime"

    def __init__(self, folder: Path, graph: str | None = None, batch_size: int = 32, threads: int = 0) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = Path(folder)
        meta = json.loads((folder / "xlt_export.json").read_text())
        self.graph = graph or meta["default_graph"]
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(folder / self.graph), opts, providers=["CPUExecutionProvider"])
        self.output_names = list(meta["spec"]["outputs"])
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        info = {k: meta[k] for k in ("model", "task", "dataset", "method", "labels", "results") if k in meta}
        super().__init__(tokenizer, meta["labels"], meta["spec"], meta["max_tokens"], meta["pad_id"],
                         dict(info, graph=self.graph), batch_size)
        self.backend = f"onnxruntime ({self.graph})"
        self.info["backend"] = self.backend

    def run_batch(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
        values = self.session.run(self.output_names, {"input_ids": input_ids, "attention_mask": attention_mask})
        return dict(zip(self.output_names, values))


def load_predictor(path: Path, graph: str | None = None, batch_size: int = 32) -> Predictor:
    """An export folder (``xlt_export.json``) on ONNX Runtime, or a trained run folder in PyTorch."""
    path = Path(path)
    if (path / "xlt_export.json").exists():
        return OnnxPredictor(path, graph, batch_size)
    from xlt.serve.torch_predictor import TorchPredictor

    return TorchPredictor(path, batch_size=batch_size)
