"""``xlt data check DIR [--dataset NAME] [--langs ...]``: read every split of a data folder with the same readers and
rules a training run uses, without training, and say what ``data_report.json`` would: per language and split the
examples read and kept, what was repaired and skipped, and the first ``file:line: problem`` lines.  A dev or test
set that a run would refuse (any example that cannot be read as it is) is an error here too."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from xlt.data.datasets import DATASETS, get_dataset, load_split
from xlt.errors import ConfigError, DataError, MissingData

# file names that carry a language code, per dataset folder layout (docs/data-sources.md)
LANG_IN_NAME = [re.compile(r"^(?P<lang>[a-z]{2,3}(?:-[A-Za-z]+)?)\.(?:train|valid|test)\.(?:conll|jsonl)$"),
                re.compile(r"^(?:train|dev|test|eval)-(?P<lang>[a-z]{2,3}(?:-[A-Za-z]+)?)\.tsv$"),
                re.compile(r"^(?P<lang>[a-z]{2,3}(?:-[A-Za-z]+)?)\.(?:text|label)$")]
SPLITS = ("train", "valid", "test")


@dataclass
class SplitCheck:
    lang: str
    split: str
    present: bool = True
    read: int = 0
    kept: int = 0
    skipped: dict = field(default_factory=dict)
    repaired: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    error: str = ""


def languages(folder: Path) -> list[str]:
    """The language codes in a dataset folder's file names (its subfolders too)."""
    found = set()
    for path in folder.rglob("*"):
        for pattern in LANG_IN_NAME:
            m = pattern.match(path.name)
            if m:
                found.add(m.group("lang"))
    return sorted(found, key=lambda lang: (lang != "en", lang))


def check_folder(data_dir: str | Path, dataset: str, langs: list[str] | None = None,
                 orphan_policy: str = "to_b") -> list[SplitCheck]:
    """Every (language, split) of ``dataset`` under ``data_dir``, read as a run reads it."""
    if dataset not in DATASETS.names():
        raise ConfigError(f"--dataset {dataset!r}: not one of {', '.join(DATASETS.names())}")
    ds = get_dataset(dataset)
    folder = Path(data_dir) / dataset
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (a data folder holds a subfolder per dataset: "
                        "docs/data-sources.md)")
    langs = langs or languages(folder)
    if not langs:
        raise DataError(f"{folder}: no file name carries a language code; name the languages with --langs")
    out = []
    for lang in langs:
        for split in SPLITS:
            if split == "train" and ds.train_langs is not None and lang not in ds.train_langs:
                continue
            check = SplitCheck(lang, split)
            try:
                result = load_split(Path(data_dir), dataset, lang, split, orphan_policy)
            except MissingData:
                check.present = False
                out.append(check)
                continue
            except DataError as err:
                check.error = str(err)
                out.append(check)
                continue
            for report in result.reports:
                check.read += report.read
                check.kept += report.kept
                for kind, n in report.skipped.items():
                    check.skipped[kind] = check.skipped.get(kind, 0) + n
                for kind, n in report.repaired.items():
                    check.repaired[kind] = check.repaired.get(kind, 0) + n
                check.problems += report.examples
            out.append(check)
    return out


def report_text(checks: list[SplitCheck]) -> str:
    lines = []
    for c in checks:
        where = f"{c.lang} {c.split}"
        if not c.present:
            lines.append(f"{where}: not present")
        elif c.error:
            lines.append(f"{where}: ERROR {c.error}")
        else:
            extra = "".join(f"; skipped {k}={n}" for k, n in c.skipped.items())
            extra += "".join(f"; repaired {k}={n}" for k, n in c.repaired.items())
            lines.append(f"{where}: {c.kept} of {c.read} examples kept{extra}")
            lines += [f"  {p}" for p in c.problems]
    return "\n".join(lines)
