"""A transformer decoder appended to a pretrained encoder (TALL, Xia et al. 2021; the shape of Lample et al. 2018b's
shared encoder-decoder): token embeddings are the ENCODER's input embeddings (shared, not copied) and the output
projection is tied to them; the vocabulary is extended, on the decoder's side only, with one language-identifier
token per language, and the decoder's first input token is the identifier of the language to produce.

``TiedDecoder.forward(embeddings, lang, tokens, memory, memory_mask)``:
    lang (B,) language indices, tokens (B, L) the target prefix (no language token; ``pad`` where padded),
    memory (B, S, H) encoder states, memory_mask (B, S) 1 = real token -> hidden (B, L + 1, H), position 0 being the
    language token.  ``logits(embeddings, hidden)`` -> (…, V) over the encoder's (possibly trimmed) vocabulary.

The encoder never reads language tokens, so they live in the decoder (``lang``, one row per language) instead of
in the encoder's embedding matrix: the exported encoder stays an ordinary Hugging Face folder with its tokenizer.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn


@dataclass
class DecoderSettings:
    layers: int = 2
    heads: int = 6
    ffn: int = 1536
    dropout: float = 0.1
    max_positions: int = 130  # language token + target tokens
    languages: list[str] = field(default_factory=lambda: ["en", "ja"])
    # pre-LN layers + a final LayerNorm (Xiong et al. 2020: no long warm-up needed at large learning rates); False:
    # post-LN, BERT's layout, which ``init_from_encoder`` needs
    norm_first: bool = False
    # which encoder states the decoder attends to (``TiedDecoder.memory``): -1 the last layer's (TALL, as BART and
    # XLM); k >= 0 the output of encoder layer k (0: the embedding layer's)
    memory_layer: int = -1
    # > 0: a learned softmax-weighted mix of the encoder's ``memory_mix`` hidden states (embeddings + every layer;
    # Peters et al. 2018's scalar mix) instead of one layer
    memory_mix: int = 0


class TiedDecoder(nn.Module):
    def __init__(self, hidden: int, vocab_size: int, settings: DecoderSettings, layer_norm_eps: float = 1e-12
                 ) -> None:
        super().__init__()
        if hidden % settings.heads:
            raise ValueError(f"decoder heads ({settings.heads}) must divide the hidden size ({hidden})")
        self.settings = settings
        self.lang = nn.Embedding(len(settings.languages), hidden)
        self.positions = nn.Embedding(settings.max_positions, hidden)
        self.norm = nn.LayerNorm(hidden, eps=layer_norm_eps)
        self.dropout = nn.Dropout(settings.dropout)
        layer = nn.TransformerDecoderLayer(hidden, settings.heads, settings.ffn, settings.dropout, activation="gelu",
                                           batch_first=True, layer_norm_eps=layer_norm_eps,
                                           norm_first=settings.norm_first)
        final = nn.LayerNorm(hidden, eps=layer_norm_eps) if settings.norm_first else None
        self.layers = nn.TransformerDecoder(layer, settings.layers, norm=final)
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        if settings.memory_mix:  # equal weights at the start, a scale of 1 (as ELMo's gamma)
            self.memory_weights = nn.Parameter(torch.zeros(settings.memory_mix))
            self.memory_scale = nn.Parameter(torch.ones(()))
        nn.init.normal_(self.lang.weight, std=0.02)
        nn.init.normal_(self.positions.weight, std=0.02)

    def memory(self, encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The encoder states (B, S, H) this decoder attends to: the last layer's, layer ``memory_layer``'s, or the
        learned mix (``DecoderSettings``).  The last states of a contrastive sentence encoder (e5) have lost most of
        each token's identity (its own embedding row is the nearest row for 23.7 % of tokens at e5-small's layer 12,
        93.5 % at layer 6), which a decoder that copies or translates token by token must first recover."""
        s = self.settings
        if s.memory_layer == -1 and not s.memory_mix:
            return encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        states = encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True).hidden_states
        if not s.memory_mix:
            return states[s.memory_layer]
        if len(states) != s.memory_mix:
            raise ValueError(f"memory_mix={s.memory_mix} hidden states, but the encoder gives {len(states)}")
        weights = torch.softmax(self.memory_weights, 0)
        return self.memory_scale * torch.einsum("l,lbsh->bsh", weights, torch.stack(states))

    def forward(self, embeddings: nn.Embedding, lang: torch.Tensor, tokens: torch.Tensor, memory: torch.Tensor,
                memory_mask: torch.Tensor, token_mask: torch.Tensor | None = None) -> torch.Tensor:
        """See the module docstring; ``token_mask`` (B, L) 1 = real target token (default: all real)."""
        B, L = tokens.shape
        if L + 1 > self.settings.max_positions:
            raise ValueError(f"decoder input of {L + 1} positions > max_positions {self.settings.max_positions}")
        x = torch.cat([self.lang(lang).unsqueeze(1), embeddings(tokens)], dim=1)
        x = x + self.positions(torch.arange(L + 1, device=tokens.device)).unsqueeze(0)
        x = self.dropout(self.norm(x))
        causal = torch.triu(torch.ones(L + 1, L + 1, dtype=torch.bool, device=tokens.device), diagonal=1)
        pad = torch.zeros(B, L + 1, dtype=torch.bool, device=tokens.device)
        if token_mask is not None:
            pad[:, 1:] = ~token_mask.bool()
        return self.layers(x, memory, tgt_mask=causal, tgt_key_padding_mask=pad,
                           memory_key_padding_mask=~memory_mask.bool())

    def logits(self, embeddings: nn.Embedding, hidden: torch.Tensor) -> torch.Tensor:
        """(…, H) -> (…, V): the output projection is the (shared) input embedding matrix, plus a bias."""
        return hidden @ embeddings.weight.T + self.bias

    # ---- files: safetensors + JSON beside the encoder folder ------------------------------------------------------
    def save(self, folder: Path, bias_full: torch.Tensor | None = None) -> None:
        """``bias_full``: the output bias over the full vocabulary (a trimmed run scatters its rows back)."""
        from safetensors.torch import save_file

        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        if bias_full is not None:
            state["bias"] = bias_full.detach().cpu().contiguous()
        save_file(state, str(folder / "decoder.safetensors"))
        (folder / "decoder.json").write_text(json.dumps({"kind": "tied_transformer_decoder",
                                                         "embeddings": "the encoder's input embeddings",
                                                         **asdict(self.settings)}, indent=1))

    @classmethod
    def load(cls, folder: Path, hidden: int, layer_norm_eps: float = 1e-12) -> "TiedDecoder":
        from safetensors.torch import load_file

        meta = json.loads((folder / "decoder.json").read_text())
        # a decoder.json written before a setting existed has that setting's default
        settings = DecoderSettings(**{k: meta[k] for k in DecoderSettings.__dataclass_fields__ if k in meta})
        state = load_file(str(folder / "decoder.safetensors"))
        decoder = cls(hidden, state["bias"].numel(), settings, layer_norm_eps)
        decoder.load_state_dict(state)
        return decoder


