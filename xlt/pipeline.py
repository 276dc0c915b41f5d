"""Reusable steps that turn a run config into data, labels and a model, and a trained run folder back into a
model that predicts (the recipes in ``xlt.finetune`` and ``xlt.evaluation`` use them).  Nothing here knows a task's
label types: the task encodes, the method chooses the examples and the model."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from xlt import zoo
from xlt.config import RunConfig, load_config
from xlt.core.batching import Encoded
from xlt.core.context import RunContext
from xlt.core.vocab import VocabTrim, prepare_tokenizer, special_ids, token_id
from xlt.data.datasets import deduplicate
from xlt.errors import ConfigError, DataError
from xlt.methods import Method, get_method
from xlt.models.families import check_supported, family_of
from xlt.predict import predict


@dataclass
class RunData:
    labels: dict
    train: list[Encoded]
    dev: list[Encoded]
    dev_examples: list
    test_examples: dict[str, list]
    trim: VocabTrim | None
    report: dict = field(default_factory=dict)
    # train.select=target_dev: {lang: (dev examples, encoded inputs)} of the labelled target-language dev sets
    target_dev: dict[str, tuple[list, list[Encoded]]] = field(default_factory=dict)


def target_dev_langs(cfg: RunConfig) -> list[str]:
    """The languages whose labelled dev sets ``train.select=target_dev`` selects on."""
    return cfg.train.target_dev_langs or [x for x in cfg.data.eval_langs if x != cfg.data.source_lang]


def make_run(cfg: RunConfig) -> tuple[RunContext, Method]:
    """The run context and the method instance; the method's config checks run here, before any work."""
    ctx = RunContext.from_config(cfg)
    method = get_method(cfg.train.method)(ctx)
    method.check()
    check_supported(zoo.resolve(cfg.model.name), "method", cfg.train.method)
    if cfg.train.select == "target_dev":
        if type(method).predict is not Method.predict:
            raise ConfigError(f"train.select=target_dev: method {cfg.train.method} predicts its own way at test time "
                              f"(through a translation or a language token), which selection during training does "
                              f"not reproduce; use source_dev, last or average")
        if not target_dev_langs(cfg):
            raise ConfigError("train.select=target_dev needs target languages: train.target_dev_langs, or "
                              "data.eval_langs other than the source language")
    return ctx, method


def load_train_examples(ctx: RunContext, method: Method) -> list:
    """The method's training examples, deduplicated / subset as configured (all counts go to the report)."""
    d, report = ctx.cfg.data, ctx.report
    rows = method.train_examples()
    report["train_read"] = len(rows)
    if d.dedup:
        rows, removed = deduplicate(rows)
        report["train_duplicates_removed"] = removed
    if d.train_subset and d.train_subset < len(rows):
        rows = random.Random(ctx.cfg.train.seed).sample(rows, d.train_subset)
        report["train_subset"] = d.train_subset
    report["train_used"] = len(rows)
    return rows


def encode_examples(task, tokenizer, examples: list, labels: dict,
                    max_length: int | None) -> tuple[list[Encoded], list[str]]:
    """Encode examples (and their attached translations); an example whose input or translation is longer than
    ``max_length`` sub-tokens is skipped and returned as a skipped origin (never cut)."""
    out, too_long = [], []
    for e in examples:
        item = task.encode(tokenizer, e, labels)
        if e.translation is not None:
            item.pair = task.encode(tokenizer, e.translation, labels)
        longest = max(len(item.input_ids), len(item.pair.input_ids) if item.pair else 0)
        if max_length is not None and longest > max_length:
            too_long.append(f"{e.origin}: {longest} sub-tokens > max_length {max_length}")
            continue
        out.append(item)
    return out, too_long


