"""FILTER (Fang et al., AAAI 2021): fine-tune a fusion encoder (``xlt.fusion``) on each source utterance together
with its machine translation into the target language: L = L_src + λ·L_tgt, with the translation's labels
projected through a word alignment (``translation.*`` settings, as translate-train).  At test time a target
utterance is paired with its translation into the source language (the translate-test direction) and read from its
own side, so slot tags are on its own tokens; source dev/test utterances are paired with their translation into
the target language.  Needs a translator in both directions at test time (Apertium es/sr, or ``oracle`` on xSID).

Options: ``local_layers`` m and ``fusion_layers`` k (m + k <= the encoder's layers; the FILTER paper's best
XLM-R-large setting, m = 1 and k = 10 of 24 layers, scaled to 12 layers gives the default m = 1, k = 5), and
``target_weight`` λ.  A trained FILTER run is the teacher of ``filter_self_teaching``.
"""
from __future__ import annotations

from dataclasses import dataclass

from xlt.config import ConfigError
from xlt.fusion import FilterModel, paired_task_loss
from xlt.methods import Method, register
from xlt.translate.pairs import attach_translations, training_pairs


@dataclass
class FilterOptions:
    local_layers: int = 1  # m
    fusion_layers: int = 5  # k
    target_weight: float = 1.0  # λ


def target_language(cfg) -> str:
    if len(cfg.translation.languages) != 1:
        raise ConfigError(f"{cfg.train.method} needs exactly one language in translation.languages (the target "
                          f"its training data is translated into), got {cfg.translation.languages}")
    return cfg.translation.languages[0]


def check_layers(cfg) -> None:
    """m + k must fit the encoder: checked from its config.json before any data is translated."""
    import json

    from xlt import zoo

    n_layers = json.loads((zoo.resolve(cfg.model.name) / "config.json").read_text())["num_hidden_layers"]
    m, k = cfg.options.local_layers, cfg.options.fusion_layers
    if m < 0 or k < 0 or m + k > n_layers:
        raise ConfigError(f"options.local_layers ({m}) + options.fusion_layers ({k}) must be non-negative and at "
                          f"most the encoder's {n_layers} layers")


def train_examples(cfg, load_train, report: dict) -> list:
    check_layers(cfg)
    return training_pairs(cfg, load_train(cfg.data.source_lang), [target_language(cfg)], report, labelled=True)


def pair_eval_rows(cfg, rows: list, lang: str, report: dict) -> list:
    """Source rows with their translation into the target language; target rows with theirs into the source."""
    src = cfg.data.source_lang
    other = target_language(cfg) if lang == src else src
    return attach_translations(cfg, rows, lang, other, report.setdefault(f"{lang}-{other}", {}))


def build_model(cfg, encoder, labels) -> FilterModel:
    o = cfg.options
    return FilterModel(encoder, len(labels.intents), len(labels.slots), o.local_layers, o.fusion_layers,
                       cfg.model.pooling, cfg.model.dropout)


def loss(model, batch, opts: FilterOptions):
    out = model(batch["input_ids"], batch["attention_mask"], batch["pair_input_ids"], batch["pair_attention_mask"])
    return paired_task_loss(out, batch, opts.target_weight)


register(Method("filter", "fusion encoder over an utterance and its translation, L_src + λ·L_tgt "
                "(Fang et al. 2021)", train_examples, loss, options=FilterOptions, build_model=build_model,
                pair_eval_rows=pair_eval_rows))
