"""What a translation-based run needs for one language: its translator, and extra parallel text for the aligner."""
from __future__ import annotations

from pathlib import Path

from xlt.config import ConfigError, RunConfig
from xlt.translate import TranslationCache, Translator, default_cache_path, get_translator, tokenize_words

# ISO 639-1 -> the 3-letter codes of ../shared/data/tatoeba file names
TATOEBA = {"ar": "ara", "zh": "cmn", "da": "dan", "de": "deu", "fi": "fin", "fr": "fra", "hi": "hin", "id": "ind",
           "it": "ita", "ja": "jpn", "kk": "kaz", "ko": "kor", "lt": "lit", "nl": "nld", "pt": "por", "ru": "rus",
           "es": "spa", "sr": "srp", "th": "tha", "tr": "tur"}


def backend_name(cfg: RunConfig, lang: str) -> str:
    names = dict(item.split("=", 1) for item in cfg.translation.per_language if "=" in item)
    bad = [item for item in cfg.translation.per_language if "=" not in item]
    if bad:
        raise ConfigError(f"translation.per_language: expected 'lang=backend', got {bad[0]!r}")
    return names.get(lang, cfg.translation.translator)


def file_sources(cfg: RunConfig) -> dict[tuple[str, str], list]:
    """Parallel files for the ``file`` backend: xSID's shipped MT train sets (en -> lang, line-aligned with
    train/en.text) and any ``translation.file_tsv`` entries ("lang=path" means source->lang, or "src-tgt=path")."""
    sources: dict[tuple[str, str], list] = {}
    train_dir = Path(cfg.data.data_dir) / "xsid" / "train"
    src = cfg.data.source_lang
    for mt in sorted(train_dir.glob("*.mt.text")) if train_dir.is_dir() else []:
        sources.setdefault((src, mt.name.split(".")[0]), []).append((train_dir / f"{src}.text", mt))
    for item in cfg.translation.file_tsv:
        if "=" not in item:
            raise ConfigError(f"translation.file_tsv: expected 'lang=path' or 'src-tgt=path', got {item!r}")
        key, path = item.split("=", 1)
        if not Path(path).exists():
            raise ConfigError(f"translation.file_tsv: {path} not found")
        pair = tuple(key.split("-", 1)) if "-" in key and key not in TATOEBA else (src, key)
        sources.setdefault(pair, []).append(path)  # type: ignore[arg-type]
    return sources


def make_translator(cfg: RunConfig, lang: str, name: str | None = None) -> Translator:
    name = name or backend_name(cfg, lang)
    if name == "shipped":  # labelled MT data shipped with the dataset: its text is looked up like `file`
        name = "file"
    if name == "file":
        return get_translator(name, sources=file_sources(cfg))
    if name == "tall":
        return get_translator(name, model=cfg.translation.tall_model)
    return get_translator(name)


def open_cache(cfg: RunConfig) -> TranslationCache:
    return TranslationCache(cfg.translation.cache or default_cache_path())


def alignment_cache(cfg: RunConfig) -> Path | None:
    """Where the run's word alignments are kept (``translation.alignment_cache``); None when it is "off"."""
    from xlt import zoo

    setting = cfg.translation.alignment_cache
    return None if setting == "off" else Path(setting) if setting else zoo.xlt_home() / "alignments"


def words_of(translator: Translator, text: str) -> list[str]:
    """Stored translations (``file``) are pre-tokenized text; MT output is split with ``tokenize_words``."""
    from xlt.translate import EXACT
    return text.split() if translator.name in EXACT else tokenize_words(text)


def extra_parallel(cfg: RunConfig, lang: str, source_lang: str = "en") -> list[tuple[list[str], list[str]]]:
    """(source words, target words) pairs from ``translation.extra_parallel`` sources for fitting the aligner."""
    pairs: list[tuple[list[str], list[str]]] = []
    for name in cfg.translation.extra_parallel:
        if name != "tatoeba":
            raise ConfigError(f"translation.extra_parallel: unknown source {name!r} (available: tatoeba)")
        code = TATOEBA.get(lang)
        base = Path(cfg.data.data_dir) / "tatoeba"
        if source_lang != "en" or code is None or not (base / f"tatoeba.{code}-eng.{code}").exists():
            continue
        eng = (base / f"tatoeba.{code}-eng.eng").read_text(encoding="utf-8").splitlines()
        other = (base / f"tatoeba.{code}-eng.{code}").read_text(encoding="utf-8").splitlines()
        pairs += [(tokenize_words(e), tokenize_words(o)) for e, o in zip(eng, other)]
    return pairs
