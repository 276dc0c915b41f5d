"""Plain-text corpora for pre-training stages: files of one sentence a line (``../shared/data/mono/{lang}/*.txt``,
``parallel/en-{lang}/*.{en,lang}``), tokenized once into a cache (``$XLT_HOME/corpora``), keyed by the tokenizer
file, the text file (path, size, modification time) and the settings, so a changed file is tokenized again.

The last ``heldout_lines`` non-empty lines of each file are held out for evaluation and never trained on.  A line
longer than ``max_length`` sub-tokens is split into pieces of at most that length (with the special tokens of each
piece), counted in the report, never truncated.  A synthetic language (``corpus.langs: {syn-en: [mono/en/*.txt]}``)
reads its base language's files and re-writes each line (``xlt.synthetic``); ``corpus.line_selection`` gives a
language every n-th line of its files only.  Lines that are not UTF-8 are skipped
and counted; a glob that matches no file, or a file without usable lines, is an error naming it.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from xlt.config import CorpusConfig
from xlt.data.readers import text_lines
from xlt.errors import ConfigError, DataError
from xlt.synthetic import is_synthetic, rewrite_lines


@dataclass
class Corpus:
    train: list[list[int]] = field(default_factory=list)  # id sequences with special tokens
    heldout: list[list[int]] = field(default_factory=list)
    report: dict = field(default_factory=dict)
    train_langs: list[str] = field(default_factory=list)  # the language of each sequence ("" if not given)
    heldout_langs: list[str] = field(default_factory=list)


def _check_line_selection(cfg: CorpusConfig) -> None:
    for lang, rule in cfg.line_selection.items():
        if lang not in cfg.langs:
            raise ConfigError(f"corpus.line_selection.{lang}: no such language in corpus.langs "
                              f"({sorted(cfg.langs) or 'empty'})")
        if len(rule) != 2 or not 0 <= rule[1] < rule[0]:
            raise ConfigError(f"corpus.line_selection.{lang}={rule}: expected [n, k] with 0 <= k < n (lines i with "
                              "i % n == k)")


def language_lines(path: Path, lang: str, cfg: CorpusConfig) -> tuple[list[str], dict]:
    """The usable lines of ``path`` as language ``lang`` reads them: ``corpus.line_selection``'s share of them, then
    re-written when ``lang`` is synthetic; and the counts of skipped (unreadable) lines."""
    lines, skipped = text_lines(path)
    if lang in cfg.line_selection:
        n, k = cfg.line_selection[lang]
        lines = lines[k::n]
    return rewrite_lines(lines, lang), skipped  # syn-en: the English file's lines, re-written


def corpus_files(cfg: CorpusConfig) -> list[tuple[Path, str]]:
    """(file, language) of every file: ``corpus.files`` ("" language) then ``corpus.langs`` (a file once)."""
    base = Path(cfg.data_dir)
    if not cfg.files and not cfg.langs:
        raise DataError("corpus.files and corpus.langs are empty: name text files under corpus.data_dir (globs, "
                        "e.g. mono/ja/*.txt)")
    _check_line_selection(cfg)
    files: list[tuple[Path, str]] = []
    groups = [("", cfg.files, "corpus.files")] + [(lang, globs, f"corpus.langs.{lang}")
                                                   for lang, globs in cfg.langs.items()]
    for lang, patterns, key in groups:
        for pattern in patterns:
            found = sorted(base.glob(pattern))
            if not found:
                raise DataError(f"{base / pattern}: no file matches ({key}, under corpus.data_dir={base})")
            # a file once; a synthetic language's image of a file is another text
            seen = {(g, lang_of if is_synthetic(lang_of) else "") for g, lang_of in files}
            files += [(f, lang) for f in found if (f, lang if is_synthetic(lang) else "") not in seen]
    return files


def _pieces(ids: list[int], max_length: int, n_special: int) -> list[list[int]]:
    """Split an encoded line (specials at both ends) into pieces of at most max_length, each with the specials."""
    if len(ids) <= max_length:
        return [ids]
    head, body, tail = ids[:1], ids[1:len(ids) - (n_special - 1)], ids[len(ids) - (n_special - 1):]
    size = max_length - n_special
    return [head + body[i:i + size] + tail for i in range(0, len(body), size)]


def _tokenize_file(path: Path, tokenizer, cfg: CorpusConfig, lang: str = ""
                   ) -> tuple[list[list[int]], list[list[int]], dict]:
    lines, skipped = language_lines(path, lang, cfg)
    bad = sum(skipped.values())
    if not lines:
        raise DataError(f"{path}: no usable lines ({bad} unreadable: {skipped or 'the file is empty'})")
    if len(lines) <= cfg.heldout_lines:
        raise DataError(f"{path}: {len(lines)} lines, not more than corpus.heldout_lines={cfg.heldout_lines}")
    heldout_lines = lines[len(lines) - cfg.heldout_lines:] if cfg.heldout_lines else []
    train_lines = lines[:len(lines) - cfg.heldout_lines]
    if cfg.max_lines:
        train_lines = train_lines[:cfg.max_lines]
    n_special = len(tokenizer.encode("").ids)
    out, split = [], 0
    for group in (train_lines, heldout_lines):
        seqs = []
        for enc in tokenizer.encode_batch(group):
            pieces = _pieces(list(enc.ids), cfg.max_length, n_special)
            split += len(pieces) > 1
            seqs += pieces
        out.append(seqs)
    report = {"file": str(path), "lines": len(lines), "unreadable_skipped": skipped, "train_lines": len(train_lines),
              "heldout_lines": len(heldout_lines), "lines_split_over_max_length": split,
              "train_sequences": len(out[0]), "train_tokens": sum(map(len, out[0])),
              "heldout_tokens": sum(map(len, out[1]))}
    return out[0], out[1], report


def _flat(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    ids = torch.tensor([i for s in seqs for i in s], dtype=torch.int32)
    return ids, lengths


def _unflat(ids: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
    out, start = [], 0
    flat = ids.tolist()
    for n in lengths.tolist():
        out.append(flat[start:start + n])
        start += n
    return out


def load_corpus(cfg: CorpusConfig, tokenizer, tokenizer_file: Path, cache_dir: Path) -> Corpus:
    """Token id sequences of every corpus file (train / held-out), through the cache."""
    corpus = Corpus(report={"files": []})
    tok_hash = hashlib.sha1(Path(tokenizer_file).read_bytes()).hexdigest()
    cache_dir.mkdir(parents=True, exist_ok=True)
    for path, lang in corpus_files(cfg):
        stat = path.stat()
        parts = [tok_hash, str(path.resolve()), stat.st_size, stat.st_mtime_ns, cfg.heldout_lines, cfg.max_lines,
                 cfg.max_length] + ([lang] if is_synthetic(lang) else [])
        if lang in cfg.line_selection:
            parts.append(cfg.line_selection[lang])
        key = hashlib.sha1(json.dumps(parts).encode()).hexdigest()
        cached = cache_dir / f"{key}.safetensors"
        if cached.exists():
            t = load_file(str(cached))
            train, heldout = _unflat(t["train_ids"], t["train_lengths"]), _unflat(t["heldout_ids"],
                                                                                 t["heldout_lengths"])
            report = json.loads(cached.with_suffix(".json").read_text())
        else:
            train, heldout, report = _tokenize_file(path, tokenizer, cfg, lang)
            (ti, tl), (hi, hl) = _flat(train), _flat(heldout)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")  # runs started at once each write their own
            save_file({"train_ids": ti, "train_lengths": tl, "heldout_ids": hi, "heldout_lengths": hl}, str(tmp))
            cached.with_suffix(".json").write_text(json.dumps(report))
            os.replace(tmp, cached)  # written whole or not at all
        corpus.train += train
        corpus.heldout += heldout
        corpus.train_langs += [lang] * len(train)
        corpus.heldout_langs += [lang] * len(heldout)
        corpus.report["files"].append({**report, "lang": lang} if lang else report)
    corpus.report.update(train_sequences=len(corpus.train), train_tokens=sum(map(len, corpus.train)),
                         heldout_sequences=len(corpus.heldout), heldout_tokens=sum(map(len, corpus.heldout)))
    return corpus
