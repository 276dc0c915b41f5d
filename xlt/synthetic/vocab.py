"""Grow a model folder by a synthetic language's vocabulary: one fresh sub-token (and embedding row) per sub-token
of the base language, so a synthetic sentence is tokenized into the images of its base sentence's sub-tokens.

Which sub-tokens: every piece of the tokenizer whose characters (after SentencePiece's ``▁`` or WordPiece's ``##``)
all belong to the base alphabet.  Its image is the same piece with each character ciphered (``xlt.synthetic``), with
the same Unigram score or a fresh WordPiece id, so the tokenizer's search over the image runs exactly as over the
base sentence.  A normalizer that changes base characters (BERT-uncased lower-cases) gets the same change on their
images (a ``Replace`` per character), so case is folded the same way in both languages.

The new embedding rows are new vocabulary, never copies: each is drawn (seeded) from the normal distribution with the
mean and covariance of the existing rows, so a synthetic token looks like some real token to the encoder but like
none in particular.  Not Hugging Face's ``mean_resizing``: it shrinks that covariance by 1e-9 (so that a few added
tokens do not disturb a generative model's softmax), which for a whole new language makes every one of its ~83,000
tokens the same vector -- a language of one word, in which the synthetic checks measured XeroAlign at 24 % intent
accuracy on the same-order image of English.
The grown folder is an ordinary Hugging Face folder (+ ``synthetic.json`` saying what was added), so trimming,
export and serving work on it unchanged.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from xlt.core.vocab import SPECIAL_TOKENS
from xlt.synthetic import ALPHABETS, SEED, cipher, cipher_map

MARKER = "synthetic.json"
INIT = "normal(mean, covariance of the existing rows)"  # a grown folder with another init is grown again


# a file of the existing rows' statistics (``mean``, ``covariance``: what ``row_statistics`` returns) to draw from
# instead: a GPU run whose base model was packed with its unused rows zeroed (benchmarks/gpu_pack.py) grows the same
# language as the full model does here
ROW_STATS_ENV = "XLT_SYNTHETIC_ROW_STATS"


def row_statistics(rows) -> dict:
    """Mean (H,) and covariance (H, H) of ``rows`` (V, H), and V (a file of them applies to that model only)."""
    import torch

    mean = rows.mean(0)
    centred = rows - mean
    return {"mean": mean, "covariance": centred.T @ centred / rows.shape[0], "rows": torch.tensor(rows.shape[0])}


def _packed_row_statistics(vocab_size: int, width: int) -> dict | None:
    """The statistics of ``$XLT_SYNTHETIC_ROW_STATS`` if that file is there and is of a (vocab_size, width) matrix."""
    path = os.environ.get(ROW_STATS_ENV)
    if not path or not Path(path).exists():
        return None
    from safetensors.torch import load_file

    stats = load_file(path)
    return stats if stats["mean"].shape == (width,) and int(stats["rows"]) == vocab_size else None


def sample_like(rows, n: int, stats: dict | None = None):
    """(n, H) draws from the normal distribution fitted to ``rows`` (V, H) (or given by ``stats``): same mean and
    full covariance."""
    import torch

    stats = stats or row_statistics(rows)
    mean, covariance = stats["mean"], stats["covariance"]
    jitter = 1e-6 * covariance.diagonal().mean() * torch.eye(rows.shape[1])  # a rank-deficient tiny model
    return mean + torch.randn(n, rows.shape[1]) @ torch.linalg.cholesky(covariance + jitter).T


def _core(piece: str, prefixes: tuple[str, ...]) -> tuple[str, str]:
    for p in prefixes:
        if piece.startswith(p) and len(piece) > len(p):
            return p, piece[len(p):]
    return "", piece


def grow_tokenizer(spec: dict, base: str) -> tuple[dict, list[tuple[int, int]]]:
    """A tokenizer.json (as a dict) with the synthetic image of every base-language piece added; returns (new
    spec, [(base id, new id)])."""
    spec = json.loads(json.dumps(spec))
    alphabet = set(ALPHABETS[base])
    special = {t["content"] for t in spec.get("added_tokens", [])} | set(SPECIAL_TOKENS)
    model = spec["model"]
    pairs: list[tuple[int, int]] = []

    def eligible(piece: str, prefixes: tuple[str, ...]) -> str | None:
        if piece in special:
            return None
        prefix, core = _core(piece, prefixes)
        return prefix + cipher(core, base) if core and set(core) <= alphabet else None

    if model["type"] == "Unigram":
        vocab = model["vocab"]
        n = len(vocab)
        for i in range(n):
            image = eligible(vocab[i][0], ("▁",))
            if image is not None:
                pairs.append((i, len(vocab)))
                vocab.append([image, vocab[i][1]])
    elif model["type"] == "WordPiece":
        vocab = model["vocab"]
        prefix = model.get("continuing_subword_prefix") or "##"
        nxt = max(vocab.values()) + 1
        for piece, i in sorted(vocab.items(), key=lambda kv: kv[1]):
            image = eligible(piece, (prefix,))
            if image is not None and image not in vocab:
                vocab[image] = nxt
                pairs.append((i, nxt))
                nxt += 1
    else:
        raise ValueError(f"synthetic languages: tokenizer model {model['type']} is not supported (BPE merges would "
                         f"need images too); use a SentencePiece (Unigram) or WordPiece model")
    spec["normalizer"] = _normalizer_with_images(spec, base)
    return spec, pairs


def _normalizer_with_images(spec: dict, base: str) -> dict | None:
    """The tokenizer's normalizer, preceded by a Replace per base character it changes (applied to the image)."""
    from tokenizers import Tokenizer

    original = spec.get("normalizer")
    if original is None:
        return None
    tok = Tokenizer.from_str(json.dumps(spec))
    rules = []
    for c, image in cipher_map(base).items():
        normal = tok.normalizer.normalize_str(c)
        if normal != c and normal and set(normal) <= set(ALPHABETS[base]):
            rules.append({"type": "Replace", "pattern": {"String": image}, "content": cipher(normal, base)})
    if not rules:
        return original
    return {"type": "Sequence", "normalizers": rules + [original]}


