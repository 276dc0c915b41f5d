"""A TALL pre-training run as a translator (``translation.translator: tall``, ``translation.tall_model: RUN``):
the encoder + tied decoder that unsupervised MT trained (``xlt pretrain`` with stage ``tall``; Xia et al. 2021)
translate between the two languages of their pair, greedily, each output restricted to the tokens its language's
corpus used (``decoder_vocab.safetensors``), as in the stage's own evaluation.  This gives translate-train,
translate-test, XeroAlign and FILTER a translator for pairs that have no other MT here (en-ja, en-de, ...).

The softmax runs over the output language's tokens only (tens of thousands, not XLM-R's 250k): the decoder is
copied per output language with the output rows of those tokens.  The cache key of the backend is ``tall:`` + the
hash of the run's decoder weights, so two TALL runs never share cached translations.
"""
from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import torch
from torch import nn

from xlt.errors import ConfigError, DataError
from xlt.models.families import layer_norm_eps
from xlt.translate.backends import TranslatorUnavailable


def tall_model_folder(path: str) -> Path:
    """The exported model folder of a TALL run: ``path`` itself, or ``path/model`` for a run folder."""
    for folder in (Path(path), Path(path) / "model"):
        if (folder / "decoder.json").exists() and (folder / "decoder_vocab.safetensors").exists():
            return folder
    raise ConfigError(f"translation.tall_model={path!r}: not the folder of a TALL pre-training run (xlt pretrain "
                      f"with stage tall: RUN or RUN/model with decoder.json and decoder_vocab.safetensors)")


class TallTranslator:
    def __init__(self, model: str = "", batch_size: int = 32, max_output: int = 128) -> None:
        from safetensors.torch import load_file

        from xlt import zoo
        from xlt.core.batching import inference_device
        from xlt.core.vocab import prepare_tokenizer, token_id
        from xlt.models.decoder import TiedDecoder

        if not model:
            raise ConfigError("translator tall needs translation.tall_model = the folder of a TALL pre-training run")
        folder = tall_model_folder(model)
        self.device = inference_device()
        encoder, tokenizer, _ = zoo.load_encoder(str(folder))
        self.encoder = encoder.eval().to(self.device)
        self.tokenizer = prepare_tokenizer(tokenizer)
        decoder = TiedDecoder.load(folder, encoder.config.hidden_size,
                                   layer_norm_eps(encoder.config))
        self.languages = list(decoder.settings.languages)
        allowed = load_file(str(folder / "decoder_vocab.safetensors"))["allowed"].bool()
        self.bos, self.eos, self.pad = (token_id(self.tokenizer, t) for t in ("<s>", "</s>", "<pad>"))
        self.batch_size, self.max_output = batch_size, min(max_output, decoder.settings.max_positions - 1)
        self.max_input = encoder.config.max_position_embeddings - 2
        digest = hashlib.sha1((folder / "decoder.safetensors").read_bytes()).hexdigest()[:16]
        self.name = f"tall:{digest}"
        # per output language: its token ids (+ pad, never generated), their embedding rows and output bias
        full = encoder.get_input_embeddings().weight.detach()
        self.vocab: dict[str, tuple[torch.Tensor, nn.Embedding, nn.Module]] = {}
        for i, lang in enumerate(self.languages):
            ids = torch.unique(torch.cat([allowed[i].nonzero().flatten(), torch.tensor([self.pad])]))
            sub = copy.deepcopy(decoder)
            sub.bias = nn.Parameter(decoder.bias.detach()[ids].clone())
            self.vocab[lang] = (ids.to(self.device), nn.Embedding.from_pretrained(full[ids].clone()).to(self.device),
                                sub.eval().to(self.device))

    def _check(self, src: str, tgt: str) -> None:
        if src not in self.languages or tgt not in self.languages or src == tgt:
            raise TranslatorUnavailable(f"translator {self.name} was pre-trained on {'-'.join(self.languages)}; "
                                        f"it does not translate {src}->{tgt}")

    @torch.no_grad()
    def translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        from xlt.core.batching import pad_ids
        from xlt.models.decoder import greedy_decode

        self._check(src, tgt)
        ids_sub, emb, decoder = self.vocab[tgt]
        sub_pad, sub_eos = (int((ids_sub == t).nonzero()) for t in (self.pad, self.eos))
        allowed = (ids_sub != self.pad).unsqueeze(0)
        encoded = [list(e.ids) for e in self.tokenizer.encode_batch([" ".join(t.split()) for t in texts])]
        for text, ids in zip(texts, encoded):
            if len(ids) > self.max_input + 2:
                raise DataError(f"translator {self.name}: a text of {len(ids)} sub-tokens is longer than the "
                                f"encoder reads ({self.max_input + 2}): {text[:80]!r}")
        out = [""] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        lang = self.languages.index(tgt)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            ids, mask = (t.to(self.device) for t in pad_ids([encoded[i] for i in idx], self.pad))
            memory = decoder.memory(self.encoder, ids, mask)
            limit = (mask.sum(1) * 3 // 2 + 5).clamp(max=self.max_output)
            lang_t = torch.full((len(idx),), lang, dtype=torch.long, device=self.device)
            got = greedy_decode(decoder, emb, lang_t, memory, mask, sub_eos, sub_pad, limit,
                                allowed.expand(len(idx), -1))
            for row, i in enumerate(idx):
                seq = ids_sub[got[row]].tolist()
                seq = seq[:seq.index(self.eos)] if self.eos in seq else seq
                out[i] = " ".join(self.tokenizer.decode([t for t in seq if t != self.pad],
                                                        skip_special_tokens=True).split())
        return out
