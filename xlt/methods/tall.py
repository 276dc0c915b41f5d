"""TALL NLU fine-tuning (Xia et al. 2021): start from a TALL pre-training run (``xlt pretrain`` with stage ``tall``;
``model.name=RUN/model`` holds the encoder and ``decoder.safetensors``) and fine-tune encoder + decoder + the task's
heads BART-style (``xlt.models.encoder_decoder``) on the source-language training data, exactly like the zero-shot
baseline (same data, budget, selection on the source dev set).  The decoder's first token is the language of the
input: the source language in training, the test language in evaluation; languages outside the pre-trained pair
read the ``options.other_languages`` token (the source language's by default: the only one fine-tuning trained).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from xlt.errors import ConfigError
from xlt.fidelity import Deviation
from xlt.methods import Method
from xlt.models.decoder import TiedDecoder
from xlt.models.families import layer_norm_eps
from xlt.models.encoder_decoder import EncoderDecoderTaskModel


@dataclass
class TallOptions:
    other_languages: Literal["source", "target"] = "source"  # "source" or "target": the language token for test languages outside the pair


class Tall(Method):
    name = "tall"
    description = "BART-style fine-tuning of a TALL encoder + decoder (decoder states feed the heads)"
    needs = "a TALL pre-training run (xlt pretrain pretrain-tall-*: monolingual text in both languages, hours of CPU)"
    takes_target_shots = False  # paired inputs (or a decoder) that plain target examples do not fit
    paper = "Xia et al. 2021"
    serve_with_language = True  # the runtime passes each input's language token (xlt.serve)
    Options = TallOptions
    fidelity = (
        Deviation("NLU read-out", "section 2: the sentence is fed again to the decoder after its language token; "
                  "\"the final hidden states of the decoder except the last one\" feed the NLU predictor (token t "
                  "is read from the state that has read the tokens before it, as BART)",
                  "the same (xlt/models/encoder_decoder.py); rows labelled readout: own_position were made "
                  "reading token t from its own position, a state that had read t's raw embedding",
                  "fixed; measured (xSID, each pre-training made again, 3 seeds): on en-ja, ja intent / slot F1 "
                  "51.9 / 12.9 against 50.0 / 10.4 before, de 67.4 / 35.1 against 67.7 / 28.8; on en-de, de "
                  "62.6 / 39.3 against 66.5 / 33.3; the shipped encoder alone 52.9 / 32.0 and 71.5 / 59.0. The "
                  "slot collapse is not the read-out's: the TALL-pre-trained encoder fine-tuned alone keeps ja "
                  "slot F1 at 29.4 (3 seeds; 30.3 on the first pre-training) and de at 52.6 on en-de (1 seed); it "
                  "comes with the decoder path",
                  "tall_readout"),
        Deviation("the decoder's memory", "the encoder's last layer (XLM-R, trained by MLM: its last states keep "
                  "each token's identity)", "the last layer by default; options.memory_layer / memory_mix of the "
                  "stage choose another layer or a learned mix (e5-small's last states keep a token's own "
                  "embedding as its nearest row for 23.7 % of tokens)", "setting added; measured by the copy "
                  "probe (benchmarks/results/tall-copy-probe.json)", "tall_memory"),
    )

    def _decoder_meta(self) -> dict:
        from xlt import zoo

        folder = zoo.resolve(self.cfg.model.name)
        if not (folder / "decoder.json").exists():
            raise ConfigError(f"method tall needs model.name = the model folder of a TALL pre-training run (xlt "
                              f"pretrain with stage tall): {folder} has no decoder.json")
        return json.loads((folder / "decoder.json").read_text())

    def check(self) -> None:
        meta = self._decoder_meta()
        if self.cfg.data.source_lang not in meta["languages"]:
            raise ConfigError(f"data.source_lang {self.cfg.data.source_lang!r} is not a language of the TALL "
                              f"decoder ({meta['languages']})")

    def language_index(self, lang: str, languages: list[str]) -> int:
        """The decoder's index of the language token for inputs in ``lang``."""
        if lang not in languages:
            src = self.cfg.data.source_lang
            lang = src if self.options.other_languages == "source" else next(x for x in languages if x != src)
        return languages.index(lang)

    def build_model(self, encoder, labels: dict) -> EncoderDecoderTaskModel:
        from xlt import zoo

        decoder = TiedDecoder.load(zoo.resolve(self.cfg.model.name), encoder.config.hidden_size,
                                   layer_norm_eps(encoder.config))
        decoder.bias.requires_grad_(False)  # the output projection's bias: NLU never reads the decoder's logits
        heads = self.task.heads(encoder.config.hidden_size, labels, self.cfg.model.pooling, self.cfg.model.dropout)
        languages = decoder.settings.languages
        return EncoderDecoderTaskModel(encoder, decoder, heads, self.language_index(self.cfg.data.source_lang,
                                                                                      languages))

    def predict(self, run, examples: list, lang: str, report: dict, accelerator=None) -> list:
        model, languages = run.model, run.model.decoder.settings.languages
        model.language = self.language_index(lang, languages)
        try:
            return super().predict(run, examples, lang, report, accelerator)
        finally:
            model.language = self.language_index(self.cfg.data.source_lang, languages)
