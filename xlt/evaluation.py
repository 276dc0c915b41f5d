"""Evaluate a trained run on a split of each language and write the report (JSON, markdown, PNG charts), for any
task: the task scores, the method predicts (translate-test and FILTER bring their test-time translation)."""
from __future__ import annotations

import json
from pathlib import Path

from xlt.config import RunConfig, apply_overrides, from_dict, load_config, resolve_method_options, to_dict
from xlt.core.batching import inference_device
from xlt.errors import ConfigError
from xlt.trained import load_trained
from xlt.report import write_report


def eval_config(run_dir: Path, test_method: str | None, overrides: list[str] | None) -> RunConfig:
    cfg: RunConfig = load_config(run_dir / "config.yaml", None)
    if test_method or overrides:
        # another method's test-time procedure does not take this method's options
        reset = ["options={}"] if test_method and test_method != cfg.train.method else []
        cfg = resolve_method_options(from_dict(RunConfig, apply_overrides(
            to_dict(cfg), [f"train.method={test_method or cfg.train.method}", *reset, *(overrides or [])]),
            "eval overrides:"), "eval overrides:")
    return cfg


def selection_detail(cfg: RunConfig, metric: str, steps: list[int] | None) -> str:
    """How ``train.select`` chose the evaluated model, in words (said in every report)."""
    t, source = cfg.train, cfg.data.source_lang
    at = f" (step {', '.join(map(str, steps))})" if steps else ""
    if t.select == "last":
        return f"the last step{at}; {source} dev checked every {t.eval_every} steps for the log only"
    if t.select == "average":
        return (f"uniform average of the weights of the last {t.average_last} evaluated checkpoints{at}, "
                f"{t.eval_every} steps apart")
    if t.select == "target_dev":
        from xlt.finetune import target_dev_langs

        return (f"NOT zero-shot: best mean {metric} on the labelled dev sets of {', '.join(target_dev_langs(cfg))}"
                f"{at}, checked every {t.eval_every} steps (target-language labels chose the checkpoint)")
    return f"best {metric} on {source} dev{at}, checked every {t.eval_every} steps"


def alignment_keys(report, where: str = "") -> dict[str, str]:
    """{place in the data report: alignment cache key} for every word alignment the run's data went through."""
    found: dict[str, str] = {}
    if isinstance(report, dict):
        if isinstance(report.get("cache_key"), str):
            found[where or "."] = report["cache_key"]
        for k, v in report.items():
            found |= alignment_keys(v, f"{where}.{k}" if where else str(k))
    return found


def evaluate_run(run_dir: Path, langs: list[str] | None = None, split: str = "test", test_method: str | None = None,
                 overrides: list[str] | None = None, tag: str = "", accelerator=None) -> dict:
    """Score the run's best (source-dev selected) checkpoint on ``split`` of every language; writes
    ``RUN_DIR/results{-tag}.json``, ``.md`` and one PNG per metric.  Returns the results dict.

    ``test_method`` applies another method's test-time procedure (e.g. ``translate_test``) to this run's model, with
    config ``overrides`` such as ``translation.translator=oracle``; target languages then go through it.
    ``accelerator`` (several processes): the model's predictions are sharded; methods that translate at test time
    run on the main process alone (their translations and alignments must not differ between processes)."""
    run_dir = Path(run_dir)
    if not (run_dir / "config.yaml").exists():
        raise ConfigError(f"{run_dir}: not a run folder (no config.yaml)")
    cfg = eval_config(run_dir, test_method, overrides)
    run = load_trained(run_dir, cfg)
    # one process predicts on the GPU when there is one (seen on an H200: on 2 CPU threads, XNLI's 15 test sets
    # took longer than the fine-tuning on the GPU); several processes: each on its own device
    run.model.to(accelerator.device if accelerator is not None else inference_device())
    ctx, method, task = run.ctx, run.method, run.ctx.task
    method.check()
    shard = accelerator
    if accelerator is not None and accelerator.num_processes > 1 and method.uses_translation_at_test_time:
        if not accelerator.is_main_process:
            accelerator.wait_for_everyone()
            return {}
        shard = None
    langs = langs or cfg.data.eval_langs
    per_lang, test_time, repairs = {}, {}, {}
    for lang in langs:
        read_before = len(ctx.report.get("files", []))
        examples = ctx.load_split(lang, split)
        repaired = {k: v for f in ctx.report["files"][read_before:] for k, v in f["repaired"].items()}
        if repaired:  # the rules of xlt.data.bio / readers changed the scored data: said in every report
            repairs[lang] = repaired
        split_before = run.split_inputs
        preds = method.predict(run, examples, lang, test_time.setdefault(lang, {}), shard)
        per_lang[lang] = task.score(examples, preds)
        if run.split_inputs > split_before:  # over-long inputs predicted in pieces (never truncated)
            per_lang[lang]["inputs_split"] = run.split_inputs - split_before
    source = cfg.data.source_lang
    targets = [lang for lang in langs if lang != source]
    summary = {}
    if targets:
        summary["target_avg"] = {m: sum(per_lang[t][m] for t in targets) / len(targets) for m in task.metrics}
        if source in per_lang:
            summary["transfer_gap"] = {m: per_lang[source][m] - summary["target_avg"][m] for m in task.metrics}
    train_summary_path = run_dir / "train_summary.json"
    train_summary = json.loads(train_summary_path.read_text()) if train_summary_path.exists() else {}
    data_report = json.loads((run_dir / "data_report.json").read_text())
    results = {
        "model": cfg.model.name, "task": task.name, "method": cfg.train.method, "dataset": cfg.data.dataset,
        "split": split, "source_lang": source, "seed": cfg.train.seed,
        "selection": cfg.train.select.replace("_", "-"), "zero_shot_selection": cfg.train.select != "target_dev",
        "selection_detail": selection_detail(cfg, ctx.select_metric, train_summary.get("selected_steps")),
        "metrics": list(task.metrics), "dataset_notes": ctx.dataset.notes,
        "best_step": train_summary.get("best_step"), "steps": train_summary.get("step"),
        "train_examples": data_report.get("train_used"), "train_summary": train_summary,
        **({"target_shots": data_report["target_shots"]} if data_report.get("target_shots") else {}),
        "per_language": per_lang, **summary,
    }
    if repairs:
        results["data_repairs"] = repairs
    keys = alignment_keys(data_report)
    if keys:  # eflomal samples: these keys name the cached alignments the training data was labelled with
        results["alignment_cache_keys"] = keys
    test_time = {k: v for k, v in test_time.items() if v}
    if method.uses_translation_at_test_time or test_time:
        results["test_time"] = {"method": cfg.train.method, "translation": vars(cfg.translation), **test_time}
    if accelerator is None or accelerator.is_main_process:
        write_report(run_dir, results, task.metrics, tag)
    if accelerator is not None:
        accelerator.wait_for_everyone()
    return results