def has_vocabulary(folder: Path, base: str, current: bool = False) -> bool:
    """Whether ``folder`` holds the synthetic vocabulary of ``base`` (``current``: grown with today's ``INIT``)."""
    marker = folder / MARKER
    info = json.loads(marker.read_text()) if marker.exists() else {}
    return base in info.get("bases", []) and (not current or info.get("init") == INIT)


def grow_folder(source: Path, target: Path, base: str, seed: int = SEED) -> dict:
    """Write ``target``: ``source`` with the synthetic vocabulary of ``base`` added (tokenizer + embeddings)."""
    import torch
    from transformers.utils import logging as hf_logging

    from xlt.models.families import load_pretrained

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()  # the resize notice is stated in synthetic.json ("init") instead
    spec, pairs = grow_tokenizer(json.loads((source / "tokenizer.json").read_text(encoding="utf-8")), base)
    target.mkdir(parents=True, exist_ok=True)
    for f in source.iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "config.json", "tokenizer.json", MARKER):
            shutil.copy2(f, target / f.name)
    (target / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    encoder = load_pretrained(source)
    old = encoder.get_input_embeddings().weight.shape[0]
    new_size = max(old, max(n for _, n in pairs) + 1)
    encoder.resize_token_embeddings(new_size, mean_resizing=False)
    rows = encoder.get_input_embeddings().weight
    stats = _packed_row_statistics(old, rows.shape[1])
    with torch.no_grad(), torch.random.fork_rng():  # a fixed language whatever run builds it first
        torch.manual_seed(seed)
        rows[old:] = sample_like(rows[:old].float(), new_size - old, stats).to(rows.dtype)
    encoder.save_pretrained(str(target), safe_serialization=True)
    previous = json.loads((source / MARKER).read_text()) if (source / MARKER).exists() else {}
    info = {"bases": previous.get("bases", []) + [base], "seed": seed, "source": str(source),
            "added": previous.get("added", 0) + len(pairs), "vocab_size_before": old, "vocab_size": new_size,
            "pairs": {**previous.get("pairs", {}), base: [[b, n] for b, n in pairs]}, "init": INIT,
            **({"row_statistics_from": os.environ[ROW_STATS_ENV]} if stats is not None else {})}
    (target / MARKER).write_text(json.dumps(info))
    return info


def id_pairs(folder: Path, base: str) -> list[tuple[int, int]]:
    """(base id, synthetic id) of a grown folder: the true bijection between the two vocabularies."""
    info = json.loads((folder / MARKER).read_text())
    return [(b, n) for b, n in info["pairs"][base]]