def prepare_data(ctx: RunContext, method: Method) -> RunData:
    """Training, dev and test data of a run, validated before any training step (a missing or unusable test file
    stops the run here, not after hours of training)."""
    cfg, task, tokenizer, report = ctx.cfg, ctx.task, ctx.tokenizer, ctx.report
    d = cfg.data
    train_rows = load_train_examples(ctx, method)
    labels = ctx.labels = task.label_space(train_rows)
    train, too_long = encode_examples(task, tokenizer, train_rows, labels, d.max_length)
    report["train_too_long_skipped"] = len(too_long)
    report["train_too_long_first"] = too_long[:5]
    if not train:
        raise DataError(f"no training examples left (max_length={d.max_length})")
    dev_examples = ctx.load_split(d.source_lang, "valid")
    pair_report: dict = {}
    dev, _ = encode_examples(task, tokenizer, method.eval_inputs(dev_examples, d.source_lang, pair_report), labels,
                             None)
    target_dev = {}
    if cfg.train.select == "target_dev":  # labelled target-language data chooses the checkpoint: not zero-shot
        for lang in target_dev_langs(cfg):
            examples = ctx.load_split(lang, "valid")
            target_dev[lang] = (examples, encode_examples(task, tokenizer, method.eval_inputs(examples, lang,
                                                                                          pair_report), labels,
                                                          None)[0])
    if pair_report:
        report["eval_pairs"] = pair_report
    test_examples, id_lists, unseen = {}, [], {}
    for lang in d.eval_langs:
        test_examples[lang] = ctx.load_split(lang, "test")
        # paired models are tested by evaluate_run; here test text only widens the kept vocabulary
        id_lists += [task.encode(tokenizer, e, labels).input_ids for e in test_examples[lang]]
        unseen[lang] = task.unseen_labels(test_examples[lang], labels)
    report["gold_labels_unseen_in_training"] = unseen
    trim = None
    if cfg.model.trim_vocab:
        groups = (train, dev, *(items for _, items in target_dev.values()))
        for group in groups:
            for e in group:
                id_lists.append(e.input_ids)
                if e.pair is not None:
                    id_lists.append(e.pair.input_ids)
        trim = VocabTrim.from_ids(id_lists, special_ids(tokenizer))
        for group in groups:
            for e in group:
                e.input_ids = trim.map_ids(e.input_ids)
                if e.pair is not None:
                    e.pair.input_ids = trim.map_ids(e.pair.input_ids)
        report["vocab_kept"] = len(trim.kept)
    return RunData(labels, train, dev, dev_examples, test_examples, trim, report, target_dev)


def pad_id(tokenizer, trim: VocabTrim | None) -> int:
    pid = token_id(tokenizer, "<pad>", "[PAD]")
    return trim.old_to_new[pid] if trim else pid


def load_encoder_weights(encoder: torch.nn.Module, folder: str) -> dict:
    """``model.init_from``: encoder weights from ``folder/model.safetensors`` (an HF encoder, a stage's output, or a
    task model whose keys start with ``encoder.``), loaded over the pretrained ones with key and shape checks."""
    path = Path(folder) / "model.safetensors"
    if not path.exists():
        raise ConfigError(f"model.init_from: {path} not found")
    state = load_file(str(path))
    # a task model stores its encoder under "encoder." (an HF encoder has "encoder.layer.*" too, hence embeddings)
    if any(k.startswith("encoder.embeddings.") for k in state):
        state = {k[len("encoder."):]: v for k, v in state.items() if k.startswith("encoder.")}
    own = encoder.state_dict()
    missing = sorted(set(own) - set(state))
    bad = [k for k in own if k in state and state[k].shape != own[k].shape]
    if missing or bad:
        raise ConfigError(f"model.init_from: {path} does not fit the encoder of model.name: "
                          f"{len(missing)} missing key(s) (e.g. {missing[:2]}), shape mismatch in {bad[:2]}")
    encoder.load_state_dict({k: state[k] for k in own})
    return {"init_from": str(path), "tensors": len(own), "ignored": sorted(set(state) - set(own))[:10]}


def build_model(ctx: RunContext, method: Method, labels: dict, trim: VocabTrim | None):
    """Pretrained encoder (``model.init_from`` weights, trimmed if asked) + the method's model; returns
    (model, tokenizer)."""
    cfg = ctx.cfg
    encoder, tokenizer, _ = zoo.load_encoder(cfg.model.name, cfg.model.attention_dropout)
    if cfg.model.init_from:
        ctx.report["init_from"] = load_encoder_weights(encoder, cfg.model.init_from)
    if trim is not None:
        encoder.set_input_embeddings(trim.trim_embedding(encoder.get_input_embeddings()))
    if cfg.model.freeze_embeddings:
        encoder.get_input_embeddings().weight.requires_grad_(False)
    return method.build_model(encoder, labels), prepare_tokenizer(tokenizer)


