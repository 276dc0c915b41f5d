"""``xlt predict RUN --input FILE --output OUT.jsonl``: streaming prediction of a text or JSONL file.

Input lines: ``.txt`` one text a line (a pair as ``first TAB second`` or ``first ||| second``); ``.jsonl`` one object
a line with ``"text"`` (str, or [first, second]) or ``"words"``, optional ``"lang"`` and ``"id"`` (copied through).
Every input line gives exactly one output line, in order, with its ``"line"`` number: a prediction, or ``"error"``
naming ``file:line`` and the problem (invalid UTF-8, bad JSON, empty text, ...).  Lines are read in chunks, each
chunk predicted in length-bucketed batches and flushed, so an interrupted run resumes where it stopped: lines
already in the output are skipped (a half-written last line is cut off first).  Beside the output,
``OUT.jsonl.input.json`` records what was read (input path, lines, bytes, sha256 of those bytes), written before each
chunk's answers: a resume checks the input still starts with exactly those bytes and refuses an output that was
written from another input.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from tqdm import tqdm

from xlt.errors import DataError
from xlt.serve.predictor import Predictor
from xlt.serve.request import Request, check_lang
from xlt.serve.words import InputError


def _completed_lines(output: Path) -> int:
    """Lines already predicted; a partial last line (an interrupted write) is cut off."""
    if not output.exists():
        return 0
    data = output.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(output, "r+b") as f:
            f.truncate(end)
    return data[:end].count(b"\n")


def parse_line(raw: bytes, where: str, jsonl: bool, lang: str | None, pair: bool) -> tuple[Request, dict]:
    """One input line -> (request, fields copied to the answer); ``InputError`` naming ``where`` on a bad line."""
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as err:
        raise InputError(f"{where}: invalid UTF-8 (byte 0x{raw[err.start]:02x} at column {err.start + 1})") from None
    if not jsonl:
        return Request.of(text, lang, pair), {}
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: not a JSON object: {err.msg} (column {err.colno})") from None
    if not isinstance(obj, dict) or ("text" in obj) == ("words" in obj):
        raise InputError(f"{where}: a JSON line needs exactly one of \"text\" or \"words\"")
    unknown = sorted(set(obj) - LINE_KEYS)
    if unknown:  # as the server refuses them: a typo of "lang" is not silently ignored
        raise InputError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; a line takes "
                         f"{', '.join(sorted(LINE_KEYS))}")
    req_lang = obj.get("lang", lang)
    try:
        if "words" in obj:
            if not isinstance(obj["words"], list) or not all(isinstance(w, str) for w in obj["words"]):
                raise InputError("\"words\" must be a list of strings")
            req = Request(words=obj["words"], lang=req_lang)
        elif isinstance(obj["text"], str) or (isinstance(obj["text"], list)
                                              and all(isinstance(t, str) for t in obj["text"])):
            req = Request.of(obj["text"], req_lang, pair)
        else:
            raise InputError("\"text\" must be a string or a list of two strings")
    except InputError as err:
        raise InputError(f"{where}: {err}") from None
    return req, ({"id": obj["id"]} if "id" in obj else {})


LINE_KEYS = {"text", "words", "lang", "id"}


def _record_path(output: Path) -> Path:
    return output.with_name(output.name + ".input.json")


def _check_same_input(input_path: Path, output: Path, done: int) -> None:
    """Refuse to append to ``output`` unless its record says it was written from the lines ``input_path`` starts
    with (same bytes, by sha256)."""
    record_path = _record_path(output)
    if not record_path.exists():
        if done:
            raise DataError(f"{output} already has {done} lines but no record of the input they came from "
                            f"({record_path.name} is missing): use another --output, or delete it to start over")
        return
    try:
        record = json.loads(record_path.read_text())
        lines, size, digest = int(record["lines"]), int(record["bytes"]), str(record["sha256"])
    except (ValueError, KeyError, TypeError):
        raise DataError(f"{record_path}: unreadable record of the input; delete it and {output} to start over") from None
    hasher, read, n = hashlib.sha256(), 0, 0
    with open(input_path, "rb") as f:
        while n < lines and read <= size:
            raw = f.readline()
            if not raw:
                break
            hasher.update(raw)
            read, n = read + len(raw), n + 1
    if lines < done or n != lines or read != size or hasher.hexdigest() != digest:
        raise DataError(f"{output} was written from another input ({record.get('input')}: its first {lines} lines, "
                        f"{size} bytes, sha256 {digest[:12]}...; {input_path} differs): use another --output, or "
                        f"delete it (and {record_path.name}) to start over")


def _write_record(input_path: Path, output: Path, lines: int, size: int, hasher) -> None:
    tmp = _record_path(output).with_suffix(".tmp")
    tmp.write_text(json.dumps({"input": str(input_path), "lines": lines, "bytes": size,
                               "sha256": hasher.hexdigest()}))
    tmp.replace(_record_path(output))  # whole or not at all


def predict_file(predictor: Predictor, input_path: Path, output: Path, lang: str | None = None,
                 chunk: int = 512, progress: bool = True) -> dict:
    """Predict every line of ``input_path`` into ``output`` (JSONL), resuming; returns counts and throughput."""
    input_path, output = Path(input_path), Path(output)
    check_lang(lang)  # the default of every line: one error now, not one per line
    if not input_path.is_file():
        raise DataError(f"{input_path}: input file not found")
    jsonl = input_path.suffix == ".jsonl"
    with open(input_path, "rb") as f:
        total = sum(1 for _ in f)
    done = _completed_lines(output)
    if done > total:
        raise DataError(f"{output} has {done} lines but {input_path} only {total}: not its output (use another "
                        f"--output)")
    _check_same_input(input_path, output, done)
    stats = {"lines": total, "skipped_done": done, "predicted": 0, "errors": 0}
    t0 = time.time()
    bar = tqdm(total=total, initial=done, unit="line", disable=not progress, file=sys.stderr)
    hasher, size = hashlib.sha256(), 0
    with open(input_path, "rb") as src, open(output, "a", encoding="utf-8") as dst:
        for _ in range(done):
            raw = src.readline()
            hasher.update(raw)
            size += len(raw)
        line_no = done
        while True:
            raws = [r for r in (src.readline() for _ in range(chunk)) if r]
            if not raws:
                break
            for raw in raws:
                hasher.update(raw)
                size += len(raw)
            # the record first: it always covers every line the output holds
            _write_record(input_path, output, line_no + len(raws), size, hasher)
            answers = _predict_chunk(predictor, raws, line_no, str(input_path), jsonl, lang)
            for answer in answers:
                stats["errors" if "error" in answer else "predicted"] += 1
                try:
                    dst.write(json.dumps(answer, ensure_ascii=False) + "\n")
                except UnicodeEncodeError:  # a lone surrogate in a copied "id": escaped instead
                    dst.write(json.dumps(answer) + "\n")
            dst.flush()
            os.fsync(dst.fileno())
            line_no += len(raws)
            bar.update(len(raws))
    bar.close()
    seconds = time.time() - t0
    stats.update(seconds=round(seconds, 2), lines_per_second=round((total - done) / seconds, 1) if seconds else 0.0)
    return stats


def _predict_chunk(predictor: Predictor, raws: list[bytes], first: int, name: str, jsonl: bool,
                   lang: str | None) -> list[dict]:
    requests, extras, errors = [], [], {}
    for i, raw in enumerate(raws):
        where = f"{name}:{first + i + 1}"
        try:
            req, extra = parse_line(raw, where, jsonl, lang, predictor.pair)
        except InputError as err:
            errors[i], req, extra = str(err), Request([""]), {}
        requests.append(req)
        extras.append(extra)
    answers = predictor.predict(requests, on_error="record")
    out = []
    for i, (answer, extra) in enumerate(zip(answers, extras)):
        if i in errors:
            answer = {"error": errors[i]}
        elif "error" in answer:
            answer = {"error": f"{name}:{first + i + 1}: {answer['error']}"}
        out.append({"line": first + i + 1, **extra, **answer})
    return out
