"""Token-classification datasets in the XTREME format: ``token TAB tag`` a line, a blank line between sentences.

- ``panx`` (WikiANN / PAN-X NER, BIO over PER/ORG/LOC): train ``en``; the shared data has only dev sets for the
  other languages, so **target dev sets serve as test sets** (``test`` of a target language reads
  ``dev-{lang}.tsv``).  The English dev set is cut in two: its first half is the selection (``valid``) set, its
  second half English ``test``, so the transfer gap is never measured on the selection data.
- ``udpos`` (Universal Dependencies 2.5 UPOS): train ``en``; English dev cut in two as for PAN-X; ``test`` of a
  target language reads ``test-{lang}.tsv``.
Sentences with a malformed line, an empty token carrying a label, an invalid tag (not BIO for NER, not one of the
17 UPOS tags for POS) are skipped and counted; orphan ``I-`` tags are repaired as in xSID (``data.orphan_policy``).
"""
from __future__ import annotations

from pathlib import Path

from xlt.data.bio import repair_into
from xlt.data.datasets import Dataset, Split, register_dataset, require_file
from xlt.data.readers import Unreadable, _lines
from xlt.data.records import ReadReport, TaggedSentence

UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT", "SCONJ",
        "SYM", "VERB", "X")
PANX_LANGS = ("ar", "de", "en", "es", "fi", "fr", "hi", "id", "it", "ja", "kk", "ko", "lt", "nl", "pt", "ru", "tr",
              "zh")
UDPOS_LANGS = ("ar", "en", "es", "fi", "fr", "hi", "id", "it", "ja", "kk", "ko", "lt", "nl", "pt", "ru", "tr", "zh")


def read_tagged(path: Path, lang: str, scheme: str, orphan_policy: str = "to_b"
                ) -> tuple[list[TaggedSentence], ReadReport]:
    """Read ``token TAB tag`` sentences; ``scheme`` is ``bio`` (NER) or ``tags`` (POS)."""
    report = ReadReport(str(path))
    rows: list[TaggedSentence] = []
    words: list[str] = []
    tags: list[str] = []
    start, bad = 0, None

    def finish() -> None:
        nonlocal words, tags, start, bad
        if start:
            report.read += 1
            if bad:
                report.skip(start, *bad)
            elif not words:
                report.skip(start, "empty sentence")
            else:
                fixed: list[str] | None = tags
                if scheme == "bio":
                    fixed = repair_into(report, start, tags, orphan_policy, "sentences")
                if fixed is not None:
                    rows.append(TaggedSentence(words, fixed, lang, f"{path}:{start}"))
                    report.kept += 1
        words, tags, start, bad = [], [], 0, None

    for number, line in _lines(Path(path)):
        if isinstance(line, str) and not line.strip():
            finish()
            continue
        start = start or number
        if isinstance(line, Unreadable):
            bad = bad or (line.reason, f"line {number}: {line.detail}")
            continue
        cols = line.split("\t")
        if len(cols) != 2:
            bad = bad or ("malformed line", f"line {number}: {len(cols)} columns, expected 2 (token, tag)")
            continue
        word, tag = cols[0].strip(), cols[1].strip()
        if scheme == "tags" and tag not in UPOS:
            bad = bad or ("invalid tag", f"line {number}: {tag!r} is not a UPOS tag")
            continue
        if not word:
            if tag in ("O", "PUNCT", "X", "SYM"):
                report.repair(number, "empty token dropped")
                continue
            bad = bad or ("empty token with a label", f"line {number}: {tag}")
            continue
        words.append(word)
        tags.append(tag)
    finish()
    report.check_usable()
    return rows, report


def _loader(folder: str, scheme: str, target_test: str):
    def load(data_dir: Path, lang: str, split: str, orphan_policy: str) -> Split:
        base = Path(data_dir) / folder
        if split == "train":
            name = f"train-{lang}.tsv"
        elif lang == "en":
            name = "dev-en.tsv"
        elif split == "test":
            name = f"{target_test}-{lang}.tsv"
        else:
            name = f"dev-{lang}.tsv"
        rows, rep = read_tagged(require_file(base / name, f"{folder} {split} file"), lang, scheme, orphan_policy)
        if split != "train" and lang == "en":  # English dev: first half selects, second half is English test
            half = len(rows) // 2
            rows = rows[:half] if split == "valid" else rows[half:]
            rep.repaired[f"{split}: {'first' if split == 'valid' else 'second'} half of dev-en kept"] = len(rows)
        return Split(rows, [rep])
    return load


register_dataset(Dataset(
    "panx", "token_classification", _loader("panx", "bio", "dev"),
    "PAN-X / WikiANN NER (XTREME): train en, 18 languages", task_options={"scheme": "bio"},
    notes="target-language dev sets serve as test sets; English dev: first half selects, second half is en test"))
register_dataset(Dataset(
    "udpos", "token_classification", _loader("udpos", "tags", "test"),
    "Universal Dependencies 2.5 UPOS (XTREME): train en, test in 16 languages", task_options={"scheme": "tags"},
    notes="English dev: first half selects, second half is en test (no English test file here)"))