def save_run_meta(run_dir: Path, labels: dict, trim: VocabTrim | None, report: dict) -> None:
    (run_dir / "labels.json").write_text(json.dumps(labels, indent=1, ensure_ascii=False))
    if trim is not None:
        save_file({"kept_ids": torch.tensor(trim.kept, dtype=torch.long)}, str(run_dir / "vocab_trim.safetensors"))
    (run_dir / "data_report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))


@dataclass
class TrainedRun:
    """A trained model over the FULL vocabulary, with what it needs to predict."""
    model: torch.nn.Module
    tokenizer: Any
    labels: dict
    ctx: RunContext
    method: Method
    pad: int
    split_inputs: int = 0  # examples split into pieces because they exceed the encoder's positions

    @property
    def max_tokens(self) -> int:
        return family_of(self.model.encoder).max_tokens(self.model.encoder.config)

    def predict(self, examples: list, accelerator=None) -> list:
        """Predictions for ``examples``; one longer than the encoder takes is split by the task into pieces that fit
        (their predictions joined; counted in ``split_inputs``), or is an error naming it."""
        task = self.ctx.task
        pieces, owners = [], []
        for i, e in enumerate(examples):
            parts = [e]
            if len(task.encode(self.tokenizer, e, self.labels).input_ids) > self.max_tokens:
                parts = task.split_long(e, self.tokenizer, self.max_tokens)
                if parts is None:
                    raise DataError(f"{e.origin}: longer than the encoder's {self.max_tokens} positions, and task "
                                    f"{task.name} cannot split it")
                self.split_inputs += 1
            pieces += parts
            owners += [i] * len(parts)
        items, _ = encode_examples(task, self.tokenizer, pieces, self.labels, None)
        # the model is where its owner put it (evaluate_run: the GPU when there is one; training: Accelerate)
        device = accelerator.device if accelerator is not None else next(self.model.parameters()).device
        preds = predict(self.model, task, self.labels, items, self.pad, self.ctx.cfg.train.eval_batch_size, device,
                        accelerator)
        if len(pieces) == len(examples):
            return preds
        grouped: list[list] = [[] for _ in examples]
        for owner, p in zip(owners, preds):
            grouped[owner].append(p)
        return [g[0] if len(g) == 1 else task.join_predictions(g) for g in grouped]


def load_trained(run_dir: Path, cfg: RunConfig | None = None, which: str = "best") -> TrainedRun:
    """Load a trained run for inference over the FULL vocabulary: trained embedding rows are scattered back into
    the pretrained matrix, so any new text tokenizes exactly as in training."""
    run_dir = Path(run_dir)
    if not (run_dir / which / "model.safetensors").exists():
        raise ConfigError(f"{run_dir}: not a trained run (no {which}/model.safetensors)")
    cfg = cfg or load_config(run_dir / "config.yaml")
    ctx, method = RunContext.from_config(cfg), None
    method = get_method(cfg.train.method)(ctx)
    labels = json.loads((run_dir / "labels.json").read_text())
    trim_file = run_dir / "vocab_trim.safetensors"
    trim = VocabTrim(load_file(str(trim_file))["kept_ids"].tolist()) if trim_file.exists() else None
    model, tokenizer = build_model(ctx, method, labels, None)
    ctx.tokenizer, ctx.labels = tokenizer, labels
    full = model.encoder.get_input_embeddings().weight.data.clone()
    state = load_file(str(run_dir / which / "model.safetensors"))
    emb = model.encoder.get_input_embeddings().weight
    key = next(name for name, p in model.named_parameters() if p is emb)
    if trim is not None and key in state:
        state[key] = trim.untrim_into(state[key], full)
    model.load_state_dict(state)
    model.eval()
    return TrainedRun(model, tokenizer, labels, ctx, method, pad_id(tokenizer, None))