@torch.no_grad()
def greedy_decode(decoder: TiedDecoder, embeddings: nn.Embedding, lang: torch.Tensor, memory: torch.Tensor,
                  memory_mask: torch.Tensor, eos: int, pad: int, max_length: torch.Tensor | int,
                  allowed: torch.Tensor | None = None) -> torch.Tensor:
    """Greedy generation (no gradient): (B, ≤max) token ids, each row ending with ``eos`` unless cut at its
    ``max_length`` (an int or a (B,) tensor), ``pad`` after.  ``allowed`` (B, V) bool restricts every step to the
    row's allowed ids (TALL: the tokens of the output language's corpus).  Each step computes the new position only,
    over the states of the positions before it kept from earlier steps (``_DecodeCache``): causal attention never
    changes an earlier position's state, so this gives what re-reading the whole prefix gives, at a step cost that
    does not grow with the prefix (back-translation decodes a batch every other training step)."""
    B = memory.shape[0]
    limit = torch.as_tensor(max_length, device=memory.device).expand(B)
    out = torch.full((B, 0), pad, dtype=torch.long, device=memory.device)
    done = torch.zeros(B, dtype=torch.bool, device=memory.device)
    cache = _DecodeCache(decoder, memory, memory_mask)
    hidden = cache.step(decoder.lang(lang), real=torch.ones(B, dtype=torch.bool, device=memory.device))
    # the output projection over the ids some row may produce only (TALL: one language's tokens), not all V
    columns = allowed.any(0).nonzero().squeeze(1) if allowed is not None else None
    weight = embeddings.weight if columns is None else embeddings.weight[columns]
    bias = decoder.bias if columns is None else decoder.bias[columns]
    for t in range(int(limit.max())):
        scores = hidden @ weight.T + bias
        if allowed is not None:
            scores = scores.masked_fill(~allowed[:, columns], float("-inf"))
        nxt = scores.argmax(-1) if columns is None else columns[scores.argmax(-1)]
        nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
        out = torch.cat([out, nxt.unsqueeze(1)], dim=1)
        done |= (nxt == eos) | (t + 1 >= limit)
        if bool(done.all()):
            break
        hidden = cache.step(embeddings(nxt), real=nxt != pad)
    return out


