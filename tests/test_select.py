"""``train.select``: which model a run keeps (issue 48).  source_dev (default), last, average of the last k
evaluated checkpoints, target_dev (labelled target-language dev data: never zero-shot, and every report says so)."""
import json

import pytest
import torch
from safetensors.torch import load_file

COMMON = ("train.max_steps=6", "train.eval_every=2")


def weights(folder) -> dict:
    return load_file(str(folder / "model.safetensors"))


def test_last_keeps_the_final_step(tiny_cfg):
    from xlt.finetune import train

    run = train(tiny_cfg(*COMMON, "train.select=last", "train.keep_checkpoints=true", "name=last"))
    final, best = weights(run / "checkpoints" / "step-6"), weights(run / "best")
    assert all(torch.equal(final[k], best[k]) for k in final)
    summary = json.loads((run / "train_summary.json").read_text())
    assert summary["select"] == "last" and summary["selected_steps"] == [6]


def test_average_is_the_mean_of_the_last_k_checkpoints(tiny_cfg):
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train

    kept = train(tiny_cfg(*COMMON, "train.keep_checkpoints=true", "name=all"))
    run = train(tiny_cfg(*COMMON, "train.select=average", "train.average_last=2", "name=avg"))
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step-4", "step-6"]  # only the last k kept
    a, b, best = weights(kept / "checkpoints" / "step-4"), weights(kept / "checkpoints" / "step-6"), weights(run / "best")
    moved = [k for k in best if best[k].is_floating_point() and not torch.equal(a[k], b[k])]
    assert moved and all(torch.allclose(best[k], (a[k] + b[k]) / 2, atol=1e-6) for k in moved)
    results = evaluate_run(run)
    assert results["selection"] == "average" and "last 2 evaluated checkpoints (step 4, 6)" in results[
        "selection_detail"]


def test_target_dev_selects_on_target_labels_and_says_it_is_not_zero_shot(tiny_cfg):
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train

    run = train(tiny_cfg(*COMMON, "train.select=target_dev", "train.target_dev_langs=[de,ja]", "name=oracle"))
    logged = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert all({"dev_de_intent_slot_mean", "dev_ja_intent_slot_mean", "dev_target_mean"} <= set(r) for r in logged)
    assert all(r["selection_value"] == r["dev_target_mean"] for r in logged)
    results = evaluate_run(run)
    assert results["zero_shot_selection"] is False and results["selection"] == "target-dev"
    assert "NOT zero-shot" in (run / "results.md").read_text()


def test_target_dev_is_refused_where_selection_cannot_reproduce_test_time(tiny_cfg):
    from xlt.errors import ConfigError
    from xlt.finetune import train

    with pytest.raises(ConfigError, match="predicts its own way at test time"):
        train(tiny_cfg(*COMMON, "train.select=target_dev", "train.method=translate_test",
                       "translation.translator=identity", "translation.languages=[de]", "name=tt"))


def test_source_dev_is_the_default_and_zero_shot(tiny_cfg):
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train

    results = evaluate_run(train(tiny_cfg(*COMMON, "name=default")))
    assert results["selection"] == "source-dev" and results["zero_shot_selection"] is True
