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
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xlt.serve.decode import decode_rows, join_rows, labelled, to_json
from xlt.serve.request import Request
from xlt.serve.words import InputError, Words, align_words, split_words, word_windows

def flat_rows(prepared: list[Prepared]) -> list[tuple[int, tuple, Prepared]]:
    """Every row (window) of every prepared input, in input order: (input index, (ids, positions), input)."""
    return [(i, row, p) for i, p in enumerate(prepared) for row in p.rows]


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
    pair_ids: list[int] | None = None  # the encoded translation (fusion models: FILTER)
    language: int | None = None  # the decoder's language index (TALL)


def language_index(setting: dict, lang: str | None) -> int:
    """TALL: the decoder's index of the language token for an input in ``lang`` (None: the source language); other
    languages read the source's or the target's token (``options.other_languages``, as evaluation does)."""
    languages, src = setting["languages"], setting["source_lang"]
    lang = lang or src
    if lang not in languages:
        lang = src if setting["other_languages"] == "source" else next(x for x in languages if x != src)
    return languages.index(lang)


def visible(text: str) -> bool:
    """Whether ``text`` has a character to read: not only whitespace, control or format characters (``"\x00"``,
    ``"\x01\x02"``, a zero-width space), which some tokenizers read as a token and others drop."""
    return any(not c.isspace() and unicodedata.category(c) not in ("Cc", "Cf") for c in text)


