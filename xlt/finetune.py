"""The fine-tuning recipe, read top to bottom: ``Run.from_config(cfg)`` (context, method, their checks, tokenizer)
-> ``.data()`` (training, dev and test data, validated before any step) -> ``.model()`` -> ``.train()`` (the shared
loop of ``xlt.core.loop``).  ``train(cfg)`` is all of it.

Evaluation during training is on the SOURCE-language dev set (the task's selection metric, or
``train.select_metric``), sharded across processes; the best checkpoint is kept in ``RUN_DIR/best``.  Nothing here
knows a task or a method: they come from the run context.
"""
from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import torch
from accelerate.utils import set_seed
from safetensors.torch import load_file, save_file

from xlt import zoo
from xlt.config import RunConfig, save_config
from xlt.core import checkpoint
from xlt.core.batching import (Encoded, collate, item_sentences, item_tokens, length_bucketed_batches,
                               to_device)
from xlt.core.context import RunContext
from xlt.core.loop import LoopHooks, LoopSettings, configure_threads, make_accelerator, run_loop
from xlt.core.run_folder import check_run_dir, replacing
from xlt.core.vocab import VocabTrim, prepare_tokenizer, special_ids
from xlt.data.datasets import deduplicate, get_dataset
from xlt.errors import ConfigError, DataError
from xlt.methods import Method, get_method
from xlt.models.families import check_supported
from xlt.predict import predict
from xlt.trained import build_model, encode_examples, pad_id


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


