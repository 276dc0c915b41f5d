"""Where each (dataset, language, split) lives under the data directory, and how it is read.

Datasets:
- ``xsid``: train ``en`` (xsid/train/en.*), ``da`` (the shipped MT Danish set, da.mt.*); valid/test for all
  languages from ``{lang}.{valid,test}.conll``.
- ``mtod``: train ``en`` = the MTOD half of xSID's English train set (intent ``alarm/*``, ``reminder/*``,
  ``weather/*``), train ``es``/``th`` from ``train-{lang}.tsv``; valid/test from ``eval-``/``test-{lang}.tsv``,
  slot names mapped to xSID's (``readers.MTOD_TO_XSID``).
- ``massive``: ``{data_dir}/massive/{lang}.{split}.jsonl`` (any MASSIVE-style file).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xlt.data.readers import read_massive_jsonl, read_mtod_tsv, read_xsid_conll, read_xsid_train
from xlt.data.records import DataError, ReadReport, Utterance

XSID_LANGS = ["ar", "da", "de", "de-ba", "de-muc", "de-st", "en", "gsw", "id", "it", "ja", "kk", "lt", "nap",
              "nl", "no", "sr", "tr", "zh"]
MTOD_DOMAINS = ("alarm/", "reminder/", "weather/")
# The shipped xSID train files keep SNIPS's weather intent (1,900 en lines), while every xSID valid/test set labels
# weather requests weather/find: xSID's own label mapping (mainlp/xsid scripts/mapping.txt, "GetWeather
# weather/find") merges them; its slot renames are already applied in the shipped files.
XSID_TRAIN_INTENT_MAP = {"GetWeather": "weather/find"}


@dataclass
class Split:
    examples: list[Utterance]
    reports: list[ReadReport]
    duplicates_removed: int = 0


def _xsid_dir(data_dir: Path) -> Path:
    d = Path(data_dir) / "xsid"
    if not d.is_dir():
        raise DataError(f"{d}: xSID data not found. Point --data-dir (or data.data_dir=...) at a folder holding "
                        "xsid/ (in this project: ../shared/data).")
    return d


def load_split(data_dir: Path, dataset: str, lang: str, split: str, orphan_policy: str = "to_b") -> Split:
    """Read one split; ``split`` is ``train``, ``valid`` or ``test``."""
    if split not in ("train", "valid", "test"):
        raise ValueError(f"split must be train/valid/test, not {split!r}")
    if dataset == "xsid":
        d = _xsid_dir(data_dir)
        if split == "train":
            stem = {"en": "en", "da": "da.mt"}.get(lang)
            if stem is None:
                raise DataError(f"xSID has training data for en and da (MT) only, not {lang!r}")
            rows, rep = read_xsid_train(d / "train" / f"{stem}.text", d / "train" / f"{stem}.label", lang,
                                        orphan_policy)
            for u in rows:
                if u.intent in XSID_TRAIN_INTENT_MAP:
                    rep.repaired[f"intent {u.intent}->{XSID_TRAIN_INTENT_MAP[u.intent]} (lines)"] += 1
                    u.intent = XSID_TRAIN_INTENT_MAP[u.intent]
        else:
            rows, rep = read_xsid_conll(d / f"{lang}.{split}.conll", lang, orphan_policy)
        return Split(rows, [rep])
    if dataset == "mtod":
        if split == "train" and lang == "en":
            d = _xsid_dir(data_dir)
            # filter on the original intents, before GetWeather (SNIPS) is renamed to weather/find
            rows, rep = read_xsid_train(d / "train" / "en.text", d / "train" / "en.label", lang, orphan_policy)
            return Split([u for u in rows if u.intent.startswith(MTOD_DOMAINS)], [rep])
        d = Path(data_dir) / "mtod"
        prefix = {"train": "train", "valid": "eval", "test": "test"}[split]
        rows, rep = read_mtod_tsv(d / f"{prefix}-{lang}.tsv", lang, "xsid", orphan_policy)
        return Split(rows, [rep])
    if dataset == "massive":
        rows, rep = read_massive_jsonl(Path(data_dir) / "massive" / f"{lang}.{split}.jsonl", lang, orphan_policy)
        return Split(rows, [rep])
    raise ValueError(f"unknown dataset {dataset!r} (xsid, mtod, massive)")


def deduplicate(rows: list[Utterance]) -> tuple[list[Utterance], int]:
    """Drop exact duplicates (same words, tags and intent), keeping the first; return (rows, number removed)."""
    seen: set[tuple] = set()
    out = []
    for u in rows:
        key = (tuple(u.words), tuple(u.slots), u.intent,
               tuple(u.translation.words) if u.translation is not None else None)  # paired: one per translation
        if key not in seen:
            seen.add(key)
            out.append(u)
    return out, len(rows) - len(out)
