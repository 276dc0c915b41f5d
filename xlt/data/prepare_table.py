"""``xlt data prepare table``: any labelled data as one CSV, TSV (a header row) or JSONL file -> the layout xlt reads.

The columns say the task (``docs/data-sources.md``):

- ``text``, ``intent`` and optionally ``slots`` (one BIO tag per whitespace word of ``text``) -> intent + slots in
  the MASSIVE layout, ``massive/{lang}.{split}.jsonl`` (slots written as ``[slot : words]``); train with
  ``data.dataset=massive``.
- ``sentence1``, ``sentence2``, ``label`` -> sentence pairs: labels 0 / 1 in the PAWS-X layout
  (``pawsx/{train,dev,test}-{lang}.tsv``; training is English), labels entailment / neutral / contradiction in the
  XNLI layout (``xnli/{dev,test}-{lang}.tsv``; XNLI trains on ``nli-en/``).
- ``tokens``, ``tags`` (space-separated, or JSON lists in JSONL) -> a tag per word: BIO tags in the PAN-X layout
  (``panx/{train,dev}-{lang}.tsv``: PAN-X tests a target language on its ``dev`` file, so ``test`` rows go there),
  other tags (e.g. UPOS) in the UD POS layout (``udpos/{train,dev,test}-{lang}.tsv``).

Every row names its language and split in ``lang`` / ``split`` columns (``train``, ``dev`` or ``valid``, ``test``),
or the file's rows all take ``--lang`` / ``--split``.  A bad row stops the conversion, naming the file and line.
"""
from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

from xlt.core.spans import get_entities
from xlt.data.bio import is_valid_tag
from xlt.errors import DataError

TASK_COLUMNS = {"intent_slot": ("text", "intent"), "pairs": ("sentence1", "sentence2", "label"),
                "tags": ("tokens", "tags")}
SPLITS = {"train": "train", "dev": "dev", "valid": "dev", "test": "test"}
NLI_LABELS = {"entailment", "neutral", "contradiction"}


def _records(path: Path) -> list[tuple[int, dict]]:
    """(line number, row) for every data row of a CSV / TSV (by suffix; a header row) or JSONL file."""
    if path.suffix == ".jsonl":
        rows = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                except ValueError as err:
                    raise DataError(f"{path}:{number}: not JSON ({err})") from None
                if not isinstance(row, dict):
                    raise DataError(f"{path}:{number}: a JSON object per line expected")
                rows.append((number, row))
        return rows
    if path.suffix not in (".csv", ".tsv"):
        raise DataError(f"{path}: a .csv, .tsv or .jsonl file expected")
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t" if path.suffix == ".tsv" else ",")
        return [(reader.line_num, row) for row in reader]


def _task(path: Path, columns: set[str]) -> str:
    for task, needed in TASK_COLUMNS.items():
        if set(needed) <= columns:
            return task
    raise DataError(f"{path}:1: columns {sorted(columns)} name no task: give text + intent [+ slots], "
                    "sentence1 + sentence2 + label, or tokens + tags")


def _words(value, path: Path, number: int, column: str) -> list[str]:
    words = value if isinstance(value, list) else str(value or "").split()
    if not words or not all(isinstance(w, str) and w.strip() for w in words):
        raise DataError(f"{path}:{number}: empty or non-text {column!r}")
    return [w.strip() for w in words]


def _annotated(words: list[str], tags: list[str], path: Path, number: int) -> str:
    """BIO tags over words -> MASSIVE's ``annot_utt`` (``wake me at [time : five am]``); spans read as everywhere in
    xlt (``xlt.core.spans``: an orphan ``I-X`` starts a span)."""
    if len(tags) != len(words):
        raise DataError(f"{path}:{number}: {len(tags)} slot tags for {len(words)} words")
    bad = next((t for t in tags if not is_valid_tag(t)), None)
    if bad is not None:
        raise DataError(f"{path}:{number}: slot tag {bad!r} is not O, B-slot or I-slot")
    parts = list(words)
    for slot, first, last in reversed(get_entities(tags)):
        parts[first:last + 1] = [f"[{slot} : {' '.join(words[first:last + 1])}]"]
    return " ".join(parts)


