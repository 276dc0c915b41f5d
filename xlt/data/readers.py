"""Readers for xSID (train .text/.label, .conll), MTOD (PyText TSV) and MASSIVE-style JSONL.

Every reader validates as it reads: problems are collected in a ReadReport (counts + first ``file:line: problem``
lines), bad examples are skipped, known problems are repaired by the stated rules of ``xlt.data.bio``, and a file that
yields nothing usable raises ``DataError`` before any training starts.  Nothing is truncated silently.
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from xlt.data.bio import repair_into
from xlt.errors import MissingData
from xlt.data.records import DataError, ReadReport, Utterance


@dataclass(frozen=True)
class Unreadable:
    """A line a reader cannot use as it stands: ``reason`` is the kind of problem it is counted (or refused) as."""
    reason: str
    detail: str = ""


def _lines(path: Path) -> Iterator[tuple[int, "str | Unreadable"]]:
    """Yield (1-based line number, decoded line without its LF / CRLF).  A line that is not UTF-8, and a last line
    cut off without its newline (a truncated file), come as ``Unreadable``: no reader keeps them silently."""
    if not path.exists():
        raise MissingData(f"{path}: file not found")
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.endswith(b"\n") and raw.strip():
                yield number, Unreadable("unterminated last line", "the file ends mid-line without a newline: "
                                         "truncated? (if the line is whole, end the file with a newline)")
                continue
            try:
                yield number, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as err:
                yield number, Unreadable("bad encoding", f"not UTF-8: byte 0x{raw[err.start]:02x} at column "
                                         f"{err.start + 1}")


def announce_skips(path: Path | str, skipped: dict[str, int], total: int, first: str, what: str = "lines") -> None:
    """One console line for what a reader skipped in a file (never silent; also counted in the run's reports)."""
    if skipped:
        kinds = ", ".join(f"{k}={v}" for k, v in sorted(skipped.items()))
        print(f"xlt: {path}: skipped {sum(skipped.values())} of {total} {what} ({kinds}); first: {first}",
              file=sys.stderr)


def text_lines(path: Path) -> tuple[list[str], dict[str, int]]:
    """The non-empty lines of a plain-text corpus file, stripped; unreadable ones skipped, counted by reason and
    announced."""
    lines, skipped, first, number = [], Counter(), "", 0
    for number, line in _lines(path):
        if isinstance(line, Unreadable):
            skipped[line.reason] += 1
            first = first or f"line {number}: {line.detail}"
        elif line.strip():
            lines.append(line.strip())
    announce_skips(path, skipped, number, first)
    return lines, dict(skipped)


# the one kind of skip an evaluation set may have (xlt.data.datasets.load_split prints it): an utterance made only of
# empty tokens has nothing to predict
EMPTY_TOKENS_ONLY = "utterance of empty tokens only"


def _skip_line(report: ReadReport, line: int, kind: str, detail: str = "", path: Path | None = None) -> None:
    report.read += 1
    report.skip(line, kind, detail, str(path) if path else None)


def _readable_lines(path: Path, report: ReadReport) -> Iterator[tuple[int, str]]:
    """``_lines`` for one-example-per-line readers: an unreadable line is counted and skipped in ``report``."""
    for number, line in _lines(path):
        if isinstance(line, Unreadable):
            _skip_line(report, number, line.reason, line.detail)
        else:
            yield number, line


def _finish(report: ReadReport, rows: list[Utterance], tags: list[str], line: int, words: list[str],
            intent: str, lang: str, orphan_policy: str, text_en: str | None = None) -> None:
    """Validate one example, apply repairs, append it to rows or record why it was skipped."""
    report.read += 1
    if not words:
        report.skip(line, "empty utterance")
        return
    if len(words) != len(tags):
        report.skip(line, "tag count != token count", f"{len(words)} tokens, {len(tags)} tags")
        return
    if not intent:
        report.skip(line, "missing intent")
        return
    fixed = repair_into(report, line, tags, orphan_policy, "lines")
    if fixed is None:
        return
    rows.append(Utterance(words, fixed, intent, lang, f"{report.path}:{line}", [text_en] if text_en else None))
    report.kept += 1


def read_xsid_train(text_path: Path, label_path: Path, lang: str,
                    orphan_policy: str = "to_b") -> tuple[list[Utterance], ReadReport]:
    """xSID training files: one utterance per line in ``.text``; BIO tags then TAB (en) or space (da) + intent."""
    text_path, label_path = Path(text_path), Path(label_path)
    report = ReadReport(str(label_path))
    texts = list(_lines(Path(text_path)))
    labels = list(_lines(Path(label_path)))
    if len(texts) != len(labels):
        shorter = label_path if len(labels) < len(texts) else text_path
        raise DataError(f"{shorter}:{min(len(texts), len(labels))}: file ends here, but {label_path.name} has "
                        f"{len(labels)} lines and {text_path.name} has {len(texts)}: they must be line-aligned")
    rows: list[Utterance] = []
    for (number, text), (_, label) in zip(texts, labels):
        if isinstance(text, Unreadable) or isinstance(label, Unreadable):
            bad, where = (text, text_path) if isinstance(text, Unreadable) else (label, label_path)
            _skip_line(report, number, bad.reason, bad.detail, where)
            continue
        fields = label.split()  # intent names contain no whitespace: it is the last field either way
        intent, tags = (fields[-1], fields[:-1]) if fields else ("", [])
        _finish(report, rows, tags, number, text.split(), intent, lang, orphan_policy)
    report.check_usable()
    return rows, report


def read_xsid_conll(path: Path, lang: str, orphan_policy: str = "to_b") -> tuple[list[Utterance], ReadReport]:
    """xSID valid/test ``.conll``: ``# text``/``# intent``/``# text-en`` comments, ``idx TAB token TAB intent TAB tag``.

    Empty tokens (6 zh test sentences) cannot be fed to a tokenizer: an empty token tagged ``O`` is dropped with
    its tag (counted as a repair); one carrying a slot tag makes the sentence skipped.  A token line missing or out
    of place is found two ways, and the utterance skipped (an error in a dev/test set): the index column must
    count 1, 2, 3, ... (as in every file of xSID 0.7), and the tokens must hold every non-space character of
    ``# text`` (one de-muc test utterance spells a token differently from its text, at the same length: kept).
    """
    report = ReadReport(str(path))
    rows: list[Utterance] = []
    words: list[str] = []
    tags: list[str] = []
    intent, text_en, text, start, empty_tokens, index = "", None, "", 0, 0, 0
    bad: tuple[str, str] | None = None

    def end_utterance() -> None:
        if not start:
            return
        full, got = "".join(text.split()), "".join(words)
        if bad:
            _skip_line(report, start, *bad)
        elif words and len(got) < len(full) and full.startswith(got):  # a file cut between two token lines
            _skip_line(report, start, "utterance cut short", f"its tokens stop at {got!r} but # text is {text!r}")
        elif words and len(got) < len(full):  # empty tokens aside, the tokens spell the text
            _skip_line(report, start, "tokens missing from # text", f"the tokens spell {got!r} but # text is "
                       f"{text!r}: a token line is missing")
        elif not words and empty_tokens:  # xSID no.valid has one: a documented drop, printed by load_split
            _skip_line(report, start, EMPTY_TOKENS_ONLY, f"{empty_tokens} empty tokens tagged O, no other token")
        else:
            _finish(report, rows, tags, start, words, intent, lang, orphan_policy, text_en)

    for number, line in _lines(Path(path)):
        if isinstance(line, Unreadable):
            bad = bad or (line.reason, f"line {number}: {line.detail}")
            start = start or number
            continue
        if not line.strip():
            end_utterance()
            words, tags, intent, text_en, text, start, bad, empty_tokens, index = [], [], "", None, "", 0, None, 0, 0
            continue
        start = start or number
        if line.startswith("#"):
            if line.startswith("# intent = "):
                intent = line[len("# intent = "):].strip()
            elif line.startswith("# text-en = "):
                text_en = line[len("# text-en = "):].strip()
            elif line.startswith("# text = "):
                text = line[len("# text = "):]
            continue
        cols = line.split("\t")
        if len(cols) != 4:
            bad = bad or ("malformed line", f"line {number}: {len(cols)} columns, expected 4")
            continue
        index += 1
        if cols[0].strip() != str(index):
            bad = bad or ("token index out of sequence", f"line {number}: token index {cols[0].strip()!r} where "
                          f"{index} comes next: a token line is missing or out of place")
        if cols[1].strip() == "":
            if cols[3] == "O":
                report.repair(number, "empty token (tag O) dropped")
                empty_tokens += 1
                continue
            bad = bad or ("empty token with a slot tag", f"line {number}: {cols[3]}")
            continue
        words.append(cols[1])
        tags.append(cols[3])
        intent = intent or cols[2]
    end_utterance()  # the last one, with no blank line after it: its problems count as any other's
    report.check_usable()
    return rows, report


# MTOD slot names -> xSID slot names.  Identical names (datetime, location, reminder/todo, weather/attribute,
# alarm/alarm_modifier, negation) map to themselves.  xSID's conversion (mainlp/xsid scripts/0.fixOrigAnnotation.py)
# renames reminder/reference and reminder/recurring_period and deletes the *noun tags; its token-level English
# heuristics (my/all -> reference, every/daily datetime -> recurring_datetime, temperature/high/low ->
# weather/attribute) are language-specific and are NOT applied here.
MTOD_TO_XSID = {
    "reminder/reference": "reference",
    "reminder/recurring_period": "recurring_datetime",
    "reminder/noun": None,
    "weather/noun": None,
}


def read_mtod_tsv(path: Path, lang: str, label_space: str = "xsid",
                  orphan_policy: str = "to_b") -> tuple[list[Utterance], ReadReport]:
    """MTOD PyText TSV: intent, ``start:end:label`` character spans, text, locale, token JSON.

    Words are the tokens of the JSON column (MTOD's own tokenizer, lower-cased).  Their ``tokenSpans`` and the slot
    spans use the same offsets (not always code points of the text column: 778 of 23,019 es test tokens disagree
    with a plain slice), so a word gets the slot whose span overlaps its token span.
    ``label_space='xsid'`` maps slot names with ``MTOD_TO_XSID``; ``'mtod'`` keeps them.
    """
    if label_space not in ("xsid", "mtod"):
        raise ValueError(f"label_space must be 'xsid' or 'mtod', not {label_space!r}")
    report = ReadReport(str(path))
    rows: list[Utterance] = []
    for number, line in _readable_lines(Path(path), report):
        cols = line.split("\t")
        if len(cols) != 5:
            _skip_line(report, number, "malformed line", f"{len(cols)} columns, expected 5")
            continue
        intent, slot_field, _text, _locale, token_json = cols
        try:
            tok = json.loads(token_json)["tokenizations"][0]
            words = [str(w) for w in tok["tokens"]]
            spans = [(s["start"], s["start"] + s["length"]) for s in tok["tokenSpans"]]
            spans_slots = [(int(a), int(b), lab) for a, b, lab in
                           (item.split(":", 2) for item in slot_field.split(",") if item)]
        except (ValueError, KeyError, IndexError, TypeError) as err:
            _skip_line(report, number, "malformed line", f"cannot parse spans: {err}")
            continue
        if len(words) != len(spans):
            _skip_line(report, number, "malformed line", "tokens and tokenSpans differ in length")
            continue
        tags = ["O"] * len(words)
        for a, b, label in spans_slots:
            if label_space == "xsid":
                label = MTOD_TO_XSID.get(label, label)
                if label is None:
                    continue
            inside = [i for i, (s, e) in enumerate(spans) if s < b and e > a]
            for k, i in enumerate(inside):
                tags[i] = ("B-" if k == 0 else "I-") + label
        _finish(report, rows, tags, number, words, intent, lang, orphan_policy)
    report.check_usable()
    return rows, report


_ANNOT = re.compile(r"\[\s*([^\[\]:]+?)\s*:\s*([^\[\]]*?)\s*\]")


def read_massive_jsonl(path: Path, lang: str | None = None,
                       orphan_policy: str = "to_b") -> tuple[list[Utterance], ReadReport]:
    """MASSIVE-style JSONL: ``{"utt", "annot_utt": "wake me at [time : five am]", "intent", "locale"}``.

    Words are whitespace tokens of ``annot_utt`` with the brackets removed (so they match ``utt``); the words of a
    ``[slot : value]`` group are tagged B-slot, I-slot...  ``lang`` defaults to the locale's language part.
    """
    report = ReadReport(str(path))
    rows: list[Utterance] = []
    for number, line in _readable_lines(Path(path), report):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            annot, intent = obj["annot_utt"], obj["intent"]
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            _skip_line(report, number, "malformed line", str(err))
            continue
        words, tags, pos = [], [], 0
        for match in _ANNOT.finditer(annot):
            plain = annot[pos:match.start()].split()
            words += plain
            tags += ["O"] * len(plain)
            value = match.group(2).split()
            words += value
            tags += [("B-" if k == 0 else "I-") + match.group(1) for k in range(len(value))]
            pos = match.end()
        rest = annot[pos:].split()
        if "[" in annot[pos:] or "]" in annot[pos:]:
            _skip_line(report, number, "malformed annotation", annot)
            continue
        words += rest
        tags += ["O"] * len(rest)
        row_lang = lang or str(obj.get("locale", "xx")).split("-")[0].split("_")[0]
        _finish(report, rows, tags, number, words, intent, row_lang, orphan_policy)
    report.check_usable()
    return rows, report
