"""Sentence-pair datasets: XNLI (3-way NLI) and PAWS-X (2-way paraphrase), TSV ``sentence1 TAB sentence2 TAB label``.

- ``xnli``: train ``en`` = ``nli-en/snli.tsv`` + ``nli-en/sick.tsv`` (English NLI data; XNLI has no train split
  here); valid / test = ``xnli/dev-{lang}.tsv`` / ``xnli/test-{lang}.tsv`` (gold test labels, 15 languages).
- ``pawsx``: train ``en`` = ``pawsx/train-en.tsv`` (PAWS-Wiki pairs, sentence-disjoint from PAWS-X dev/test);
  valid / test = ``pawsx/dev-{lang}.tsv`` / ``pawsx/test-{lang}.tsv`` (7 languages).
Rows of XNLI and PAWS-X dev/test files are parallel across languages, so every target row gets the English row of
the same line as its ``reference`` (a human translation: the ``oracle`` translator of translate-test uses it).
"""
from __future__ import annotations

from pathlib import Path

from xlt.data.datasets import Dataset, Split, register_dataset, require_file
from xlt.data.readers import Unreadable, _lines
from xlt.data.records import ReadReport, SentencePair

XNLI_LABELS = ("entailment", "neutral", "contradiction")
XNLI_LANGS = ("ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh")
PAWSX_LABELS = ("0", "1")
PAWSX_LANGS = ("de", "en", "es", "fr", "ja", "ko", "zh")


def read_pair_tsv(path: Path, lang: str, labels: tuple[str, ...]) -> tuple[list[SentencePair], ReadReport]:
    """One pair a line: ``text_a TAB text_b TAB label`` (CRLF or LF).  Malformed lines, empty sentences and labels
    outside ``labels`` are skipped and counted (``file:line: problem``); a file without usable rows is an error."""
    report = ReadReport(str(path))
    rows: list[SentencePair] = []
    for number, line in _lines(Path(path)):
        if isinstance(line, str) and not line.strip():
            continue
        report.read += 1
        if isinstance(line, Unreadable):
            report.skip(number, line.reason, line.detail)
            continue
        cols = line.split("\t")
        if len(cols) != 3:
            report.skip(number, "malformed line", f"{len(cols)} columns, expected 3 (text_a, text_b, label)")
            continue
        a, b, label = cols[0].strip(), cols[1].strip(), cols[2].strip().lower()
        if not a or not b:
            report.skip(number, "empty sentence")
            continue
        if label not in labels:
            report.skip(number, "unknown label", f"{label!r} (expected one of {', '.join(labels)})")
            continue
        rows.append(SentencePair(a, b, label, lang, f"{path}:{number}"))
        report.kept += 1
    report.check_usable()
    return rows, report


def _with_references(rows: list[SentencePair], english: Path) -> None:
    """Attach the English row of the same line (parallel files) as each row's human reference translation."""
    if not english.exists():
        return
    by_line = {}
    for number, line in _lines(english):
        cols = (line if isinstance(line, str) else "").split("\t")
        if len(cols) == 3:
            by_line[number] = [cols[0].strip(), cols[1].strip()]
    for e in rows:
        e.reference = by_line.get(int(e.origin.rsplit(":", 1)[1]))


def _loader(folder: str, train_files: tuple[str, ...], labels: tuple[str, ...]):
    def load(data_dir: Path, lang: str, split: str, orphan_policy: str) -> Split:
        if split == "train":
            rows, reports = [], []
            for name in train_files:
                part, rep = read_pair_tsv(require_file(Path(data_dir) / name, "training file"), lang, labels)
                rows += part
                reports.append(rep)
            return Split(rows, reports)
        stem = "dev" if split == "valid" else "test"
        path = require_file(Path(data_dir) / folder / f"{stem}-{lang}.tsv", f"{folder} {split} file")
        rows, rep = read_pair_tsv(path, lang, labels)
        if lang != "en":
            _with_references(rows, Path(data_dir) / folder / f"{stem}-en.tsv")
        return Split(rows, [rep])
    return load


register_dataset(Dataset(
    "xnli", "pair_classification", _loader("xnli", ("nli-en/snli.tsv", "nli-en/sick.tsv"), XNLI_LABELS),
    "XNLI (Conneau et al. 2018): train on English SNLI dev+test + SICK, test on 15 languages"))
register_dataset(Dataset(
    "pawsx", "pair_classification", _loader("pawsx", ("pawsx/train-en.tsv",), PAWSX_LABELS),
    "PAWS-X (Yang et al. 2019): train on English PAWS-Wiki pairs, test on 7 languages"))
