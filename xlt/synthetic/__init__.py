"""Synthetic languages: a real language re-written in fresh symbols, so every mechanism has a known right answer.

``syn-en`` is English with every character of its alphabet replaced, one to one, by a character no real token of
the supported vocabularies contains (letters and digits -> Yi syllables, punctuation -> rare punctuation marks, so
every tokenizer splits the image exactly where it splits English).  Its sub-tokens are therefore fresh vocabulary
entries (``xlt.synthetic.vocab`` grows the tokenizer and the embedding matrix by one row per English sub-token,
initialised as new vocabulary, never copied), while a perfect translator exists (the cipher), parallel text is
unlimited and the two embedding spaces are isomorphic.  ``syn-en-perm`` is the same image with the words of every
sentence in reverse order (the word-order change of K et al., ICLR 2020, "Cross-lingual ability of multilingual
BERT"; Dufter & Schütze, EMNLP 2020).  Word-level labels are carried exactly (``xlt.synthetic.data``).

The map is deterministic from ``SEED``: the same code gives the same language on every machine.
"""
from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass

from xlt.errors import ConfigError

SEED = 0
PREFIX = "syn-"
VARIANTS = {"": "same_order", "-perm": "permuted"}
# the alphabet each supported base language is re-written in; other characters are left as they are
ALPHABETS = {"en": string.ascii_letters + string.digits + string.punctuation}
# target symbols: absent from the XLM-R and BERT-uncased vocabularies, unchanged by their normalizers; punctuation
# stays punctuation (BERT's pre-tokenizer splits there), letters and digits become letters (checked by a test)
LETTER_TARGETS = [chr(c) for c in range(0xA016, 0xA016 + 62)]  # YI SYLLABLE BIT ...
PUNCT_TARGETS = [chr(c) for c in range(0x2E00, 0x2E17)] + [chr(c) for c in range(0x2E1E, 0x2E27)]
_CODE = re.compile(r"^syn-([a-z]{2,3})(-perm)?$")


@dataclass(frozen=True)
class SyntheticLanguage:
    code: str  # syn-en, syn-en-perm
    base: str  # en
    variant: str  # same_order | permuted

    @property
    def permuted(self) -> bool:
        return self.variant == "permuted"


def parse(code: str) -> SyntheticLanguage | None:
    """The synthetic language a code names, or None for a real language code.  An unsupported base is an error."""
    if not code.startswith(PREFIX):
        return None
    m = _CODE.match(code)
    if not m:
        raise ConfigError(f"language {code!r}: a synthetic language is syn-BASE (same word order) or syn-BASE-perm "
                          f"(words reversed), e.g. syn-en, syn-en-perm")
    if m.group(1) not in ALPHABETS:
        raise ConfigError(f"language {code!r}: synthetic languages are derived from {', '.join(ALPHABETS)} only")
    return SyntheticLanguage(code, m.group(1), VARIANTS[m.group(2) or ""])


def is_synthetic(code: str) -> bool:
    return code.startswith(PREFIX)


def cipher_map(base: str, seed: int = SEED) -> dict[str, str]:
    """Base character -> synthetic character (a seeded one-to-one map within letters/digits and punctuation)."""
    alphabet = ALPHABETS[base]
    letters = [c for c in alphabet if c not in string.punctuation]
    punct = [c for c in alphabet if c in string.punctuation]
    rng = random.Random(f"{base}:{seed}")
    letter_targets, punct_targets = LETTER_TARGETS[:len(letters)], PUNCT_TARGETS[:len(punct)]
    rng.shuffle(letter_targets)
    rng.shuffle(punct_targets)
    return dict(zip(letters + punct, letter_targets + punct_targets))


_MAPS: dict[tuple[str, bool], dict[int, str]] = {}


def _table(base: str, inverse: bool) -> dict[int, str]:
    if (base, inverse) not in _MAPS:
        m = cipher_map(base)
        _MAPS[(base, inverse)] = {ord(v if inverse else k): (k if inverse else v) for k, v in m.items()}
    return _MAPS[(base, inverse)]


def cipher(text: str, base: str = "en") -> str:
    """Each character of the base alphabet replaced by its image; whitespace and other characters kept."""
    return text.translate(_table(base, False))


def decipher(text: str, base: str = "en") -> str:
    return text.translate(_table(base, True))


def to_synthetic(text: str, lang: SyntheticLanguage) -> str:
    """A base-language sentence in ``lang`` (words reversed for the permuted variant; whitespace normalised)."""
    words = cipher(text, lang.base).split()
    return " ".join(reversed(words) if lang.permuted else words)


def from_synthetic(text: str, lang: SyntheticLanguage) -> str:
    """The exact inverse of ``to_synthetic`` (up to whitespace)."""
    words = decipher(text, lang.base).split()
    return " ".join(reversed(words) if lang.permuted else words)


def word_links(n_words: int, lang: SyntheticLanguage) -> set[tuple[int, int]]:
    """The exact alignment between a sentence of ``n_words`` words and its image: (base index, synthetic index)."""
    return {(i, n_words - 1 - i if lang.permuted else i) for i in range(n_words)}


def rewrite_lines(lines: list[str], lang: str) -> list[str]:
    """``lines`` of a base-language file as text of ``lang``: re-written when ``lang`` is synthetic, else as they
    are (corpora, TreLM's training text)."""
    synthetic = parse(lang)
    return [to_synthetic(line, synthetic) for line in lines] if synthetic is not None else lines


_MENTION = re.compile(r"(?<![\w+-])syn-[a-z]{2,3}(?:-perm)?(?![\w-])")


def mentioned(cfg) -> list[SyntheticLanguage]:
    """Every synthetic language a config names anywhere (languages, corpora keys, translator settings, stage
    options), the model's name aside."""
    import dataclasses

    found: dict[str, SyntheticLanguage] = {}

    def walk(value, skip_model: bool = False) -> None:
        if dataclasses.is_dataclass(value):
            for f in dataclasses.fields(value):
                if not (f.name == "model" and skip_model):
                    walk(getattr(value, f.name))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            for code in _MENTION.findall(value):
                lang = parse(code)
                if lang is not None:
                    found[code] = lang

    walk(cfg, skip_model=True)
    return [found[c] for c in sorted(found)]


def grown_name(name: str, base: str) -> str:
    return f"{name}+syn-{base}"


def split_name(name: str) -> tuple[str, str | None]:
    """``multilingual-e5-small+syn-en`` -> (``multilingual-e5-small``, ``en``); a plain name -> (name, None)."""
    if "+syn-" in name:
        head, base = name.rsplit("+syn-", 1)
        return head, base
    return name, None


def with_synthetic_vocabulary(cfg):
    """``cfg`` with ``model.name`` naming the model grown by the vocabulary of every synthetic language the config
    mentions (``NAME+syn-en``, built on first use by ``xlt.zoo.resolve``): one setting -- the language code -- is
    all a run needs."""
    name = cfg.model.name
    have = set()
    head = name
    while True:
        head, base = split_name(head)
        if base is None:
            break
        have.add(base)
    for base in sorted({lang.base for lang in mentioned(cfg)} - have):
        name = grown_name(name, base)
    cfg.model.name = name
    return cfg
