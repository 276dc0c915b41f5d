"""Reusable pieces that turn a RunConfig into data, labels and a model (the recipes in train/evaluate use them)."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from xlt import zoo
from xlt.config import RunConfig
from xlt.data.datasets import deduplicate, load_split
from xlt.data.records import DataError, Utterance
from xlt.features import Encoded, LabelSet, VocabTrim, encode_examples, prepare_tokenizer
from xlt.methods import get_method
from xlt.model import JointModel


@dataclass
class RunData:
    labels: LabelSet
    train: list[Encoded]
    dev: list[Encoded]
    dev_rows: list[Utterance]
    test_rows: dict[str, list[Utterance]]
    test: dict[str, list[Encoded]]
    trim: VocabTrim | None
    report: dict = field(default_factory=dict)


def load_train_rows(cfg: RunConfig, report: dict) -> list[Utterance]:
    """The method's training utterances, deduplicated / subset as configured (all counts go to ``report``)."""
    d = cfg.data

    def load_train(lang: str) -> list[Utterance]:
        split = load_split(Path(d.data_dir), d.dataset, lang, "train", d.orphan_policy)
        report.setdefault("files", []).extend(r.to_dict() for r in split.reports)
        return split.examples

    rows = get_method(cfg.train.method).train_examples(cfg, load_train, report)
    report["train_read"] = len(rows)
    if d.dedup:
        rows, removed = deduplicate(rows)
        report["train_duplicates_removed"] = removed
    if d.train_subset and d.train_subset < len(rows):
        rows = random.Random(cfg.train.seed).sample(rows, d.train_subset)
        report["train_subset"] = d.train_subset
    report["train_used"] = len(rows)
    return rows


def prepare_data(cfg: RunConfig, tokenizer) -> RunData:
    d = cfg.data
    report: dict = {}
    train_rows = load_train_rows(cfg, report)
    labels = LabelSet.from_examples(train_rows)
    train, too_long = encode_examples(tokenizer, train_rows, labels, d.max_length)
    report["train_too_long_skipped"] = len(too_long)
    report["train_too_long_first"] = too_long[:5]
    if not train:
        raise DataError(f"no training examples left (max_length={d.max_length})")
    dev_split = load_split(Path(d.data_dir), d.dataset, d.source_lang, "valid", d.orphan_policy)
    report["files"].extend(r.to_dict() for r in dev_split.reports)
    pair_rows = get_method(cfg.train.method).pair_eval_rows
    dev_rows = dev_split.examples
    if pair_rows is not None:  # paired models: each dev utterance with its translation
        dev_rows = pair_rows(cfg, dev_rows, d.source_lang, report.setdefault("eval_pairs", {}))
    dev, _ = encode_examples(tokenizer, dev_rows, labels, None)
    test_rows, test = {}, {}
    unseen = {}
    for lang in d.eval_langs:
        split = load_split(Path(d.data_dir), d.dataset, lang, "test", d.orphan_policy)
        report["files"].extend(r.to_dict() for r in split.reports)
        test_rows[lang] = split.examples
        # paired models are tested by evaluate_run; here test text only widens the kept vocabulary
        test[lang], _ = encode_examples(tokenizer, split.examples, labels, None)
        tags = {t[2:] for u in split.examples for t in u.slots if t != "O"}
        unseen[lang] = {"slot_types": sorted(tags - {t[2:] for t in labels.slots if t != "O"}),
                        "intents": sorted({u.intent for u in split.examples} - set(labels.intents))}
    report["gold_labels_unseen_in_training"] = unseen
    trim = None
    if cfg.model.trim_vocab:
        specials = [tokenizer.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>", "[CLS]",
                                                       "[SEP]", "[PAD]", "[UNK]", "[MASK]")]
        trim = VocabTrim.from_encoded([train, dev, *test.values()], [i for i in specials if i is not None])
        for group in [train, dev, *test.values()]:
            for e in group:
                e.input_ids = trim.map_ids(e.input_ids)
                if e.pair is not None:
                    e.pair.input_ids = trim.map_ids(e.pair.input_ids)
        report["vocab_kept"] = len(trim.kept)
    return RunData(labels, train, dev, dev_split.examples, test_rows, test, trim, report)


def pad_id(tokenizer, trim: VocabTrim | None) -> int:
    pid = tokenizer.token_to_id("<pad>")
    pid = tokenizer.token_to_id("[PAD]") if pid is None else pid
    return trim.old_to_new[pid] if trim else pid


def build_model(cfg: RunConfig, labels: LabelSet, trim: VocabTrim | None):
    """Pretrained encoder (trimmed if asked) + fresh heads; returns (model, tokenizer)."""
    encoder, tokenizer, _ = zoo.load_encoder(cfg.model.name)
    if trim is not None:
        encoder.set_input_embeddings(trim.trim_embedding(encoder.get_input_embeddings()))
    if cfg.model.freeze_embeddings:
        encoder.get_input_embeddings().weight.requires_grad_(False)
    custom = get_method(cfg.train.method).build_model
    if custom is not None:
        model = custom(cfg, encoder, labels)
    else:
        model = JointModel(encoder, len(labels.intents), len(labels.slots), cfg.model.pooling, cfg.model.dropout)
    return model, prepare_tokenizer(tokenizer)


def save_run_meta(run_dir: Path, labels: LabelSet, trim: VocabTrim | None, report: dict) -> None:
    (run_dir / "labels.json").write_text(json.dumps({"intents": labels.intents, "slots": labels.slots}, indent=1))
    if trim is not None:
        save_file({"kept_ids": torch.tensor(trim.kept, dtype=torch.long)}, str(run_dir / "vocab_trim.safetensors"))
    (run_dir / "data_report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))


def load_trained(run_dir: Path, cfg: RunConfig, which: str = "best"):
    """Load a trained model for inference over the FULL vocabulary: trained embedding rows are scattered back into
    the pretrained matrix, so any new text tokenizes exactly as in training.  Returns (model, tokenizer, labels)."""
    meta = json.loads((run_dir / "labels.json").read_text())
    labels = LabelSet(meta["intents"], meta["slots"])
    trim_file = run_dir / "vocab_trim.safetensors"
    trim = VocabTrim(load_file(str(trim_file))["kept_ids"].tolist()) if trim_file.exists() else None
    model, tokenizer = build_model(cfg, labels, None)
    full = model.encoder.get_input_embeddings().weight.data.clone()
    state = load_file(str(run_dir / which / "model.safetensors"))
    emb = model.encoder.get_input_embeddings().weight
    key = next(name for name, p in model.named_parameters() if p is emb)
    if trim is not None and key in state:
        state[key] = trim.untrim_into(state[key], full)
    model.load_state_dict(state)
    model.eval()
    return model, tokenizer, labels
