"""TreLM's encoder (Li et al., "Cross-lingual transfer learning for pretrained language models", ICLR 2021
submission; code github agcbi2017/TreLM): a BERT-style encoder whose N layers are split into a lower and an upper
half with a TRILayer between them — one more transformer layer, initialised from layer N/2 — and a language embedding
added to the inputs and again, with the position embeddings, before the TRILayer.  The language embeddings start
orthogonal (rows of norm 1, as the paper initialises them); ``lang_init="zeros"`` is xlt's earlier start (the two languages
indistinguishable until training separates them), ``"normal"`` the authors' code (BERT's N(0, 0.02) init).

One forward pass serves both of TreLM's objectives (its "unified formulation"):
- MLM: the input is the (masked) sentence itself; ``order`` is None (every state stays where it is);
- CdLM (cross-lingual LM): the lower half encodes the SOURCE sentence; its states are then reordered into the
  TARGET sentence's order and length by a word alignment (``order`` (B, T'): for each target position, the source
  position whose state it takes; unaligned target positions point at a placeholder token placed in the input),
  the target positions' position embeddings and the target language's embedding are added back, and the TRILayer
  and the upper half encode the result (``order_mask`` (B, T') marks real target positions); the model then
  predicts every target token.

``forward(input_ids, attention_mask, lang, out_lang=None, order=None, order_mask=None) -> (B, T', H)``; ``lang``
and ``out_lang`` are (B,) language indices (``out_lang`` defaults to ``lang``).
"""
from __future__ import annotations

import copy

import torch
from torch import nn


def additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, T) 1 = attend -> (B, 1, 1, T) additive mask (0 or the dtype's minimum), as BERT layers take it."""
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def reorder(hidden: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """(B, S, H) states, (B, T') source positions -> (B, T', H): row b, position j takes hidden[b, order[b, j]]."""
    return hidden.gather(1, order.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))


class TreLMEncoder(nn.Module):
    def __init__(self, bert: nn.Module, languages: list[str], lang_init: str = "orthogonal") -> None:
        super().__init__()
        n = len(bert.encoder.layer)
        if n % 2:
            raise ValueError(f"TreLM splits the encoder's layers in halves: {n} layers is odd")
        self.bert = bert
        self.languages = list(languages)
        self.split = n // 2
        self.trilayer = copy.deepcopy(bert.encoder.layer[self.split])
        self.lang = nn.Embedding(len(languages), bert.config.hidden_size)
        if lang_init == "orthogonal":
            nn.init.orthogonal_(self.lang.weight)
        elif lang_init == "zeros":
            nn.init.zeros_(self.lang.weight)
        elif lang_init == "normal":
            nn.init.normal_(self.lang.weight, std=bert.config.initializer_range)
        else:
            raise ValueError(f"lang_init must be orthogonal, zeros or normal, not {lang_init!r}")

    @property
    def config(self):
        return self.bert.config

    def get_input_embeddings(self) -> nn.Embedding:
        return self.bert.get_input_embeddings()

    def lower_layers(self) -> list[nn.Module]:
        return list(self.bert.encoder.layer[:self.split])

    def upper_layers(self) -> list[nn.Module]:
        return list(self.bert.encoder.layer[self.split:])

    @staticmethod
    def _run(layer: nn.Module, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out = layer(x, attention_mask=mask)
        return out[0] if isinstance(out, tuple) else out

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, lang: torch.Tensor,
                out_lang: torch.Tensor | None = None, order: torch.Tensor | None = None,
                order_mask: torch.Tensor | None = None) -> torch.Tensor:
        emb = self.bert.embeddings
        words = emb.word_embeddings(input_ids) + self.lang(lang).unsqueeze(1)
        x = emb(inputs_embeds=words)  # + positions, token types; LayerNorm; dropout
        mask = additive_mask(attention_mask, x.dtype)
        for layer in self.lower_layers():
            x = self._run(layer, x, mask)
        if order is not None:
            x = reorder(x, order)
            mask = additive_mask(order_mask, x.dtype)
        T = x.shape[1]
        positions = emb.position_embeddings(torch.arange(T, device=x.device)).unsqueeze(0)
        x = x + self.lang(lang if out_lang is None else out_lang).unsqueeze(1) + positions
        x = self._run(self.trilayer, x, mask)
        for layer in self.upper_layers():
            x = self._run(layer, x, mask)
        return x


def alignment_order(alignment: list[tuple[int, int]], target_length: int, placeholder: int) -> list[int]:
    """A target-ordered source index per target position from (source position, target position) links: the
    first-linked source position of each target position (the links of eflomal are one-to-one mostly); unlinked
    target positions take ``placeholder``."""
    order = [placeholder] * target_length
    for s, t in sorted(alignment, key=lambda st: (st[1], st[0])):
        if 0 <= t < target_length and order[t] == placeholder:
            order[t] = s
    return order


def combine_halves(lower_from: dict[str, torch.Tensor], upper_from: dict[str, torch.Tensor], split: int,
                   prefix: str = "bert.encoder.layer.") -> dict[str, torch.Tensor]:
    """TreLM's transfer phase ends with one model from two: the lower-half layers (index < ``split``) of
    ``lower_from`` (trained target -> source), the upper-half layers of ``upper_from`` (source -> target), and the
    mean of the two for everything else (embeddings, TRILayer, language embeddings, heads)."""
    if lower_from.keys() != upper_from.keys():
        raise ValueError("the two models to combine have different parameters")
    out = {}
    for key in lower_from:
        if key.startswith(prefix) or f".{prefix}" in key:
            index = int(key.split(prefix, 1)[1].split(".", 1)[0])
            out[key] = (lower_from if index < split else upper_from)[key].clone()
        else:
            out[key] = (lower_from[key] + upper_from[key]) / 2
    return out


class TreLMBackbone(nn.Module):
    """A migrated TreLM model as a fine-tuning backbone for one language: ``forward(input_ids, attention_mask)`` ->
    an object with ``last_hidden_state`` (B, T, H), like a Hugging Face encoder (the TRILayer and the language
    embedding of ``language`` stay in the network, as TreLM fine-tunes them)."""

    def __init__(self, trelm: TreLMEncoder, language: str) -> None:
        super().__init__()
        self.trelm = trelm
        self.register_buffer("language", torch.tensor(trelm.languages.index(language)), persistent=False)

    @property
    def config(self):
        return self.trelm.config

    def get_input_embeddings(self) -> nn.Embedding:
        return self.trelm.get_input_embeddings()

    def set_input_embeddings(self, embedding: nn.Embedding) -> None:
        self.trelm.bert.set_input_embeddings(embedding)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **_):
        from transformers.modeling_outputs import BaseModelOutput

        lang = self.language.expand(input_ids.shape[0])
        return BaseModelOutput(last_hidden_state=self.trelm(input_ids, attention_mask, lang))


def load_trelm_backbone(bert: nn.Module, folder) -> TreLMBackbone:
    """The backbone of an exported TreLM folder (``trelm.json`` + ``trelm.safetensors`` beside the BERT weights)."""
    import json
    from pathlib import Path

    from safetensors.torch import load_file

    folder = Path(folder)
    meta = json.loads((folder / "trelm.json").read_text())
    trelm = TreLMEncoder(bert, meta["languages"])
    if trelm.split != meta["split"]:
        raise ValueError(f"{folder}/trelm.json: split {meta['split']} but the encoder has {2 * trelm.split} layers")
    state = load_file(str(folder / "trelm.safetensors"))
    trelm.trilayer.load_state_dict({k[len("trilayer."):]: v for k, v in state.items() if k.startswith("trilayer.")})
    trelm.lang.load_state_dict({"weight": state["lang.weight"]})
    return TreLMBackbone(trelm, meta["fine_tune_language"])
