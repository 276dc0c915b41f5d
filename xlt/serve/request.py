"""One input to a predictor (``Request``) and the one check of its language code, shared by the Python API,
``xlt predict``, batch files and the server."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from xlt.serve.words import InputError

PAIR_SEPARATOR = "|||"  # a sentence pair typed as one string: "first sentence ||| second sentence" (or a TAB)
# a language code as xlt's data names languages: ISO 639 letters, then subtags ("de", "pt-BR", "de-muc", "syn-en")
LANG_CODE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")


def check_lang(lang: object) -> str | None:
    """The one check of an input's ``lang`` for the Python API, ``xlt predict`` (texts, ``--input``) and the server:
    None, or a language code; anything else is an ``InputError`` (its value shown escaped, never written raw)."""
    if lang is None or (isinstance(lang, str) and LANG_CODE.fullmatch(lang)):
        return lang
    raise InputError(f"lang must be a language code such as 'de', 'pt-BR' or 'syn-en', not {lang!r}")


@dataclass
class Request:
    """One input: ``texts`` (one text, or two for a sentence pair) or pre-split ``words`` (evaluation sets)."""
    texts: list[str] = field(default_factory=list)
    words: list[str] | None = None
    lang: str | None = None

    def __post_init__(self) -> None:
        check_lang(self.lang)

    @classmethod
    def of(cls, value: object, lang: str | None = None, pair: bool = False) -> "Request":
        """A str (for a sentence-pair model: 'first ||| second' or 'first TAB second'), or a list / tuple of str
        (a pair's two texts); anything else is an ``InputError`` saying what it got."""
        if isinstance(value, str):
            sep = "\t" if "\t" in value else PAIR_SEPARATOR
            return cls([p.strip() for p in value.split(sep)] if pair and sep in value else [value], lang=lang)
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            return cls(list(value), lang=lang)
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise InputError(f"expected a text (str){' or a pair of texts (first, second)' if pair else ''}, got "
                         f"{type(value).__name__} {shown}" + (": decode bytes first" if isinstance(value, bytes)
                                                               else ""))
