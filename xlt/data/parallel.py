"""Line-aligned parallel text for pre-training stages (Unicoder's TLM, word recovery, paraphrase classification and
code-switched MLM): ``corpus.parallel: {lang: [globs of that language's files]}`` under ``corpus.data_dir``; each
file's English side is the same path with the suffix ``.en`` (``parallel/en-de/bible-elb1932.de`` ->
``bible-elb1932.en``), or a pair is named explicitly as ``"other_file|english_file"`` (``xsid/train/da.mt.text|
xsid/train/en.text``).  A synthetic language (``corpus.parallel: {syn-en: [mono/en/*.txt]}``) pairs each line of
English files with its exact image (``xlt.synthetic``): unlimited perfect parallel text.

Both files must have the same number of lines (an error naming them otherwise).  A pair is skipped, and counted,
when either side is empty or not UTF-8, or when either side is longer than ``corpus.max_length`` sub-tokens (pairs
are never truncated or split: the halves must stay translations of each other).  The last ``heldout_lines`` usable
pairs of each file are held out.  Pairs keep their file and line order (``file``, ``line``), so consecutive pairs of
one file form a document (the Bible's verses run in book / chapter / verse order).  Tokenized pairs are cached like
the monolingual corpora, keyed by the tokenizer, both files and the settings.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from xlt.config import CorpusConfig
from xlt.data.readers import Unreadable, _lines, announce_skips
from xlt.errors import DataError
from xlt.synthetic import is_synthetic


@dataclass
class PairSet:
    """(English ids, other-language ids), each with its special tokens; ``lang`` the other language of each pair,
    ``file`` / ``line`` where it came from (consecutive lines of one file: one document)."""
    english: list[list[int]] = field(default_factory=list)
    other: list[list[int]] = field(default_factory=list)
    lang: list[str] = field(default_factory=list)
    file: list[int] = field(default_factory=list)
    line: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.english)


@dataclass
class ParallelCorpus:
    train: PairSet = field(default_factory=PairSet)
    heldout: PairSet = field(default_factory=PairSet)
    report: dict = field(default_factory=dict)


def parallel_files(cfg: CorpusConfig) -> list[tuple[str, Path, Path]]:
    """(lang, other-language file, English file) of every entry of ``corpus.parallel``."""
    base = Path(cfg.data_dir)
    out: list[tuple[str, Path, Path]] = []
    for lang, patterns in cfg.parallel.items():
        for pattern in patterns:
            if "|" in pattern:
                other, english = (base / p.strip() for p in pattern.split("|", 1))
                for f in (other, english):
                    if not f.exists():
                        raise DataError(f"{f}: not found (corpus.parallel.{lang}: {pattern!r})")
                out.append((lang, other, english))
                continue
            found = sorted(base.glob(pattern))
            if not found:
                raise DataError(f"{base / pattern}: no file matches (corpus.parallel.{lang}, under corpus.data_dir="
                                f"{base})")
            if is_synthetic(lang):  # syn-en: English files, each line paired with its exact synthetic image
                out += [(lang, f, f) for f in found]
                continue
            for other in found:
                english = other.with_suffix(".en")
                if not english.exists():
                    raise DataError(f"{other}: its English side {english.name} is missing (corpus.parallel.{lang}; "
                                    f"name other layouts as 'other_file|english_file')")
                out.append((lang, other, english))
    return out


def _read_pairs(other: Path, english: Path, tokenizer, cfg: CorpusConfig, lang: str = "") -> tuple[dict, dict]:
    from xlt.synthetic import parse, to_synthetic

    a, b = list(_lines(other)), list(_lines(english))
    synthetic = parse(lang)
    if synthetic is not None:
        a = [(n, x if isinstance(x, Unreadable) else to_synthetic(x, synthetic)) for n, x in a]
    if len(a) != len(b):
        raise DataError(f"{other} has {len(a)} lines but {english} has {len(b)}: parallel files must be line-aligned")
    kept, skipped, first = [], Counter({"empty": 0, "over_max_length": 0}), ""
    for (number, x), (_, y) in zip(a, b):
        if isinstance(x, Unreadable) or isinstance(y, Unreadable):
            bad, where = (x, other) if isinstance(x, Unreadable) else (y, english)
            skipped[bad.reason] += 1
            first = first or f"line {number} of {where.name}: {bad.detail}"
        elif not x.strip() or not y.strip():
            skipped["empty"] += 1
            first = first or f"line {number}: an empty side"
        else:
            kept.append((number, x.strip(), y.strip()))
    enc_x = tokenizer.encode_batch([x for _, x, _ in kept])
    enc_y = tokenizer.encode_batch([y for _, _, y in kept])
    rows = []
    for (number, _, _), ex, ey in zip(kept, enc_x, enc_y):
        if max(len(ex.ids), len(ey.ids)) > cfg.max_length:
            skipped["over_max_length"] += 1
        else:
            rows.append((number, list(ey.ids), list(ex.ids)))
    announce_skips(other, {k: v for k, v in skipped.items() if v and k != "over_max_length"}, len(a), first, "pairs")
    if len(rows) <= cfg.heldout_lines:
        raise DataError(f"{other}: {len(rows)} usable pairs, not more than corpus.heldout_lines={cfg.heldout_lines}")
    cut = len(rows) - cfg.heldout_lines
    train, heldout = rows[:cut], rows[cut:]
    if cfg.max_lines:
        train = train[:cfg.max_lines]
    report = {"file": str(other), "english": str(english), "lines": len(a), "skipped": dict(skipped),
              "train_pairs": len(train), "heldout_pairs": len(heldout),
              "train_tokens": sum(len(e) + len(o) for _, e, o in train)}
    return {"train": train, "heldout": heldout}, report


def _save(rows: dict, report: dict, cached: Path) -> None:
    tensors = {}
    for split, items in rows.items():
        tensors[f"{split}_line"] = torch.tensor([n for n, _, _ in items], dtype=torch.long)
        for k, side in ((1, "english"), (2, "other")):
            seqs = [item[k] for item in items]
            tensors[f"{split}_{side}_ids"] = torch.tensor([i for s in seqs for i in s], dtype=torch.int32)
            tensors[f"{split}_{side}_lengths"] = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")  # runs started at once each write their own
    save_file(tensors, str(tmp))
    cached.with_suffix(".json").write_text(json.dumps(report))
    os.replace(tmp, cached)  # written whole or not at all


def _load(cached: Path) -> tuple[dict, dict]:
    t = load_file(str(cached))
    rows = {}
    for split in ("train", "heldout"):
        sides = []
        for side in ("english", "other"):
            flat, start, seqs = t[f"{split}_{side}_ids"].tolist(), 0, []
            for n in t[f"{split}_{side}_lengths"].tolist():
                seqs.append(flat[start:start + n])
                start += n
            sides.append(seqs)
        rows[split] = list(zip(t[f"{split}_line"].tolist(), *sides))
    return rows, json.loads(cached.with_suffix(".json").read_text())


def load_parallel(cfg: CorpusConfig, tokenizer, tokenizer_file: Path, cache_dir: Path) -> ParallelCorpus:
    """Token id pairs of every ``corpus.parallel`` entry (train / held-out), through the cache."""
    corpus = ParallelCorpus(report={"files": []})
    tok_hash = hashlib.sha1(Path(tokenizer_file).read_bytes()).hexdigest()
    cache_dir.mkdir(parents=True, exist_ok=True)
    for index, (lang, other, english) in enumerate(parallel_files(cfg)):
        stats = [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in (other, english)]
        key = hashlib.sha1(json.dumps(["pairs", tok_hash, stats, cfg.heldout_lines, cfg.max_lines, cfg.max_length]
                                      + ([lang] if is_synthetic(lang) else [])).encode()).hexdigest()
        cached = cache_dir / f"{key}.safetensors"
        if cached.exists():
            rows, report = _load(cached)
        else:
            rows, report = _read_pairs(other, english, tokenizer, cfg, lang)
            _save(rows, report, cached)
        for split, target in (("train", corpus.train), ("heldout", corpus.heldout)):
            for number, en_ids, other_ids in rows[split]:
                target.english.append(en_ids)
                target.other.append(other_ids)
                target.lang.append(lang)
                target.file.append(index)
                target.line.append(number)
        corpus.report["files"].append({**report, "lang": lang})
    langs = sorted(set(corpus.train.lang))
    corpus.report["pairs_per_language"] = {lang: corpus.train.lang.count(lang) for lang in langs}
    corpus.report.update(train_pairs=len(corpus.train), heldout_pairs=len(corpus.heldout))
    return corpus
