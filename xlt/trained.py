"""A task model from a run's config, and a trained run folder back as a model that predicts: the pretrained encoder
(``model.init_from`` weights, a trimmed vocabulary) + the method's model, and ``load_trained`` (the run's ``best``
checkpoint over the FULL vocabulary).  Used by the fine-tuning recipe (``xlt.finetune``), evaluation, serving, and
methods that read another run (FILTER self-teaching's teacher).  The method is found by name in the registry, so
this module sits beside the methods, not above them."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from xlt import zoo
from xlt.config import RunConfig, load_config
from xlt.core.batching import Encoded
from xlt.core.context import RunContext
from xlt.core.vocab import VocabTrim, prepare_tokenizer, token_id
from xlt.errors import ConfigError, DataError
from xlt.models.families import family_of
from xlt.predict import predict
from xlt.registry import METHODS


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


def build_model(ctx: RunContext, method, labels: dict, trim: VocabTrim | None):
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


@dataclass
class TrainedRun:
    """A trained model over the FULL vocabulary, with what it needs to predict."""
    model: torch.nn.Module
    tokenizer: Any
    labels: dict
    ctx: RunContext
    method: Any  # xlt.methods.Method
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
    ctx = RunContext.from_config(cfg)
    method = METHODS.get(cfg.train.method)(ctx)
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
