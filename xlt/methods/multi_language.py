"""Multi-language fine-tuning (Unicoder, Huang et al. EMNLP 2019, section 3.6): fine-tune one model jointly on
the source training set and its translations into every available language (``translation.languages``), instead
of one model per target language."""
from __future__ import annotations

from xlt.errors import ConfigError
from xlt.methods import Method
from xlt.methods.translate_train import check_shipped
from xlt.translate.train_data import translated_training_set


class MultiLanguage(Method):
    name = "multi_language"
    description = "fine-tune jointly on source + translations into all listed languages (Unicoder)"
    needs = "a translator into each target language"

    def check(self) -> None:
        if not self.cfg.translation.languages:
            raise ConfigError("multi_language needs translation.languages (the languages to translate into)")
        check_shipped(self)

    def train_examples(self) -> list:
        source = super().train_examples()
        rows = list(source)
        for lang in self.cfg.translation.languages:
            rows += translated_training_set(self.cfg, self.task, lang, source, self.ctx.report)
        return rows
