"""FILTER with self-teaching (Fang et al., AAAI 2021, Sec. 3.3): a trained FILTER run (the teacher,
``options.teacher``) predicts soft intent and slot distributions for the translated side of every training example;
a student FILTER is trained from the pretrained encoder with

    L = L_src + λ·L_tgt + w_KL·KL(p_teacher_tgt ‖ p_student_tgt),   w_KL = 1 − λ unless ``kl_weight`` is set,

so noisy projected target labels (L_tgt) are softened by the teacher's predictions (λ = 0: no target labels).
The soft labels are stored in ``RUN_DIR/teacher_soft_labels.safetensors`` (reused when the run is resumed).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from xlt.config import ConfigError, load_config
from xlt.features import Encoded, collate
from xlt.fusion import paired_task_loss, self_teaching_kl
from xlt.methods import Method, register
from xlt.methods import filter as plain_filter


@dataclass
class SelfTeachingOptions:
    teacher: str = ""  # run directory of a trained ``filter`` run on the same data
    local_layers: int = 1
    fusion_layers: int = 5
    target_weight: float = 0.5  # λ
    kl_weight: float = -1.0  # < 0: 1 − λ
    temperature: float = 1.0


def _teacher_run(opts: SelfTeachingOptions) -> Path:
    run = Path(opts.teacher)
    if not opts.teacher or not (run / "best" / "model.safetensors").exists():
        raise ConfigError(f"options.teacher: {opts.teacher!r} is not a trained run directory (needs "
                          "best/model.safetensors); train a `filter` run first and point options.teacher at it")
    return run


@torch.no_grad()
def teacher_soft_labels(teacher, items: list[Encoded], pad: int, temperature: float,
                        batch_size: int = 128) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The teacher's soft intent (n_intents) and per-word slot distributions (W_pair, n_slots) for the pair side of
    each item (full-vocabulary ids)."""
    teacher.eval()
    intents: list[torch.Tensor] = [torch.empty(0)] * len(items)
    slots: list[torch.Tensor] = [torch.empty(0)] * len(items)
    order = sorted(range(len(items)), key=lambda i: len(items[i].input_ids) + len(items[i].pair.input_ids))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = collate([items[i] for i in idx], pad)
        out = teacher(batch["input_ids"], batch["attention_mask"], batch["pair_input_ids"],
                      batch["pair_attention_mask"])
        p_intent = (out["pair_intent_logits"] / temperature).softmax(-1)
        p_slots = (out["pair_slot_logits"] / temperature).softmax(-1)
        for row, i in enumerate(idx):
            intents[i] = p_intent[row].clone()
            slots[i] = p_slots[row, torch.tensor(items[i].pair.word_positions)].clone()
    return intents, slots


def before_training(cfg, data, pad: int, run_dir: Path) -> None:
    """Attach the teacher's soft labels to every training item (computed once, stored as safetensors)."""
    from xlt.pipeline import load_trained  # late: the pipeline imports the method registry

    opts: SelfTeachingOptions = cfg.options
    store = run_dir / "teacher_soft_labels.safetensors"
    if store.exists():
        tensors = load_file(str(store))
        if tensors["intent"].shape[0] != len(data.train):
            raise ConfigError(f"{store}: soft labels for {tensors['intent'].shape[0]} examples, but the run has "
                              f"{len(data.train)}; delete the file or start a new run")
    else:
        teacher_dir = _teacher_run(opts)
        tcfg = load_config(teacher_dir / "config.yaml")
        meta = json.loads((teacher_dir / "labels.json").read_text())
        if meta != {"intents": data.labels.intents, "slots": data.labels.slots}:
            raise ConfigError(f"options.teacher: {teacher_dir} was trained with another label set; the teacher must "
                              "be trained on the same data (dataset, source language, translation settings)")
        if tcfg.options.local_layers != opts.local_layers or tcfg.options.fusion_layers != opts.fusion_layers:
            raise ConfigError("options.teacher: the teacher's local_layers/fusion_layers differ from the student's")
        teacher, tokenizer, _ = load_trained(teacher_dir, tcfg)
        full_pad = tokenizer.token_to_id("<pad>") if tokenizer.token_to_id("<pad>") is not None else \
            tokenizer.token_to_id("[PAD]")
        kept = data.trim.kept if data.trim is not None else None

        def full(e: Encoded) -> Encoded:  # back from the run's trimmed ids to the teacher's full vocabulary
            ids = [kept[i] for i in e.input_ids] if kept else e.input_ids
            return Encoded(ids, e.word_positions, e.slot_ids, e.intent_id, full(e.pair) if e.pair else None)

        intents, slots = teacher_soft_labels(teacher, [full(e) for e in data.train], full_pad, opts.temperature)
        lengths = torch.tensor([s.shape[0] for s in slots])
        run_dir.mkdir(parents=True, exist_ok=True)
        save_file({"intent": torch.stack(intents), "slots": torch.cat(slots), "words": lengths}, str(store))
        tensors = load_file(str(store))
    offsets = [0] + torch.cumsum(tensors["words"], 0).tolist()
    for i, e in enumerate(data.train):
        e.soft_intent = tensors["intent"][i]
        e.soft_slots = tensors["slots"][offsets[i]:offsets[i + 1]]


def train_examples(cfg, load_train, report: dict) -> list:
    _teacher_run(cfg.options)  # fail before translating anything
    return plain_filter.train_examples(cfg, load_train, report)


def loss(model, batch, opts: SelfTeachingOptions):
    out = model(batch["input_ids"], batch["attention_mask"], batch["pair_input_ids"], batch["pair_attention_mask"])
    parts = paired_task_loss(out, batch, opts.target_weight)
    kl = self_teaching_kl(out, batch, opts.temperature)
    weight = 1 - opts.target_weight if opts.kl_weight < 0 else opts.kl_weight
    return {**parts, "loss": parts["loss"] + weight * kl, "kl_loss": kl.detach()}


register(Method("filter_self_teaching", "FILTER student trained with a FILTER teacher's soft target-side labels "
                "(KL self-teaching, Fang et al. 2021)", train_examples, loss,
                options=SelfTeachingOptions, build_model=plain_filter.build_model,
                pair_eval_rows=plain_filter.pair_eval_rows, before_training=before_training))