class _DecodeCache:
    """The decoder run one position at a time: per layer, the (B, t, H) inputs its self-attention reads as keys and
    values (post-LN: the layer's input; pre-LN: its norm1 output), and which of those positions are padding."""

    def __init__(self, decoder: TiedDecoder, memory: torch.Tensor, memory_mask: torch.Tensor) -> None:
        self.decoder, self.memory = decoder, memory
        self.memory_pad = ~memory_mask.bool()
        self.past: list[torch.Tensor | None] = [None] * len(decoder.layers.layers)
        self.pad = torch.zeros(memory.shape[0], 0, dtype=torch.bool, device=memory.device)

    def step(self, token: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        """(B, H) input embedding of the next position (language token or generated id), (B,) False where it is
        padding -> (B, H) the decoder's output state at that position."""
        d, t = self.decoder, self.pad.shape[1]
        if t + 1 > d.settings.max_positions:
            raise ValueError(f"decoder input of {t + 1} positions > max_positions {d.settings.max_positions}")
        x = d.dropout(d.norm(token + d.positions.weight[t])).unsqueeze(1)
        self.pad = torch.cat([self.pad, ~real.unsqueeze(1)], dim=1)
        for i, layer in enumerate(d.layers.layers):
            if layer.norm_first:
                x = x + self._self_attention(i, layer, layer.norm1(x))
                x = x + layer._mha_block(layer.norm2(x), self.memory, None, self.memory_pad)
                x = x + layer._ff_block(layer.norm3(x))
            else:
                x = layer.norm1(x + self._self_attention(i, layer, x))
                x = layer.norm2(x + layer._mha_block(x, self.memory, None, self.memory_pad))
                x = layer.norm3(x + layer._ff_block(x))
        if d.layers.norm is not None:
            x = d.layers.norm(x)
        return x[:, 0]

    def _self_attention(self, i: int, layer: nn.TransformerDecoderLayer, x: torch.Tensor) -> torch.Tensor:
        past = x if self.past[i] is None else torch.cat([self.past[i], x], dim=1)
        self.past[i] = past
        attended = layer.self_attn(x, past, past, key_padding_mask=self.pad, need_weights=False)[0]
        return layer.dropout1(attended)


@torch.no_grad()
def init_from_encoder(decoder: TiedDecoder, encoder: nn.Module, position_shift: int = 0) -> None:
    """Start the decoder from the pretrained encoder, as XLM starts both halves of its unsupervised-MT model from the
    pretrained cross-lingual LM (Lample & Conneau 2019, §4.3; the decoder's cross-attention is the only new block):
    decoder layer i takes encoder layer i's self-attention, feed-forward block and LayerNorms (BERT's layers are
    post-LN, as ``nn.TransformerDecoderLayer``), and the decoder's position embeddings (+ token type 0) and input
    LayerNorm come from the encoder's embedding layer, so the pretrained layers read inputs like those they were
    trained on.  Not the shipped default: in a 200-step denoising probe on e5-small (lr 1e-4, everything training)
    it learnt no faster than a random decoder (teacher-forced token accuracy 9.6 % against 9.1 %).
    Needs a BERT-style encoder (``encoder.embeddings``, ``encoder.encoder.layer``) of the decoder's width, heads and
    feed-forward size, with at least as many layers as the decoder."""
    from xlt.errors import ConfigError
    from xlt.models.families import family_of

    c, s, family = encoder.config, decoder.settings, family_of(encoder)
    reason = family.why_not("decoder_init", "encoder", c)
    if reason:
        raise ConfigError(f"decoder_init=encoder cannot run on {c.model_type}: {reason}")
    layers = family.layers(encoder)
    if s.norm_first:
        raise ConfigError("decoder_init=encoder copies post-LN (BERT-layout) layers: it needs decoder_norm_first "
                          "false")
    if s.heads != c.num_attention_heads or s.ffn != c.intermediate_size or s.layers > len(layers):
        raise ConfigError(f"decoder_init=encoder: the decoder must have the encoder's heads ({c.num_attention_heads})"
                          f" and feed-forward size ({c.intermediate_size}) and at most its {len(layers)} layers; "
                          f"got heads {s.heads}, ffn {s.ffn}, layers {s.layers}")
    init_inputs_from_encoder(decoder, encoder, position_shift)
    for mine, theirs in zip(decoder.layers.layers, layers):
        att = theirs.attention
        mine.self_attn.in_proj_weight.copy_(torch.cat([att.self.query.weight, att.self.key.weight,
                                                       att.self.value.weight]))
        mine.self_attn.in_proj_bias.copy_(torch.cat([att.self.query.bias, att.self.key.bias, att.self.value.bias]))
        mine.self_attn.out_proj.load_state_dict(att.output.dense.state_dict())
        mine.norm1.load_state_dict(att.output.LayerNorm.state_dict())
        mine.linear1.load_state_dict(theirs.intermediate.dense.state_dict())
        mine.linear2.load_state_dict(theirs.output.dense.state_dict())
        mine.norm3.load_state_dict(theirs.output.LayerNorm.state_dict())


@torch.no_grad()
def init_inputs_from_encoder(decoder: TiedDecoder, encoder: nn.Module, shift: int = 0) -> None:
    """The decoder's position embeddings (+ token type 0) and input LayerNorm from the encoder's embedding layer: the
    decoder's inputs are then built as the encoder's layer-0 states are, decoder slot t with the encoder's vector for
    position t + ``shift``, so cross-attention can match a decoder slot to a memory position from the first step.
    ``shift`` 0 shares the positions as XLM does; 1 gives slot t the position of the token it predicts (slot t has
    read the language token and target tokens < t and predicts target t, which sits at memory position t + 1 after
    ``<s>`` when the decoder copies)."""
    from xlt.models.families import family_of

    emb, offset = encoder.embeddings, family_of(encoder).position_offset + shift  # RoBERTa: position 0 is row 2
    n = min(decoder.settings.max_positions, emb.position_embeddings.weight.shape[0] - offset)
    extra = emb.token_type_embeddings.weight[0] if hasattr(emb, "token_type_embeddings") else 0.0
    decoder.positions.weight[:n] = emb.position_embeddings.weight[offset:offset + n] + extra
    decoder.norm.load_state_dict(emb.LayerNorm.state_dict())
