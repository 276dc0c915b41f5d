"""Translate-train: machine-translate the source training set into ONE target language, move the labels across
(the task's rule: span projection, one-to-one tag links, or a copy) and fine-tune on source + translated data (the
standard MT baseline of XTREME, Hu et al. 2020, and of xSID, van der Goot et al. 2021).  Config:
``translation.languages: [es]`` and ``translation.translator``."""
from __future__ import annotations

from xlt.errors import ConfigError
from xlt.methods import Method
from xlt.translate.train_data import translated_training_set


def check_shipped(method: Method) -> None:
    """``translation.labels: shipped`` reads a labelled translated training set that must ship with the data."""
    cfg = method.cfg
    if cfg.translation.labels == "shipped":
        langs = method.ctx.dataset.train_langs or ()
        missing = [lang for lang in cfg.translation.languages if lang not in langs]
        if missing:
            raise ConfigError(f"translation.labels=shipped: dataset {cfg.data.dataset} ships no labelled training "
                              f"set for {', '.join(missing)} (it has: {', '.join(langs) or 'none'})")


class TranslateTrain(Method):
    name = "translate_train"
    description = "fine-tune on source + its translation into one target language (labels transferred)"
    needs = ("a translator into the target language (the training set is translated once); word alignment carries "
             "token labels")

    def check(self) -> None:
        langs = self.cfg.translation.languages
        if len(langs) != 1:
            raise ConfigError(f"translate_train needs exactly one language in translation.languages, got {langs}; "
                              "use method multi_language for several")
        check_shipped(self)

    def train_examples(self) -> list:
        source = super().train_examples()
        lang = self.cfg.translation.languages[0]
        return source + translated_training_set(self.cfg, self.task, lang, source, self.ctx.report)
