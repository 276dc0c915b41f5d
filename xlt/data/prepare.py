"""``xlt data prepare NAME --from PATH --out DIR``: an official release, as its authors distribute it, converted into
the layout xlt reads (docs/data-sources.md), under ``DIR/NAME/``.  Rows keep their order (XNLI's and PAWS-X's
languages are parallel line by line); nothing is filtered here -- ``xlt data check DIR --dataset NAME`` then says
what a run would read, repair or refuse.

- ``massive``: MASSIVE 1.x's ``data/{locale}.jsonl`` (fields ``locale``, ``partition`` train/dev/test,
  ``annot_utt``, ``intent``) -> ``massive/{lang}.{train,valid,test}.jsonl``; ``lang`` is the locale's language
  (``de-DE`` -> ``de``), or the whole locale, lower-cased, where two locales share a language (``zh-cn``, ``zh-tw``).
- ``xnli``: XNLI 1.0's ``xnli.dev.tsv`` / ``xnli.test.tsv`` (a header; columns ``language``, ``gold_label``,
  ``sentence1``, ``sentence2``) -> ``xnli/{dev,test}-{lang}.tsv`` (sentence1 TAB sentence2 TAB label).
- ``pawsx``: PAWS-X's ``x-final/{lang}/{train,dev_2k,test_2k}.tsv`` (a header; ``id sentence1 sentence2 label``)
  -> ``pawsx/{dev,test}-{lang}.tsv`` and ``pawsx/train-en.tsv`` (English ``train.tsv``; the translated training
  sets stay out: zero-shot trains on English).
- ``xsid``: the xSID repository's ``data/`` folder (github mainlp/xsid): the newest ``xSID-0.N/`` version's
  ``{lang}.{valid,test}.conll`` -> ``xsid/``, and the English training set ``xSID/mt.train.da/text.en`` +
  ``label.en`` (tokens; BIO tags TAB intent) -> ``xsid/train/en.text`` + ``en.label``, with its Danish machine
  translation (``sys_text.da`` / ``sys_label.da``) -> ``xsid/train/da.mt.text`` / ``da.mt.label`` when present.
- ``panx``: WikiANN as XTREME's download leaves it, ``{lang}-{train,dev,test}`` files of ``lang:token TAB tag`` lines
  (a blank line between sentences) -> ``panx/{train,dev,test}-{lang}.tsv`` (``token TAB tag``), the ``lang:`` prefix
  taken off as XTREME's ``panx_preprocess`` does.
- ``table``: your own labelled data as one CSV / TSV / JSONL file (``xlt/data/prepare_table.py``).
"""
from __future__ import annotations

import csv
import json
import shutil
from collections import defaultdict
from pathlib import Path

from xlt.data.prepare_table import prepare_table
from xlt.errors import DataError

PARTITIONS = {"train": "train", "dev": "valid", "test": "test"}


def _need(path: Path, what: str) -> Path:
    if not path.exists():
        raise DataError(f"{path}: not found ({what})")
    return path


def _rows(path: Path, columns: tuple[str, ...]) -> list[dict]:
    """A tab-separated file with a header, as dicts; a missing column is an error naming the file."""
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}:1: no column {', '.join(missing)} in the header {reader.fieldnames}")
        return list(reader)


def _clean(text: str | None) -> str:
    return " ".join((text or "").replace("\t", " ").split())


