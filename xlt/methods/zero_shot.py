"""Zero-shot cross-lingual transfer: fine-tune the multilingual encoder on source-language data only and apply it
unchanged to every target language (the baseline of every cross-lingual NLU paper, e.g. xSID, van der Goot et al.
NAACL 2021; XTREME, Hu et al. 2020)."""
from __future__ import annotations

from xlt.methods import Method, register
from xlt.model import task_loss


def train_examples(cfg, load_train, report: dict) -> list:
    """Source-language training data only.  ``load_train(lang)`` returns that language's training utterances."""
    return load_train(cfg.data.source_lang)



register(Method("zero_shot", "fine-tune on the source language, test on all languages", train_examples, task_loss))
