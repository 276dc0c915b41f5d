"""One small adapter per encoder family: how to load it, embed ids, reach its layer stack and run a slice of it.

Methods and stages that go inside the encoder (FILTER's fusion, TreLM's TRILayer, TALL's decoder init) reach the
layers through ``family_of(encoder_or_config)`` instead of assuming BERT's module names, and a pairing the family's
layout cannot give is refused at config time by ``check_supported`` with one line saying why.

Families (``config.model_type``): ``bert`` (BERT, multilingual-e5, MiniLM), ``roberta`` / ``xlm-roberta`` /
``camembert`` (BERT's layout; positions start after the padding index), ``electra`` (BERT's layout; an embedding
projection when ``embedding_size`` differs from ``hidden_size``), ``distilbert`` (``transformer.layer``, no token
types), ``deberta-v2`` (DeBERTa-v2/v3: relative-position attention computed once over the stack, an optional
convolution after layer 0, the embeddings multiplied by the mask).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from xlt.errors import ConfigError


@dataclass(frozen=True)
class Family:
    name: str
    model_types: tuple[str, ...]
    pooling_layer: bool = True  # AutoModel.from_pretrained accepts add_pooling_layer
    position_offset: int = 0  # positions a sequence cannot use (RoBERTa: padding index + 1)
    attention_dropout_key: str = "attention_probs_dropout_prob"  # the config's attention-probability dropout
    # what the family cannot do, by "method:NAME" / "stage:NAME": the reason, said at config time
    unsupported: dict[str, str] = field(default_factory=dict)

    def load_kwargs(self) -> dict:
        return {"add_pooling_layer": False} if self.pooling_layer else {}

    def layers(self, encoder: nn.Module) -> nn.ModuleList:
        return encoder.encoder.layer

    def embed(self, encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, H) input states of layer 0, positions counted from the family's start."""
        return encoder.embeddings(input_ids=input_ids)

    def run(self, encoder: nn.Module, layers, hidden: torch.Tensor, attention_mask: torch.Tensor,
            positions: torch.Tensor | None = None) -> torch.Tensor:
        """Run ``layers`` (a slice of ``self.layers(encoder)``) over (B, T, H) states with a (B, T) 0/1 mask.
        ``positions`` (T,): each column's position, for families whose layers read positions (relative attention;
        FILTER's fusion restarts them for the second side); absolute-position families took theirs in ``embed``."""
        from transformers.masking_utils import create_bidirectional_mask

        # the attention implementation's own mask format (eager: additive 4-D; sdpa: boolean or None)
        mask = create_bidirectional_mask(config=encoder.config, inputs_embeds=hidden, attention_mask=attention_mask)
        for layer in layers:
            hidden = layer(hidden, mask)
            hidden = hidden[0] if isinstance(hidden, tuple) else hidden
        return hidden

    def max_tokens(self, config) -> int:
        """The longest input (special tokens included) the position embeddings cover."""
        return int(config.max_position_embeddings) - self.position_offset

    def why_not(self, kind: str, name: str, config) -> str | None:
        return self.unsupported.get(f"{kind}:{name}")


class Electra(Family):
    def embed(self, encoder, input_ids, attention_mask):
        hidden = encoder.embeddings(input_ids=input_ids)
        project = getattr(encoder, "embeddings_project", None)
        return project(hidden) if project is not None else hidden

    def why_not(self, kind, name, config):
        if f"{kind}:{name}" in ("stage:tall", "method:tall") and config.embedding_size != config.hidden_size:
            return (f"TALL's decoder reads and writes the encoder's input embeddings at the encoder's width, and "
                    f"this ELECTRA's embedding_size ({config.embedding_size}) is not its hidden_size "
                    f"({config.hidden_size})")
        return super().why_not(kind, name, config)


class DistilBert(Family):
    def layers(self, encoder):
        return encoder.transformer.layer


