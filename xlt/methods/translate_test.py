"""Translate-test: train on the source language only (as zero-shot); at test time translate each target example
into the source language, predict there, and move the prediction back onto the original target example
(``xlt.translate.test_time``: sentence labels directly, spans and tags through a word alignment).
``translation.translator: oracle`` uses the data's human reference translations (an upper bound).  Any trained run
can also be scored this way: ``xlt eval RUN --as translate_test translation.translator=...``."""
from __future__ import annotations

from xlt.data.datasets import deduplicate
from xlt.methods import Method
from xlt.translate.test_time import translate_test_predict


class TranslateTest(Method):
    name = "translate_test"
    description = "train on source; translate target test data to the source language, move predictions back"
    needs = ("a translator from the target language at prediction time (every input); word alignment carries "
             "token labels back")
    serve_via_translation = True  # the runtime translates, predicts, and aligns labels back (xlt.serve.translate_test)
    uses_translation_at_test_time = True

    def predict(self, run, examples: list, lang: str, report: dict, accelerator=None) -> list:
        if lang == self.cfg.data.source_lang:
            return super().predict(run, examples, lang, report, accelerator)
        train_rows = None
        if self.task.needs_alignment and self.cfg.translation.align_with_train:
            # unlabelled parallel text for the aligner: the source training set + its MT
            train_rows, _ = deduplicate(self.ctx.load_split(self.cfg.data.source_lang, "train"))
        preds, stats = translate_test_predict(self.cfg, self.task, lambda xs: run.predict(xs), lang, examples,
                                              train_rows)
        report.update(stats)
        return preds