def _write_pairs(path: Path, rows: list[tuple[str, str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{a}\t{b}\t{label}\n" for a, b, label in rows), encoding="utf-8")


def prepare_massive(source: Path, out: Path) -> list[Path]:
    folder = source / "data" if (source / "data").is_dir() else source
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise DataError(f"{folder}: no {{locale}}.jsonl files (MASSIVE's data/ folder)")
    locales = [f.stem for f in files]
    prefix_count = defaultdict(int)
    for locale in locales:
        prefix_count[locale.split("-")[0].lower()] += 1
    written = []
    for path in files:
        lang = path.stem.split("-")[0].lower()
        lang = lang if prefix_count[lang] == 1 else path.stem.lower()
        by_split: dict[str, list[str]] = defaultdict(list)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                split = PARTITIONS[row["partition"]]
                keep = {"annot_utt": row["annot_utt"], "intent": row["intent"], "locale": row.get("locale", path.stem)}
            except (ValueError, KeyError) as err:
                raise DataError(f"{path}:{number}: not a MASSIVE record ({err!r}): fields partition, annot_utt, "
                                "intent") from None
            by_split[split].append(json.dumps(keep, ensure_ascii=False))
        for split, lines in by_split.items():
            target = out / "massive" / f"{lang}.{split}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.append(target)
    return written


def prepare_xnli(source: Path, out: Path) -> list[Path]:
    written = []
    for split in ("dev", "test"):
        path = _need(source / f"xnli.{split}.tsv", "XNLI 1.0's xnli.dev.tsv / xnli.test.tsv")
        by_lang: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for row in _rows(path, ("language", "gold_label", "sentence1", "sentence2")):
            by_lang[row["language"]].append((_clean(row["sentence1"]), _clean(row["sentence2"]), row["gold_label"]))
        for lang, rows in by_lang.items():
            target = out / "xnli" / f"{split}-{lang}.tsv"
            _write_pairs(target, rows)
            written.append(target)
    return written


def prepare_pawsx(source: Path, out: Path) -> list[Path]:
    folder = source / "x-final" if (source / "x-final").is_dir() else source
    langs = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    if not langs:
        raise DataError(f"{folder}: no language folders (PAWS-X's x-final/{{lang}}/)")
    written = []
    for lang in langs:
        for name, split in (("dev_2k.tsv", "dev"), ("test_2k.tsv", "test"), ("train.tsv", "train")):
            path = folder / lang / name
            if not path.exists() or (split == "train" and lang != "en"):
                continue
            rows = [(_clean(r["sentence1"]), _clean(r["sentence2"]), r["label"])
                    for r in _rows(path, ("sentence1", "sentence2", "label"))]
            target = out / "pawsx" / f"{split}-{lang}.tsv"
            _write_pairs(target, rows)
            written.append(target)
    return written


def _version(folder: Path) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in folder.name.split("-", 1)[1].split("."))


def prepare_xsid(source: Path, out: Path) -> list[Path]:
    folder = source / "data" if (source / "data").is_dir() else source
    versions = sorted((p for p in folder.glob("xSID-0.*") if p.is_dir()), key=_version)
    if not versions:
        raise DataError(f"{folder}: no xSID-0.N/ folder (the xSID repository's data/ folder)")
    train = folder / "xSID" / "mt.train.da"
    for name in ("text.en", "label.en"):
        _need(train / name, "the English training set: xSID/mt.train.da/text.en and label.en")
    copies = [(p, out / "xsid" / p.name) for p in sorted(versions[-1].glob("*.conll"))
              if p.name.endswith((".valid.conll", ".test.conll"))]
    copies += [(train / name, out / "xsid" / "train" / new) for name, new in
               {"text.en": "en.text", "label.en": "en.label", "sys_text.da": "da.mt.text",
                "sys_label.da": "da.mt.label"}.items() if (train / name).exists()]
    for path, target in copies:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return [target for _, target in copies]


def prepare_panx(source: Path, out: Path) -> list[Path]:
    files = sorted(p for p in source.glob("*-*") if p.is_file() and p.name.rsplit("-", 1)[1] in ("train", "dev", "test"))
    if not files:
        raise DataError(f"{source}: no {{lang}}-{{train,dev,test}} files (WikiANN / PAN-X as XTREME downloads it)")
    written = []
    for path in files:
        lang, split = path.name.rsplit("-", 1)
        lines = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            items = line.strip().split("\t")
            if len(items) != 2:
                lines.append("")  # a sentence ends (XTREME reads any other line so)
                continue
            token, tag = items
            if ":" not in token:
                raise DataError(f"{path}:{number}: a token without its 'lang:' prefix ({token!r}); is this file "
                                "already converted?")
            lines.append(f"{token.split(':', 1)[1].strip()}\t{tag.strip()}")
        target = out / "panx" / f"{split}-{lang}.tsv"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines).strip("\n") + "\n", encoding="utf-8")
        written.append(target)
    return written


PREPARERS = {"massive": prepare_massive, "xnli": prepare_xnli, "pawsx": prepare_pawsx, "xsid": prepare_xsid,
             "panx": prepare_panx, "table": prepare_table}


def prepare(name: str, source: str | Path, out: str | Path, lang: str | None = None,
            split: str | None = None) -> list[Path]:
    """Convert the release (or, for ``table``, the labelled CSV / TSV / JSONL file) at ``source`` into
    ``out/<dataset>/``; returns the files written.  ``lang`` / ``split``: ``table``'s rows without those columns."""
    if name not in PREPARERS:
        raise DataError(f"xlt data prepare: no converter for {name!r} (have: {', '.join(PREPARERS)}); the layouts "
                        "xlt reads: docs/data-sources.md")
    source = Path(source)
    if not source.exists():
        raise DataError(f"--from {source}: no such file or folder")
    if name == "table":
        return prepare_table(source, Path(out), lang, split)
    if lang or split:
        raise DataError(f"--lang / --split are for 'table' files; {name} releases name their own")
    return PREPARERS[name](source, Path(out))