class Run:
    """One fine-tuning run: its context (config, dataset, task, tokenizer, report) and method; each step below
    builds on the one before."""

    def __init__(self, ctx: RunContext, method: Method) -> None:
        self.cfg, self.ctx, self.method = ctx.cfg, ctx, method

    @classmethod
    def from_config(cls, cfg: RunConfig, tokenizer: bool = True) -> "Run":
        """The context and the method; the method's config checks run here, before any work.  ``tokenizer``: load
        the model's tokenizer too (every step after this one needs it)."""
        ctx = RunContext.from_config(cfg)
        method = get_method(cfg.train.method)(ctx)
        method.check()
        check_supported(zoo.resolve(cfg.model.name), "method", cfg.train.method)
        shots = {lang for lang, n in cfg.data.target_shots.items() if n}
        if cfg.data.source_lang in shots:
            raise ConfigError(f"data.target_shots: {cfg.data.source_lang} is the source language (its training set "
                              "is read whole)")
        if shots and not method.takes_target_shots:
            raise ConfigError(f"data.target_shots: method {cfg.train.method} trains on paired or generated inputs "
                              "that a few labelled target examples do not fit; use zero_shot, translate_train, "
                              "multi_language or translate_test")
        if cfg.train.select == "target_dev" and shots & set(target_dev_langs(cfg)):
            raise ConfigError("data.target_shots and train.select=target_dev on the same language: the shots may come "
                              "from the dev set that would choose the checkpoint")
        if cfg.train.select == "target_dev":
            if type(method).predict is not Method.predict:
                raise ConfigError(f"train.select=target_dev: method {cfg.train.method} predicts its own way at test "
                                  f"time (through a translation or a language token), which selection during "
                                  f"training does not reproduce; use source_dev, last or average")
            if not target_dev_langs(cfg):
                raise ConfigError("train.select=target_dev needs target languages: train.target_dev_langs, or "
                                  "data.eval_langs other than the source language")
        if tokenizer:
            ctx.tokenizer = prepare_tokenizer(zoo.load_tokenizer(zoo.resolve(cfg.model.name)))
        return cls(ctx, method)

    # ---- data ------------------------------------------------------------------------------------------------------
    def train_examples(self) -> list:
        """The method's training examples, deduplicated / subset as configured (all counts go to the report)."""
        d, report = self.cfg.data, self.ctx.report
        rows = self.method.train_examples()
        report["train_read"] = len(rows)
        if d.dedup:
            rows, removed = deduplicate(rows)
            report["train_duplicates_removed"] = removed
        if d.train_subset and d.train_subset < len(rows):
            rows = random.Random(self.cfg.train.seed).sample(rows, d.train_subset)
            report["train_subset"] = d.train_subset
        rows += self.target_shots()
        report["train_used"] = len(rows)
        return rows

    def target_shots(self) -> list:
        """``data.target_shots``: a few labelled target-language examples for training (Lauscher et al. 2020),
        sampled with the run's seed from the language's training set, or its dev set where the dataset has none
        there -- never its test set.  What was taken, and from where, goes to the report."""
        d, report = self.cfg.data, self.ctx.report
        shots = []
        for lang, n in sorted(d.target_shots.items()):
            dataset = get_dataset(d.dataset)
            split = "train" if dataset.train_langs is None or lang in dataset.train_langs else "valid"
            pool = self.ctx.load_split(lang, split)
            files = {e.origin.rsplit(":", 1)[0] for e in pool}
            test_files = {e.origin.rsplit(":", 1)[0] for e in self.ctx.load_split(lang, "test")}
            if files & test_files:  # PAN-X: a target's dev file is its test file here
                raise DataError(f"data.target_shots.{lang}: its {split} set is read from its test file "
                                f"({sorted(files & test_files)[0]}); shots never come from a test set")
            if n > len(pool):
                raise DataError(f"data.target_shots.{lang}={n}: its {split} set has {len(pool)} examples")
            taken = random.Random(f"{self.cfg.train.seed}-{lang}").sample(pool, n)
            shots += taken
            report.setdefault("target_shots", {})[lang] = {"examples": n, "split": split,
                                                           "first": [e.origin for e in taken[:3]]}
        return shots

    def data(self) -> RunData:
        """Training, dev and test data, validated before any training step (a missing or unusable test file stops
        the run here, not after hours of training); the vocabulary trimmed to the ids they use."""
        cfg, ctx, method = self.cfg, self.ctx, self.method
        task, tokenizer, report, d = ctx.task, ctx.tokenizer, ctx.report, cfg.data
        train_rows = self.train_examples()
        labels = ctx.labels = task.label_space(train_rows)
        train, too_long = encode_examples(task, tokenizer, train_rows, labels, d.max_length)
        report["train_too_long_skipped"] = len(too_long)
        report["train_too_long_first"] = too_long[:5]
        if not train:
            raise DataError(f"no training examples left (max_length={d.max_length})")

        def encoded_inputs(examples: list, lang: str) -> list[Encoded]:
            return encode_examples(task, tokenizer, method.eval_inputs(examples, lang, pair_report), labels, None)[0]

        pair_report: dict = {}
        dev_examples = ctx.load_split(d.source_lang, "valid")
        dev = encoded_inputs(dev_examples, d.source_lang)
        target_dev = {}
        if cfg.train.select == "target_dev":  # labelled target-language data chooses the checkpoint: not zero-shot
            for lang in target_dev_langs(cfg):
                examples = ctx.load_split(lang, "valid")
                target_dev[lang] = (examples, encoded_inputs(examples, lang))
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
            id_lists += [ids for group in groups for e in group
                         for ids in ([e.input_ids] + ([e.pair.input_ids] if e.pair is not None else []))]
            trim = VocabTrim.from_ids(id_lists, special_ids(tokenizer))
            for group in groups:
                for e in group:
                    e.input_ids = trim.map_ids(e.input_ids)
                    if e.pair is not None:
                        e.pair.input_ids = trim.map_ids(e.pair.input_ids)
            report["vocab_kept"] = len(trim.kept)
        return RunData(labels, train, dev, dev_examples, test_examples, trim, report, target_dev)

    # ---- model -----------------------------------------------------------------------------------------------------
    def model(self, data: RunData) -> tuple[torch.nn.Module, object]:
        """The task model on the pretrained encoder (trimmed to ``data``'s vocabulary) and the tokenizer."""
        model, tokenizer = build_model(self.ctx, self.method, data.labels, data.trim)
        if self.cfg.train.compile:  # in place: state_dict keys (checkpoints) stay as they are
            if self.cfg.train.static_lengths:  # a graph per static length; CUDA graphs on a GPU (launch-bound steps)
                model.compile(dynamic=False, mode="reduce-overhead" if torch.cuda.is_available() else None)
            else:
                model.compile(dynamic=True)
        return model, tokenizer

    # ---- training --------------------------------------------------------------------------------------------------
    def train(self, data: RunData, model: torch.nn.Module, pad: int, accelerator, resume: bool,
              stop_after: int | None) -> bool:
        """Evaluation on the source dev set, checkpoints, the shared loop and the final choice of ``best/``; whether
        training finished (not stopped by ``stop_after``)."""
        cfg, task, method = self.cfg, self.ctx.task, self.method
        run_dir, source, select = cfg.run_dir, cfg.data.source_lang, self.ctx.select_metric
        lengths = [len(e.input_ids) for e in data.train]

        def score(model, examples: list, items: list) -> dict:
            return task.score(examples, predict(model, task, data.labels, items, pad, cfg.train.eval_batch_size,
                                                accelerator.device, accelerator))

        def evaluate(model) -> tuple[dict, float]:
            dev = score(model, data.dev_examples, data.dev)
            metrics, value = {f"dev_{source}_{k}": v for k, v in dev.items()}, float(dev[select])
            if data.target_dev:  # train.select=target_dev (not zero-shot): the mean over the target dev sets
                target = {lang: score(model, *pair)[select] for lang, pair in data.target_dev.items()}
                metrics |= {f"dev_{lang}_{select}": v for lang, v in target.items()}
                value = metrics["dev_target_mean"] = sum(target.values()) / len(target)
            return metrics, value

        def keep_checkpoint(model, step: int) -> None:
            checkpoint.save_model(model, run_dir / "checkpoints" / f"step-{step}")
            if not cfg.train.keep_checkpoints:  # `average` needs only the last k
                for old in kept_checkpoints(run_dir)[:-cfg.train.average_last]:
                    shutil.rmtree(old)

        t = cfg.train
        hooks = LoopHooks(
            batches=lambda epoch: length_bucketed_batches(lengths, t.batch_size, t.bucket_size, t.seed, epoch),
            make_batch=lambda idx, step: to_device(collate(task, [data.train[i] for i in idx], pad,
                                                           tuple(t.static_lengths)), accelerator.device),
            loss=method.loss, evaluate=evaluate,
            count=lambda idx: (sum(item_tokens(data.train[i]) for i in idx),
                               sum(item_sentences(data.train[i]) for i in idx)),
            after_evaluate=keep_checkpoint if t.select == "average" or t.keep_checkpoints else None)
        settings = LoopSettings(t.max_steps, t.lr, t.weight_decay, t.warmup_ratio, t.grad_clip, t.eval_every,
                                t.patience, schedule=t.schedule)
        summary = run_loop(accelerator, model, settings, hooks, run_dir, resume, stop_after)
        if summary is not None and accelerator.is_main_process:
            summary |= select_final(cfg, model, run_dir, summary)
            (run_dir / "train_summary.json").write_text(json.dumps(summary, indent=1))
        accelerator.wait_for_everyone()
        return summary is not None