def check_unicode(text: str, what: str = "text") -> None:
    """A str that UTF-8 cannot encode holds a lone surrogate (from JSON ``"\\ud800"`` or from undecodable bytes on the
    command line): ``InputError`` naming it and where, instead of a tokenizer's TypeError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InputError(f"{what} is not valid Unicode: a lone surrogate U+{ord(text[err.start]):04X} at character "
                         f"{err.start + 1} (invalid UTF-8 bytes, or an unpaired \\u escape)") from None


class Predictor:
    """``labels``: the run's label vocabularies; ``spec``: ``Task.serving_spec()``; ``max_tokens``: encoder
    positions; ``info``: what ``GET /info`` shows."""
    backend = ""

    def __init__(self, tokenizer, labels: dict, spec: dict, max_tokens: int, pad_id: int, info: dict,
                 batch_size: int = 32, translation: dict | None = None, language_token: dict | None = None) -> None:
        self.tokenizer, self.labels, self.spec = tokenizer, labels, spec
        self.max_tokens, self.pad_id, self.batch_size = max_tokens, pad_id, batch_size
        # FILTER: each input is read with its translation ({"mode": "fusion", "backend", "source_lang",
        # "target_lang"}); translate-test: inputs go through the source language and back ({"mode":
        # "translate_test", "source_lang", "languages": {lang: {"backend", "priors"}}}, xlt.serve.translate_test)
        self.translation, self._translator = translation, None
        self.fusion = bool(translation) and translation["mode"] == "fusion"
        self.translate_test = bool(translation) and translation["mode"] == "translate_test"
        self.folder: Path | None = None  # where the translate-test aligner priors live
        # TALL: {"languages": the decoder's, "source_lang", "other_languages": "source" | "target"}
        self.language_token = language_token
        self.info = dict(info, backend=self.backend, max_tokens=max_tokens, translation=translation)
        self.pair = spec["input"] == "pair"

    def run_batch(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``feed`` (the graph's inputs): ``input_ids`` / ``attention_mask`` (B, T) int64, for fusion models also
        ``pair_input_ids`` / ``pair_attention_mask`` (B, T'), for TALL ``language`` (B,) -> {logits name: (B, C) or
        (B, T, C) float array}."""
        raise NotImplementedError

    # -- inputs ----------------------------------------------------------------------------------------------------
    def prepare(self, req: Request) -> Prepared:
        prepared = self._prepare(req)
        if self.language_token:
            prepared.language = language_index(self.language_token, req.lang)
        return prepared

    def _prepare(self, req: Request) -> Prepared:
        t = self.translation
        if self.fusion and req.lang not in (None, t["source_lang"], t["target_lang"]):
            raise InputError(f"this model reads its input with a {t['backend']} translation between "
                             f"{t['source_lang']} and {t['target_lang']}: lang must be one of them, not {req.lang!r}")
        for i, text in enumerate(req.texts):
            check_unicode(text, "text" if len(req.texts) == 1 else f"text {i + 1} of the pair")
        for i, word in enumerate(req.words or []):
            check_unicode(word, f"word {i + 1}")
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
            if not visible(text):
                raise InputError("text has only control or format characters (nothing to read)")
            words = split_words(text, self.tokenizer)
            if not words.spans:
                raise InputError("text has no words the tokenizer can read")
        ids, positions = align_words(self.tokenizer, words.words)
        if len(ids) <= self.max_tokens:
            return Prepared([(ids, positions)], words, [])
        if self.fusion:
            raise InputError(f"input is {len(ids)} sub-tokens, over the model's {self.max_tokens} (max_tokens); a "
                             f"model that reads the input with its translation cannot split it")
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
            if not visible(t):
                raise InputError(f"text {i + 1} of the pair has only control or format characters (nothing to read)")
        ids = list(self.tokenizer.encode(req.texts[0], req.texts[1]).ids)
        if len(ids) > self.max_tokens:
            raise InputError(f"the pair is {len(ids)} sub-tokens; the model takes at most {self.max_tokens} "
                             f"(max_tokens) and a pair cannot be split")
        return Prepared([(ids, [])], None, [])

    # -- prediction ------------------------------------------------------------------------------------------------
    def batches(self, flat: list[tuple[int, tuple, Prepared]]):
        """Length-sorted batches of ``flat`` (``flat_rows``): (indices into ``flat``, graph inputs, word positions)."""
        order = sorted(range(len(flat)), key=lambda k: len(flat[k][1][0]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            yield idx, self.feed([flat[k][1][0] for k in idx], [flat[k][2] for k in idx]), [flat[k][1][1] for k in idx]

    def feed(self, rows: list[list[int]], owners: list[Prepared]) -> dict[str, np.ndarray]:
        """The graph inputs of a batch of rows (``owners``: the prepared input each row belongs to)."""
        feed = dict(zip(("input_ids", "attention_mask"), pad_batch(rows, self.pad_id)))
        if self.fusion:
            feed |= dict(zip(("pair_input_ids", "pair_attention_mask"),
                             pad_batch([p.pair_ids for p in owners], self.pad_id)))
        if self.language_token:
            feed["language"] = np.array([p.language for p in owners], dtype=np.int64)
        return feed

    def predict_labelled(self, prepared: list[Prepared]) -> list[dict]:
        """Prepared inputs -> labelled predictions (``decode.labelled``), batched by length."""
        decoded: dict[int, dict] = {}
        flat = flat_rows(prepared)
        for idx, feed, positions in self.batches(flat):
            decoded.update(zip(idx, decode_rows(self.run_batch(feed), positions, self.spec)))
        per_input: list[list] = [[] for _ in prepared]
        for k, (i, _, _) in enumerate(flat):
            per_input[i].append(decoded[k])
        return [labelled(join_rows(rows, self.spec), self.spec, self.labels) for rows in per_input]

    def translate(self, requests: list[Request], prepared: list[Prepared | None]) -> dict[int, str]:
        """Fusion models: each input's translation (a target-language input into the source language, a
        source-language input into the target language; no ``lang`` means the target language), encoded as the
        model's second side.  Returns {input index: error} for translations the model cannot take."""
        from xlt.translate import get_translator, tokenize_words

        t, groups, errors = self.translation, {}, {}
        for i, (req, p) in enumerate(zip(requests, prepared)):
            if p is not None:
                lang = req.lang or t["target_lang"]
                groups.setdefault((lang, t["target_lang"] if lang == t["source_lang"] else t["source_lang"]),
                                  []).append(i)
        self._translator = self._translator or get_translator(t["backend"])
        for (src, tgt), idx in groups.items():
            for i, trans in zip(idx, self.translate_texts(self._translator, requests, prepared, idx, src, tgt)):
                ids = (self.tokenizer.encode(*trans).ids if self.pair
                       else align_words(self.tokenizer, tokenize_words(trans[0]) or ["."])[0])
                if len(ids) > self.max_tokens:
                    errors[i] = (f"the input's {src}->{tgt} translation is {len(ids)} sub-tokens, over the model's "
                                 f"{self.max_tokens} (max_tokens)")
                prepared[i].pair_ids = list(ids)
        return errors

    def translate_texts(self, translator, requests: list[Request], prepared: list, idx: list[int], src: str,
                        tgt: str) -> list[list[str]]:
        """The texts of inputs ``idx`` (both sides of a pair; a text input as its words) translated ``src`` ->
        ``tgt`` in one call; an empty translation becomes "." (the model needs a token to read)."""
        texts = [requests[i].texts if self.pair else [" ".join(prepared[i].words.words)] for i in idx]
        out = iter(translator.translate([x for ts in texts for x in ts], src, tgt))
        return [[x if x.strip() else "." for x in (next(out) for _ in ts)] for ts in texts]

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
        if self.fusion:
            for i, message in self.translate(requests, prepared).items():
                if on_error == "raise":
                    raise InputError(message)
                prepared[i], errors[i] = None, message
        extra: dict[int, dict] = {}
        if self.translate_test:
            from xlt.serve.translate_test import labelled_via_translation

            found, extra = labelled_via_translation(self, requests, prepared, errors, on_error)
        else:
            good = [i for i, p in enumerate(prepared) if p is not None]
            found = dict(zip(good, self.predict_labelled([prepared[i] for i in good])))
        out = []
        for i, (req, p) in enumerate(zip(requests, prepared)):
            if i in errors:
                out.append({"error": errors[i]})
                continue
            answer = {"text": req.texts[0]} if p.words is not None and req.words is None else (
                {"texts": req.texts} if req.words is None else {"words": req.words})
            if req.lang:
                answer["lang"] = req.lang
            answer.update(to_json(found[i], p.words, self.spec))
            answer.update(extra.get(i, {}))
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

    def __init__(self, folder: Path, graph: str | None = None, batch_size: int = 32, threads: int = 0,
                 spinning: bool = True) -> None:
        """``threads``: ONNX Runtime's intra-op threads (0: one per core); ``spinning``: whether idle threads spin
        waiting for work (fastest alone; ``False`` yields the cores at once, for a server beside other processes)."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from xlt.errors import ConfigError

        folder = Path(folder)
        meta = json.loads((folder / "xlt_export.json").read_text())
        self.graph = graph or meta["default_graph"]
        for name in [self.graph, *meta["graphs"], *_priors_files(meta.get("translation"))]:
            inside(folder, name)
        if self.graph not in meta["graphs"] or not (folder / self.graph).is_file():
            present = [g for g in meta["graphs"] if (folder / g).is_file()]
            raise ConfigError(f"{folder}: no graph {self.graph!r} in this export (it has: "
                              f"{', '.join(present) or 'none'})")
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
        self.session = ort.InferenceSession(str(folder / self.graph), opts, providers=["CPUExecutionProvider"])
        self.output_names = list(meta["spec"]["outputs"])
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        info = {k: meta[k] for k in ("model", "task", "dataset", "method", "labels", "results") if k in meta}
        quantization = meta.get("int8") if "int8" in self.graph else "none (fp32)"
        super().__init__(tokenizer, meta["labels"], meta["spec"], meta["max_tokens"], meta["pad_id"],
                         dict(info, graph=self.graph, quantization=quantization), batch_size, meta.get("translation"),
                         meta.get("language_token"))
        self.folder = folder
        self.backend = f"onnxruntime ({self.graph})"
        self.info.update(backend=self.backend, threads=threads or "one per core", spinning=spinning)

    def run_batch(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(self.output_names, self.session.run(self.output_names, feed)))


def inside(folder: Path, name: object) -> Path:
    """``folder / name`` for a file an export names (a graph, aligner priors): a plain file name, never a path that
    leads out of the export (a tampered ``xlt_export.json`` cannot make the server load another file)."""
    from xlt.errors import ConfigError

    if not isinstance(name, str) or not name or Path(name).name != name or name in (".", ".."):
        raise ConfigError(f"{folder / 'xlt_export.json'}: {name!r} is not a file name inside the export folder")
    return folder / name


def _priors_files(translation: dict | None) -> list[str]:
    if not translation or translation.get("mode") != "translate_test":
        return []
    return [s["priors"] for s in translation.get("languages", {}).values() if "priors" in s]
