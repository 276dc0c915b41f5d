"""Translate-train: machine-translate the source training set into ONE target language, project the slot labels
through a word alignment, and fine-tune on source + translated data (the standard MT baseline of XTREME, Hu et al.
2020, and of xSID, van der Goot et al. 2021).  Config: ``translation.languages: [es]`` and ``translation.translator``.
"""
from __future__ import annotations

from xlt.config import ConfigError
from xlt.methods import Method, register
from xlt.model import task_loss
from xlt.translate.train_data import translated_training_set


def train_examples(cfg, load_train, report: dict) -> list:
    langs = cfg.translation.languages
    if len(langs) != 1:
        raise ConfigError(f"translate_train needs exactly one language in translation.languages, got {langs}; "
                          "use method multi_language for several")
    source = load_train(cfg.data.source_lang)
    return source + translated_training_set(cfg, langs[0], source, report)



register(Method("translate_train", "fine-tune on source + its translation into one target language (labels "
                "projected)", train_examples, task_loss))