def train(cfg: RunConfig, resume: bool = False, stop_after: int | None = None, overwrite: bool = False) -> Path:
    """Train (or resume) the run described by ``cfg``; returns the run directory.

    ``stop_after``: leave the loop after this many optimizer steps as if interrupted (used by tests);
    ``overwrite``: replace an existing run folder of that name, once everything is checked (``xlt.core.run_folder``:
    the old run is kept until this one finishes training)."""
    run_dir = cfg.run_dir
    accelerator = make_accelerator(cfg.train.mixed_precision)
    resume = check_run_dir(run_dir, resume, overwrite, accelerator.is_main_process)
    accelerator.wait_for_everyone()
    threads = configure_threads(cfg.train.threads, accelerator.num_processes)
    set_seed(cfg.train.seed)
    run = Run.from_config(cfg)
    data = run.data()
    model, tokenizer = run.model(data)
    pad = pad_id(tokenizer, data.trim)
    run.method.before_training(data, pad)
    with replacing(run_dir, overwrite, accelerator.is_main_process) as replacement:
        if accelerator.is_main_process:
            run_dir.mkdir(parents=True, exist_ok=True)
            save_config(cfg, run_dir / "config.yaml")
            save_run_meta(run_dir, data.labels, data.trim, dict(data.report, threads=threads))
        accelerator.wait_for_everyone()
        replacement.finished = run.train(data, model, pad, accelerator, resume, stop_after)
    return run_dir


def save_run_meta(run_dir: Path, labels: dict, trim: VocabTrim | None, report: dict) -> None:
    (run_dir / "labels.json").write_text(json.dumps(labels, indent=1, ensure_ascii=False))
    if trim is not None:
        save_file({"kept_ids": torch.tensor(trim.kept, dtype=torch.long)}, str(run_dir / "vocab_trim.safetensors"))
    (run_dir / "data_report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))


def kept_checkpoints(run_dir: Path) -> list[Path]:
    """``RUN_DIR/checkpoints/step-N`` folders, oldest first."""
    return sorted((run_dir / "checkpoints").glob("step-*"), key=lambda p: int(p.name.split("-")[1]))


def average_states(folders: list[Path]) -> dict[str, torch.Tensor]:
    """The uniform average of the floating-point weights saved in ``folders`` (other tensors: the last one's)."""
    states = [load_file(str(f / "model.safetensors")) for f in folders]
    return {k: (torch.stack([s[k] for s in states]).mean(0) if v.is_floating_point() else v)
            for k, v in states[-1].items()}


def select_final(cfg: RunConfig, model, run_dir: Path, summary: dict) -> dict:
    """``train.select`` last / average: write the chosen model over ``best/`` once training is over; returns what
    the train summary records of the choice."""
    t = cfg.train
    if t.select == "last":
        checkpoint.save_model(model, run_dir / "best")
        return {"select": t.select, "selected_steps": [summary["step"]]}
    if t.select == "average":
        folders = kept_checkpoints(run_dir)[-t.average_last:]
        averaged = average_states(folders)
        checkpoint.atomic_save(averaged, run_dir / "best")
        return {"select": t.select, "selected_steps": [int(f.name.split("-")[1]) for f in folders]}
    return {"select": t.select, "selected_steps": [summary["best_step"]]}


def clean_checkpoint(run_dir: Path) -> None:
    """Drop the resumable ``last`` checkpoint (optimizer state doubles the size) once a run is finished."""
    shutil.rmtree(run_dir / "last", ignore_errors=True)