def prepare_table(source: Path, out: Path, lang: str | None = None, split: str | None = None) -> list[Path]:
    rows = _records(source)
    if not rows:
        raise DataError(f"{source}: no rows")
    task = _task(source, set(rows[0][1]))
    lines: dict[tuple[str, str], list[str]] = defaultdict(list)
    pair_labels: set[str] = set()
    bio = True
    parsed = []
    for number, row in rows:
        row_lang, row_split = row.get("lang") or lang, SPLITS.get(str(row.get("split") or split or ""))
        if not row_lang or not row_split:
            raise DataError(f"{source}:{number}: no language or split (columns lang / split, or --lang / --split; "
                            "split is train, dev, valid or test)")
        missing = [c for c in TASK_COLUMNS[task] if row.get(c) in (None, "")]
        if missing:
            raise DataError(f"{source}:{number}: empty {', '.join(missing)}")
        if task == "intent_slot":
            words = _words(row["text"], source, number, "text")
            tags = _words(row["slots"], source, number, "slots") if row.get("slots") else ["O"] * len(words)
            item = json.dumps({"annot_utt": _annotated(words, tags, source, number), "intent": str(row["intent"]),
                               "locale": row_lang}, ensure_ascii=False)
        elif task == "pairs":
            a, b, label = (" ".join(str(row[c]).split()) for c in ("sentence1", "sentence2", "label"))
            pair_labels.add(label.lower())
            item = f"{a}\t{b}\t{label.lower()}"
        else:
            words, tags = (_words(row[c], source, number, c) for c in ("tokens", "tags"))
            if len(words) != len(tags):
                raise DataError(f"{source}:{number}: {len(tags)} tags for {len(words)} tokens")
            bio = bio and all(map(is_valid_tag, tags))
            item = "\n".join(f"{w}\t{t}" for w, t in zip(words, tags)) + "\n"
        parsed.append((number, row_lang, row_split, item))
    if task == "pairs" and not (pair_labels <= {"0", "1"} or pair_labels <= NLI_LABELS):
        raise DataError(f"{source}: pair labels {sorted(pair_labels)}: xlt reads 0 / 1 (PAWS-X) or entailment / "
                        "neutral / contradiction (XNLI)")
    folder = {"intent_slot": "massive", "pairs": "pawsx" if pair_labels <= {"0", "1"} else "xnli",
              "tags": "panx" if bio else "udpos"}[task]
    for number, row_lang, row_split, item in parsed:
        if folder == "xnli" and row_split == "train":
            raise DataError(f"{source}:{number}: XNLI-style training pairs are read from nli-en/snli.tsv and "
                            "nli-en/sick.tsv (docs/data-sources.md), not converted here")
        if folder == "pawsx" and row_split == "train" and row_lang != "en":
            raise DataError(f"{source}:{number}: PAWS-X-style training is English (train-en.tsv), not {row_lang}")
        lines[(row_lang, "dev" if folder == "panx" and row_split == "test" else row_split)].append(item)
    both = {x for _, x, s, _ in parsed if s == "test"} & {x for _, x, s, _ in parsed if s == "dev"}
    if folder == "panx" and both:
        raise DataError(f"{source}: PAN-X-style data tests a language on its dev file: {', '.join(sorted(both))} "
                        "has dev and test rows; give one of them")
    written = []
    for (row_lang, row_split), items in sorted(lines.items()):
        name = (f"{row_lang}.{'valid' if row_split == 'dev' else row_split}.jsonl" if folder == "massive"
                else f"{row_split}-{row_lang}.tsv")
        target = out / folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        # a sentence of tags ends in a newline already: joined by one more, a blank line parts sentences
        target.write_text("\n".join(items).rstrip("\n") + "\n", encoding="utf-8")
        written.append(target)
    return written