class DebertaV2(Family):
    def embed(self, encoder, input_ids, attention_mask):
        return encoder.embeddings(input_ids=input_ids, mask=attention_mask)

    def run(self, encoder, layers, hidden, attention_mask, positions=None):
        from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

        stack = encoder.encoder
        mask = stack.get_attention_mask(attention_mask)
        relative = None
        if positions is not None:  # as build_relative_position, over the given positions instead of 0..T-1
            relative = positions[:, None] - positions[None, :]
            if stack.position_buckets > 0 and stack.max_relative_positions > 0:
                relative = make_log_bucket_position(relative, stack.position_buckets, stack.max_relative_positions)
            relative = relative.long().unsqueeze(0)
        relative, rel_embeddings = stack.get_rel_pos(hidden, None, relative), stack.get_rel_embedding()
        for layer in layers:
            out, _ = layer(hidden, mask, relative_pos=relative, rel_embeddings=rel_embeddings)
            if layer is stack.layer[0] and stack.conv is not None:  # as DebertaV2Encoder.forward
                out = stack.conv(hidden, out, attention_mask)
            hidden = out
        return hidden


_BERT_ONLY = ("TreLM's TRILayer network is built for BERT, the paper's encoder (it re-implements BertModel's embedding "
              "sum with absolute positions from 0 and runs BERT layers)")
_NO_DECODER_INIT = "TALL's decoder is initialised from BERT-layout layers"
FAMILIES = [
    Family("bert", ("bert",)),
    Family("roberta", ("roberta", "xlm-roberta", "camembert"), position_offset=2,
           unsupported={"stage:trelm": _BERT_ONLY + "; RoBERTa's positions start after the padding index"}),
    Electra("electra", ("electra",), pooling_layer=False, unsupported={"stage:trelm": _BERT_ONLY}),
    DistilBert("distilbert", ("distilbert",), pooling_layer=False, attention_dropout_key="attention_dropout",
               unsupported={"stage:trelm": _BERT_ONLY, "decoder_init:encoder": _NO_DECODER_INIT}),
    DebertaV2("deberta-v2", ("deberta-v2",), pooling_layer=False,
              unsupported={"stage:trelm": _BERT_ONLY + "; DeBERTa's attention is relative-position",
                           "decoder_init:encoder": _NO_DECODER_INIT}),
]
BY_TYPE = {t: f for f in FAMILIES for t in f.model_types}


def family_of(model_or_config) -> Family:
    """The adapter of an encoder, its ``config`` or a ``config.json`` dict."""
    config = getattr(model_or_config, "config", model_or_config)
    model_type = config["model_type"] if isinstance(config, dict) else config.model_type
    if model_type not in BY_TYPE:
        raise ConfigError(f"encoder family {model_type!r} is not supported (supported: "
                          f"{', '.join(sorted(BY_TYPE))})")
    return BY_TYPE[model_type]


def load_pretrained(folder: Path, attention_dropout: float | None = None) -> nn.Module:
    """The Hugging Face encoder of a model folder, without a pooling layer where the family has one;
    ``attention_dropout`` (not None) replaces its attention-probability dropout (``model.attention_dropout``)."""
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    family = family_of(config)
    if attention_dropout is not None:
        setattr(config, family.attention_dropout_key, attention_dropout)
    return AutoModel.from_pretrained(str(folder), config=config, local_files_only=True, **family.load_kwargs())


def layer_norm_eps(config) -> float:
    """The encoder's LayerNorm epsilon (DistilBERT's config has none: its LayerNorms use 1e-12)."""
    return getattr(config, "layer_norm_eps", 1e-12)


def check_supported(folder: Path, kind: str, name: str) -> None:
    """Raise ConfigError (one line) when the model in ``folder`` cannot run ``kind`` (method / stage) ``name``;
    reads config.json only, so it runs before any data or weights are loaded."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    reason = family_of(config).why_not(kind, name, config)
    if reason:
        raise ConfigError(f"{kind} {name} cannot run on {config.model_type} ({folder}): {reason}")

