"""FILTER with self-teaching (Fang et al., AAAI 2021, Sec. 3.3): a trained FILTER run (the teacher,
``options.teacher``) predicts soft distributions for the translated side of every training example (every output
of the task: intent and slots, the pair label, word tags); a student FILTER is trained from the pretrained encoder
with

    L = L_src + λ·L_tgt + w_KL·KL(p_teacher_tgt ‖ p_student_tgt),   w_KL = 1 − λ unless ``kl_weight`` is set,

so noisy or missing transferred target labels (L_tgt) are complemented by the teacher's predictions (λ = 0: no
target labels at all, the paper's setting for POS / NER, whose translations have no labels there).  The soft
labels are stored in ``RUN_DIR/teacher_soft_labels.safetensors`` (reused when the run is resumed).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from xlt.config import path_field, positive, ranged
from xlt.config import load_config
from xlt.core.batching import Encoded, collate
from xlt.errors import ConfigError
from xlt.losses.distillation import distillation_kl, soft_targets
from xlt.methods.filter import Filter, paired_task_loss
from xlt.trained import load_trained


@dataclass
class SelfTeachingOptions:
    teacher: str = path_field()  # run directory of a trained ``filter`` run on the same data
    local_layers: int = 1  # FILTER's m: layers run on each side alone before fusion (as the teacher's)
    fusion_layers: int = 1  # FILTER's k: layers run over both sides together (as the teacher's)
    target_weight: float = 0.5  # λ
    kl_weight: float = ranged(-1.0, any_value=True)  # < 0: 1 − λ
    # softmax temperature of the teacher's and the student's distributions in the KL term
    temperature: float = positive(1.0)


@torch.no_grad()
def teacher_soft_labels(teacher, task, items: list[Encoded], pad: int, temperature: float,
                        batch_size: int = 128) -> list[dict[str, torch.Tensor]]:
    """The teacher's soft distributions for the pair side of each item (items in the teacher's id space)."""
    teacher.eval()
    out_items: list[dict[str, torch.Tensor]] = [{} for _ in items]
    order = sorted(range(len(items)), key=lambda i: len(items[i].input_ids) + len(items[i].pair.input_ids))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = collate(task, [items[i] for i in idx], pad)
        out = teacher(batch)
        for i, soft in zip(idx, soft_targets(out["pair"], batch["pair"], task.outputs, temperature)):
            out_items[i] = soft
    return out_items


class FilterSelfTeaching(Filter):
    name = "filter_self_teaching"
    description = "FILTER student trained with a FILTER teacher's soft target-side labels (KL self-teaching)"
    needs = "a trained filter run (the teacher), with its translator"
    takes_target_shots = False  # paired inputs (or a decoder) that plain target examples do not fit
    Options = SelfTeachingOptions  # type: ignore[assignment]

    def teacher_dir(self) -> Path:
        run = Path(self.options.teacher)
        if not self.options.teacher or not (run / "best" / "model.safetensors").exists():
            raise ConfigError(f"options.teacher: {self.options.teacher!r} is not a trained run directory (needs "
                              "best/model.safetensors); train a `filter` run first and point options.teacher at it")
        return run

    def check(self) -> None:
        tcfg = load_config(self.teacher_dir() / "config.yaml")  # fail before translating anything
        super().check()
        if tcfg.train.method != "filter" or tcfg.data.dataset != self.cfg.data.dataset:
            raise ConfigError(f"options.teacher: {self.teacher_dir()} is a {tcfg.train.method} run on "
                              f"{tcfg.data.dataset}; the teacher must be a filter run on {self.cfg.data.dataset}")
        if (tcfg.options.local_layers, tcfg.options.fusion_layers) != (self.options.local_layers,
                                                                       self.options.fusion_layers):
            raise ConfigError("options.teacher: the teacher's local_layers/fusion_layers differ from the student's")

    def before_training(self, data, pad_id: int) -> None:
        """Attach the teacher's soft labels to every training item (computed once, stored as safetensors)."""
        store = self.ctx.run_dir / "teacher_soft_labels.safetensors"
        names = list(self.task.outputs)
        if not store.exists():
            teacher = load_trained(self.teacher_dir())
            if teacher.labels != data.labels:
                raise ConfigError(f"options.teacher: {self.teacher_dir()} was trained with another label set; the "
                                  "teacher must be trained on the same data (dataset, source language, translation)")
            kept = data.trim.kept if data.trim is not None else None

            def full(e: Encoded) -> Encoded:  # back from the run's trimmed ids to the teacher's full vocabulary
                ids = [kept[i] for i in e.input_ids] if kept else e.input_ids
                return Encoded(ids, e.word_positions, e.labels, full(e.pair) if e.pair else None)

            soft = teacher_soft_labels(teacher.model, self.task, [full(e) for e in data.train], teacher.pad,
                                       self.options.temperature)
            tensors: dict[str, torch.Tensor] = {}
            for name in names:
                if self.task.outputs[name] == "sentence":
                    tensors[name] = torch.stack([s[name] for s in soft])
                else:
                    tensors[name] = torch.cat([s[name] for s in soft])
                    tensors["words"] = torch.tensor([s[name].shape[0] for s in soft])
            store.parent.mkdir(parents=True, exist_ok=True)
            save_file(tensors, str(store))
            (store.with_suffix(".json")).write_text(json.dumps({"teacher": str(self.teacher_dir()),
                                                                "examples": len(data.train)}))
        tensors = load_file(str(store))
        first = names[0]
        n = tensors[first].shape[0] if self.task.outputs[first] == "sentence" else tensors["words"].shape[0]
        if n != len(data.train):
            raise ConfigError(f"{store}: soft labels for {n} examples, but the run has {len(data.train)}; delete "
                              "the file or start a new run")
        offsets = [0] + torch.cumsum(tensors["words"], 0).tolist() if "words" in tensors else []
        for i, e in enumerate(data.train):
            e.soft = {name: tensors[name][i] if self.task.outputs[name] == "sentence"
                      else tensors[name][offsets[i]:offsets[i + 1]] for name in names}

    def loss(self, model, batch: dict) -> dict[str, torch.Tensor]:
        out = model(batch)
        parts = paired_task_loss(self.task, out, batch, self.options.target_weight)
        pair = batch["pair"]
        kl = distillation_kl(out["pair"], pair["soft"], pair["soft_mask"], self.task.outputs,
                             self.options.temperature)
        weight = 1 - self.options.target_weight if self.options.kl_weight < 0 else self.options.kl_weight
        return {**parts, "loss": parts["loss"] + weight * kl, "kl_loss": kl.detach()}
