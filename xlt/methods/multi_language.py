"""Multi-language fine-tuning (Unicoder, Huang et al. EMNLP 2019, section 3.6): fine-tune one model jointly on
the source training set and its translations into every available language (``translation.languages``), instead
of one model per target language."""
from __future__ import annotations

from xlt.config import ConfigError
from xlt.methods import Method, register
from xlt.model import task_loss
from xlt.translate.train_data import translated_training_set


def train_examples(cfg, load_train, report: dict) -> list:
    if not cfg.translation.languages:
        raise ConfigError("multi_language needs translation.languages (the languages to translate into)")
    source = load_train(cfg.data.source_lang)
    rows = list(source)
    for lang in cfg.translation.languages:
        rows += translated_training_set(cfg, lang, source, report)
    return rows



register(Method("multi_language", "fine-tune jointly on source + translations into all listed languages (Unicoder)",
                train_examples, task_loss))
