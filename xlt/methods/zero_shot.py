"""Zero-shot cross-lingual transfer: fine-tune the multilingual encoder on source-language data only and apply it
unchanged to every target language (the baseline of every cross-lingual NLU paper, e.g. xSID, van der Goot et al.
NAACL 2021; XTREME, Hu et al. 2020).  All behaviour is the ``Method`` defaults."""
from __future__ import annotations

from xlt.methods import Method


class ZeroShot(Method):
    name = "zero_shot"
    description = "fine-tune on the source language, test on all languages"
    needs = "labelled source-language data only"
