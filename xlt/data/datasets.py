"""Dataset registry: where each (dataset, language, split) lives under the data directory, how it is read, and which
task it feeds.  Reader modules register their datasets (``register_dataset``); they are found by discovery, so a new
dataset is its reader file alone.

Registered: ``xsid``, ``mtod``, ``massive`` (intent_slot; ``xlt/data/intent_slot_datasets.py``), ``xnli``, ``pawsx``
(pair_classification; ``xlt/data/pair_readers.py``), ``panx``, ``udpos`` (token_classification;
``xlt/data/tagged_readers.py``).
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from xlt.errors import MissingData
from xlt.data.records import DataError, Example, ReadReport
from xlt import registry
from xlt.synthetic import is_synthetic


@dataclass
class Split:
    examples: list
    reports: list[ReadReport]
    duplicates_removed: int = 0


@dataclass(frozen=True)
class Dataset:
    name: str
    task: str  # a registered task (xlt/tasks)
    # (data_dir, lang, split, orphan_policy) -> Split; split is train | valid | test
    load: Callable[[Path, str, str, str], Split]
    description: str
    task_options: dict = field(default_factory=dict)  # e.g. {"scheme": "bio"} for NER, {"scheme": "tags"} for POS
    # languages with a train split (xSID: da = its shipped MT set); None: any language that has the files
    train_langs: tuple[str, ...] | None = ("en",)
    notes: str = ""  # stated in every report (e.g. "target dev sets serve as test sets")


DATASETS = registry.DATASETS


def register_dataset(dataset: Dataset) -> Dataset:
    return DATASETS.add(dataset.name, dataset)


def get_dataset(name: str) -> Dataset:
    return DATASETS.get(name)


def load_split(data_dir: Path, dataset: str, lang: str, split: str, orphan_policy: str = "to_b") -> Split:
    """Read one split of a registered dataset in a natural language; ``split`` is ``train``, ``valid`` or ``test``.
    (A split in any language, a synthetic one included: ``xlt.synthetic.data.read_split``.)"""
    if split not in ("train", "valid", "test"):
        raise ValueError(f"split must be train/valid/test, not {split!r}")
    if is_synthetic(lang):
        raise ValueError(f"{lang} is a synthetic language: read it with xlt.synthetic.data.read_split")
    ds = get_dataset(dataset)
    if split == "train" and ds.train_langs is not None and lang not in ds.train_langs:
        raise DataError(f"{dataset} has training data for {', '.join(ds.train_langs)} only, not {lang!r}")
    result = ds.load(Path(data_dir), lang, split, orphan_policy)
    for report in result.reports:
        check_skips(report, split)
    return result


def check_skips(report: ReadReport, split: str) -> None:
    """A dev or test set is never changed silently: any skipped example is an error naming ``file:line`` (except
    an utterance of empty tokens only, which has nothing to predict: announced).  A training set may skip bad
    examples: counted in the report and announced on the console."""
    from xlt.data.readers import EMPTY_TOKENS_ONLY, announce_skips

    fatal = sorted(k for k in report.skipped if not (split != "train" and k == EMPTY_TOKENS_ONLY))
    if split != "train" and fatal:
        n = sum(report.skipped[k] for k in fatal)
        raise DataError(f"{report.first_skipped[fatal[0]]} -- {n} of {report.read} examples of this {split} set "
                        f"cannot be read as they are ({', '.join(f'{k}={report.skipped[k]}' for k in fatal)}); an "
                        f"evaluation set is never changed silently: fix the file")
    first = report.first_skipped[min(report.skipped)] if report.skipped else ""
    announce_skips(report.path, dict(report.skipped), report.read, first, "examples")
    if split != "train" and report.repaired:  # an evaluation set scored after a repair says so (and results.json)
        kinds = ", ".join(f"{k}={v}" for k, v in sorted(report.repaired.items()))
        print(f"xlt: {report.path}: {split} set repaired by xlt's stated rules ({kinds}); first: "
              f"{next((e for e in report.examples if 'repaired' in e), '')}", file=sys.stderr)


def require_file(path: Path, what: str) -> Path:
    if not path.exists():
        folder = path.parent
        raise MissingData(f"{path}: {what} not found" + ("" if folder.is_dir() else
                        f" ({folder} does not exist: set data.data_dir=PATH to the folder that holds the datasets)"))
    return path


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def text_key(e: Example) -> tuple:
    """The text of an example (its words, or both sentences of a pair), without labels."""
    return tuple(_frozen(getattr(e, f)) for f in ("words", "text_a", "text_b") if hasattr(e, f))


def dedup_key(e: Example) -> tuple:
    labels = tuple(_frozen(getattr(e, f.name)) for f in dataclasses.fields(e)
                   if f.name not in ("words", "text_a", "text_b", "lang", "origin", "reference", "translation"))
    return text_key(e) + labels + ((text_key(e.translation),) if e.translation is not None else (None,))


def deduplicate(rows: list) -> tuple[list, int]:
    """Drop exact duplicates (same text, same labels; paired examples: and the same translation text), keeping the
    first; return (rows, number removed)."""
    seen: set[tuple] = set()
    out = []
    for e in rows:
        key = dedup_key(e)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out, len(rows) - len(out)
