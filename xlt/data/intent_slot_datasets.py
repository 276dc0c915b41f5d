"""Intent + slot datasets: xSID, MTOD (mapped to xSID's slot names) and MASSIVE-style JSONL.

- ``xsid``: train ``en`` (xsid/train/en.*), ``da`` (the shipped MT Danish set, da.mt.*); valid/test for all
  languages from ``{lang}.{valid,test}.conll``.
- ``mtod``: train ``en`` = the MTOD half of xSID's English train set (intent ``alarm/*``, ``reminder/*``,
  ``weather/*``), train ``es``/``th`` from ``train-{lang}.tsv``; valid/test from ``eval-``/``test-{lang}.tsv``,
  slot names mapped to xSID's (``readers.MTOD_TO_XSID``).
- ``massive``: ``{data_dir}/massive/{lang}.{split}.jsonl`` (any MASSIVE-style file).
"""
from __future__ import annotations

from pathlib import Path

from xlt.data.datasets import Dataset, Split, register_dataset
from xlt.data.readers import read_massive_jsonl, read_mtod_tsv, read_xsid_conll, read_xsid_train
from xlt.errors import MissingData

XSID_LANGS = ["ar", "da", "de", "de-ba", "de-muc", "de-st", "en", "gsw", "id", "it", "ja", "kk", "lt", "nap",
              "nl", "no", "sr", "tr", "zh"]
MTOD_DOMAINS = ("alarm/", "reminder/", "weather/")
# The shipped xSID train files keep SNIPS's weather intent (1,900 en lines), while every xSID valid/test set labels
# weather requests weather/find: xSID's own label mapping (mainlp/xsid scripts/mapping.txt, "GetWeather
# weather/find") merges them; its slot renames are already applied in the shipped files.
XSID_TRAIN_INTENT_MAP = {"GetWeather": "weather/find"}


def _xsid_dir(data_dir: Path) -> Path:
    d = Path(data_dir) / "xsid"
    if not d.is_dir():
        raise MissingData(f"{d}: xSID data not found. Set data.data_dir=PATH to a folder holding xsid/ (the layout: "
                        "docs/data-sources.md; in this project: ../shared/data).")
    return d


def load_xsid(data_dir: Path, lang: str, split: str, orphan_policy: str) -> Split:
    d = _xsid_dir(data_dir)
    if split == "train":
        stem = {"en": "en", "da": "da.mt"}[lang]
        rows, rep = read_xsid_train(d / "train" / f"{stem}.text", d / "train" / f"{stem}.label", lang, orphan_policy)
        for u in rows:
            if u.intent in XSID_TRAIN_INTENT_MAP:
                rep.repaired[f"intent {u.intent}->{XSID_TRAIN_INTENT_MAP[u.intent]} (lines)"] += 1
                u.intent = XSID_TRAIN_INTENT_MAP[u.intent]
    else:
        rows, rep = read_xsid_conll(d / f"{lang}.{split}.conll", lang, orphan_policy)
    return Split(rows, [rep])


def load_mtod(data_dir: Path, lang: str, split: str, orphan_policy: str) -> Split:
    if split == "train" and lang == "en":
        d = _xsid_dir(data_dir)
        # filter on the original intents, before GetWeather (SNIPS) is renamed to weather/find
        rows, rep = read_xsid_train(d / "train" / "en.text", d / "train" / "en.label", lang, orphan_policy)
        return Split([u for u in rows if u.intent.startswith(MTOD_DOMAINS)], [rep])
    prefix = {"train": "train", "valid": "eval", "test": "test"}[split]
    rows, rep = read_mtod_tsv(Path(data_dir) / "mtod" / f"{prefix}-{lang}.tsv", lang, "xsid", orphan_policy)
    return Split(rows, [rep])


def load_massive(data_dir: Path, lang: str, split: str, orphan_policy: str) -> Split:
    rows, rep = read_massive_jsonl(Path(data_dir) / "massive" / f"{lang}.{split}.jsonl", lang, orphan_policy)
    return Split(rows, [rep])


register_dataset(Dataset("xsid", "intent_slot", load_xsid, "xSID 0.7: en train (+ da MT), 18 target languages",
                         train_langs=("en", "da")))
register_dataset(Dataset("mtod", "intent_slot", load_mtod, "MTOD (Schuster et al. 2019) en/es/th, xSID slot names",
                         train_langs=("en", "es", "th")))
register_dataset(Dataset("massive", "intent_slot", load_massive, "MASSIVE-style JSONL files {lang}.{split}.jsonl",
                         train_langs=None))
