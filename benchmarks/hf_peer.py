"""The Hugging Face side of ``training_speed.py``: the plain ``transformers.Trainer`` peers it times beside xlt -- the
same encoder with the same two heads on the same sentences (``run_hf``), and a plain MLM Trainer on the same token
sequences (``run_hf_mlm``)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from torch import nn


class JointModel(nn.Module):
    """The Hugging Face peer: encoder + intent head (mean pooling) + slot head (first sub-token of each word)."""

    def __init__(self, folder: Path, n_intents: int, n_slots: int, attention_dropout: float | None = None) -> None:
        super().__init__()
        from xlt.models.families import load_pretrained

        self.encoder = load_pretrained(folder, attention_dropout)  # AutoModel, no pooling layer
        self.encoder.get_input_embeddings().weight.requires_grad_(False)
        h = self.encoder.config.hidden_size
        self.intent, self.slots = nn.Linear(h, n_intents), nn.Linear(h, n_slots)

    def forward(self, input_ids, attention_mask, intent_labels, slot_labels):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        loss = nn.functional.cross_entropy(self.intent(pooled), intent_labels)
        loss = loss + nn.functional.cross_entropy(self.slots(hidden).flatten(0, 1), slot_labels.flatten(),
                                                  ignore_index=-100)
        return {"loss": loss}


def hf_rows(items: list, labels: dict) -> list[dict]:
    """xlt's encoded training items (full vocabulary) as the Trainer's rows: slot label on each word's first
    sub-token, -100 elsewhere."""
    rows = []
    for e in items:
        slots = [-100] * len(e.input_ids)
        for pos, tag in zip(e.word_positions, e.labels["slots"]):
            slots[pos] = tag
        rows.append({"input_ids": e.input_ids, "intent_labels": e.labels["intent"], "slot_labels": slots})
    return rows


def run_hf(folder: Path, rows: list[dict], n_intents: int, n_slots: int, pad: int, steps: int, batch_size: int,
           lr: float, seed: int, precision: str = "fp32", compile: bool = False,
           attention_dropout: float | None = None) -> dict:
    from transformers import Trainer, TrainingArguments

    seen = {"tokens": 0, "padded": 0}

    def collate(batch: list[dict]) -> dict:
        T = max(len(r["input_ids"]) for r in batch)
        ids = torch.full((len(batch), T), pad)
        mask, slots = torch.zeros_like(ids), torch.full_like(ids, -100)
        for i, r in enumerate(batch):
            n = len(r["input_ids"])
            ids[i, :n], mask[i, :n], slots[i, :n] = torch.tensor(r["input_ids"]), 1, torch.tensor(r["slot_labels"])
        seen["tokens"] += int(mask.sum())
        seen["padded"] += ids.numel()
        return {"input_ids": ids, "attention_mask": mask, "slot_labels": slots,
                "intent_labels": torch.tensor([r["intent_labels"] for r in batch])}

    torch.manual_seed(seed)
    torch.backends.cuda.enable_cudnn_sdp(True)  # PyTorch's default, which xlt turns off in this process
    model = JointModel(folder, n_intents, n_slots, attention_dropout)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, per_device_train_batch_size=batch_size, max_steps=steps,
                                 learning_rate=lr, warmup_steps=0.1, weight_decay=0.01,
                                 **_group_by_length(),
                                 save_strategy="no", eval_strategy="no",
                                 logging_strategy="no", report_to=[], use_cpu=not torch.cuda.is_available(),
                                 dataloader_num_workers=0, seed=seed, disable_tqdm=True,
                                 bf16=precision == "bf16", fp16=precision == "fp16", torch_compile=compile)
        trainer = Trainer(model=model, args=args, train_dataset=_ListDataset(rows), data_collator=collate)
        metrics = trainer.train().metrics
    seconds = metrics["train_runtime"]
    return {"seconds": seconds, "tokens": seen["tokens"], "mean_padded_length": seen["padded"] / (steps * batch_size),
            "encoder": model.encoder}


def _group_by_length() -> dict:
    """The Trainer's length grouping: ``train_sampling_strategy`` since transformers 5.x, ``group_by_length``
    before (the GPU image may hold another version than this machine)."""
    import dataclasses

    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    return ({"train_sampling_strategy": "group_by_length"} if "train_sampling_strategy" in names
            else {"group_by_length": True})


class _ListDataset(torch.utils.data.Dataset):
    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict:
        return self.rows[i]


def run_hf_mlm(folder: Path, sequences: list[list[int]], steps: int, batch_size: int, lr: float, seed: int,
               precision: str = "fp32") -> dict:
    """A plain ``transformers`` MLM Trainer (AutoModelForMaskedLM: the tied head over every position and the full
    vocabulary, as it ships; DataCollatorForLanguageModeling, 15 %) on the same token sequences."""
    from transformers import (AutoModelForMaskedLM, DataCollatorForLanguageModeling, PreTrainedTokenizerFast, Trainer,
                              TrainingArguments)

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), mask_token="<mask>",
                                        pad_token="<pad>", cls_token="<s>", sep_token="</s>", unk_token="<unk>")
    base = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    seen = {"tokens": 0}

    def collate(batch: list[dict]) -> dict:
        out = base(batch)
        seen["tokens"] += int(out["attention_mask"].sum())
        return out

    torch.manual_seed(seed)
    torch.backends.cuda.enable_cudnn_sdp(True)  # PyTorch's default, which xlt turns off in this process
    model = AutoModelForMaskedLM.from_pretrained(str(folder))
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, per_device_train_batch_size=batch_size, max_steps=steps,
                                 learning_rate=lr, warmup_steps=0.1, weight_decay=0.01,
                                 **_group_by_length(), save_strategy="no", eval_strategy="no",
                                 logging_strategy="no", report_to=[], use_cpu=not torch.cuda.is_available(),
                                 dataloader_num_workers=0, seed=seed, disable_tqdm=True,
                                 bf16=precision == "bf16", fp16=precision == "fp16")
        rows = _ListDataset([{"input_ids": s} for s in sequences])
        metrics = Trainer(model=model, args=args, train_dataset=rows, data_collator=collate).train().metrics
    return {"seconds": metrics["train_runtime"], "tokens": seen["tokens"]}
