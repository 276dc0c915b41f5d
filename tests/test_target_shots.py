"""data.target_shots: a few labelled target examples join training (Lauscher et al. 2020), sampled with the run's seed
from the language's training set, or its dev set where the dataset has none -- never the test set -- and every report
says the run is not zero-shot."""
import json

import pytest

from tests.conftest import setup_run

COMMON = ["train.max_steps=4", "train.eval_every=2"]


def test_shots_come_from_the_dev_set_with_the_seed_and_every_report_says_so(tiny_cfg):
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train

    ctx, _, data, _, _ = setup_run(tiny_cfg(*COMMON, "data.target_shots={de: 2, ja: 1}", "name=shots-a"))
    shots = ctx.report["target_shots"]
    assert shots["de"]["examples"] == 2 and shots["de"]["split"] == "valid" and shots["ja"]["examples"] == 1
    assert all(".valid.conll:" in origin for s in shots.values() for origin in s["first"])  # never test
    assert len(data.train) == 40 + 3  # the English training set and the three shots
    again, _, _, _, _ = setup_run(tiny_cfg(*COMMON, "data.target_shots={de: 2, ja: 1}", "name=shots-b"))
    other, _, _, _, _ = setup_run(tiny_cfg(*COMMON, "data.target_shots={de: 2, ja: 1}", "train.seed=7",
                                           "name=shots-c"))
    assert again.report["target_shots"] == shots  # the same seed, the same examples
    assert all(len(s["first"]) == len(shots[lang]["first"]) for lang, s in other.report["target_shots"].items())
    run = train(tiny_cfg(*COMMON, "data.target_shots={de: 2}", "name=shots-run"))
    results = evaluate_run(run)
    assert results["target_shots"]["de"]["examples"] == 2
    assert "NOT zero-shot: labelled target examples in training" in (run / "results.md").read_text()
    assert json.loads((run / "data_report.json").read_text())["target_shots"]["de"]["split"] == "valid"


@pytest.mark.parametrize("overrides,message", [
    (["data.target_shots={en: 2}"], "source language"),
    (["data.target_shots={de: 999}"], "its valid set has 2 examples"),
    (["data.target_shots={de: -1}"], "data.target_shots"),
    (["data.target_shots={de: 2}", "train.select=target_dev", "train.target_dev_langs=[de]"], "same language"),
    (["data.target_shots={de: 2}", "train.method=xeroalign", "translation.translator=identity",
      "translation.languages=[de]"], "paired or generated inputs"),
])
def test_shots_that_cannot_be_taken_are_refused_before_training(tiny_cfg, overrides, message):
    from xlt.errors import XltError
    from xlt.finetune import train

    with pytest.raises(XltError, match=message):
        train(tiny_cfg(*COMMON, *overrides, "name=refused"))


def test_no_shots_from_a_dev_file_that_is_the_test_file(tiny_data, xlt_home, tmp_path):
    """PAN-X here: a target language's dev file is its test file, so it has no shots to give."""
    from xlt.config import find_config, load_config
    from xlt.errors import DataError
    from xlt.finetune import train

    cfg = load_config(find_config("tiny"), [f"data.data_dir={tiny_data}", f"output_dir={tmp_path}", "name=panx",
                                            "data.dataset=panx", "data.eval_langs=[en,de]", "data.target_shots={de: 1}",
                                            *COMMON])
    with pytest.raises(DataError, match="shots never come from a test set"):
        train(cfg)
