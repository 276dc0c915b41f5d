"""Evaluate a trained run on the test split of each language and write the report (JSON, markdown, PNG charts)."""
from __future__ import annotations

import json
from pathlib import Path

from xlt.config import RunConfig, apply_overrides, from_dict, load_config, resolve_method_options, to_dict
from xlt.methods import get_method
from xlt.data.datasets import load_split
from xlt.features import encode_examples
from xlt.metrics import score
from xlt.pipeline import load_trained, pad_id
from xlt.predict import predict
from xlt.report import write_report

METRICS = ("intent_acc", "slot_f1", "semantic_acc")


def evaluate_run(run_dir: Path, langs: list[str] | None = None, split: str = "test", test_method: str | None = None,
                 overrides: list[str] | None = None, tag: str = "") -> dict:
    """Score the run's best (source-dev selected) checkpoint on ``split`` of every language; writes
    ``RUN_DIR/results{-tag}.json``, ``.md`` and one PNG per metric.  Returns the results dict.

    ``test_method`` applies another method's test-time procedure (e.g. ``translate_test``) to this run's model, with
    config ``overrides`` such as ``translation.translator=oracle``; target languages then go through it."""
    run_dir = Path(run_dir)
    cfg: RunConfig = load_config(run_dir / "config.yaml", None)
    if test_method or overrides:
        # another method's test-time procedure does not take this method's options
        reset = ["options={}"] if test_method and test_method != cfg.train.method else []
        cfg = resolve_method_options(from_dict(RunConfig, apply_overrides(
            to_dict(cfg), [f"train.method={test_method or cfg.train.method}", *reset, *(overrides or [])]),
            "eval overrides"), "eval overrides")
    method = get_method(cfg.train.method)
    langs = langs or cfg.data.eval_langs
    model, tokenizer, labels = load_trained(run_dir, cfg)
    pad = pad_id(tokenizer, None)
    per_lang, test_time = {}, {}
    for lang in langs:
        rows = load_split(Path(cfg.data.data_dir), cfg.data.dataset, lang, split, cfg.data.orphan_policy).examples
        if method.predict_target is not None and lang != cfg.data.source_lang:
            intents, slots, test_time[lang] = method.predict_target(cfg, model, tokenizer, labels, pad, lang, rows)
        else:
            inputs = rows
            if method.pair_eval_rows is not None:  # paired models: each utterance with its translation
                inputs = method.pair_eval_rows(cfg, rows, lang, test_time.setdefault(lang, {}))
            items, _ = encode_examples(tokenizer, inputs, labels, None)
            intents, slots, _ = predict(model, items, labels, pad, cfg.train.eval_batch_size)
        per_lang[lang] = score([u.intent for u in rows], [u.slots for u in rows], intents, slots)
    source = cfg.data.source_lang
    targets = [lang for lang in langs if lang != source]
    summary = {}
    if targets:
        summary["target_avg"] = {m: sum(per_lang[t][m] for t in targets) / len(targets) for m in METRICS}
        if source in per_lang:
            summary["transfer_gap"] = {m: per_lang[source][m] - summary["target_avg"][m] for m in METRICS}
    train_summary_path = run_dir / "train_summary.json"
    train_summary = json.loads(train_summary_path.read_text()) if train_summary_path.exists() else {}
    data_report = json.loads((run_dir / "data_report.json").read_text())
    results = {
        "model": cfg.model.name, "method": cfg.train.method, "dataset": cfg.data.dataset, "split": split,
        "source_lang": source, "seed": cfg.train.seed, "selection": cfg.selection,
        "selection_detail": f"best {cfg.train.select_metric} on {source} dev, checked every "
                            f"{cfg.train.eval_every} steps",
        "best_step": train_summary.get("best_step"), "steps": train_summary.get("step"),
        "train_examples": data_report.get("train_used"), "train_summary": train_summary,
        "per_language": per_lang, **summary,
    }
    if method.predict_target is not None or method.pair_eval_rows is not None:
        results["test_time"] = {"method": cfg.train.method, "translation": vars(cfg.translation), **test_time}
    write_report(run_dir, results, METRICS, tag)
    return results
