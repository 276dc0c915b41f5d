"""benchmarks/synthetic.py on tiny-random: its jobs run, and its rows carry gap_closed computed from the zero-shot
run of the same seed (translate-test through the exact translator closes the whole gap)."""
import json
import sys
from pathlib import Path

import pytest
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import synthetic  # noqa: E402


@pytest.fixture
def bench(tiny_data, xlt_home, tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(synthetic, "TEST_OVERRIDES", [
        "model.name=tiny-random", "train.max_steps=4", "train.eval_every=2", "train.batch_size=8",
        "train.lr=1e-3", "data.train_subset=0", "data.dedup=false"])
    (tmp_path / "results").mkdir()
    return tiny_data, tmp_path


def test_jobs_run_and_rows_have_gap_closed(bench, monkeypatch):
    data, root = bench
    tiny = list(synthetic.TEST_OVERRIDES)
    for job in ("xsid-zero_shot", "xsid-translate_train-permuted", "xsid-filter-same_order",
                "xsid-filter_self_teaching-same_order", "xsid-after_unmigrated-same_order"):
        layers = ["options.local_layers=1", "options.fusion_layers=1"] if "filter" in job else []
        monkeypatch.setattr(synthetic, "TEST_OVERRIDES", tiny + layers)  # tiny-random has 2 layers
        synthetic.run_job(job, 1, str(data))
    synthetic.collect(root / "runs", root / "results")
    out = json.loads((root / "results" / "synthetic.json").read_text())
    rows = {(r["method"], r["variant"], r["lang"]): r for r in out["rows"]}
    assert ("translate_train", "permuted", "syn-en-perm") in rows and ("zero_shot", None, "en") in rows
    assert rows[("translate_train", "permuted", "syn-en-perm")]["steps"] == 4  # the steps the run took (max_steps)
    tt = rows[("translate_test", "permuted", "syn-en-perm")]
    # the exact translator: translate-test scores what English scores, so it closes the gap exactly when there is one
    assert tt["intent_acc"] == rows[("zero_shot", None, "en")]["intent_acc"]
    assert tt["gap_closed_intent"] in (1.0, None)
    assert rows[("zero_shot", "same_order", "syn-en")]["gap_closed_slot"] in (0.0, None)
    assert "filter_self_teaching" in (root / "results" / "synthetic.md").read_text()
    # TreLM's baseline is trained, selected and tested in the synthetic language (a supervised run)
    trained = yaml.safe_load((root / "runs" / "synthetic-xsid-after_unmigrated-same_order-seed1" / "config.yaml")
                             .read_text())
    assert trained["data"]["source_lang"] == "syn-en" and trained["model"]["name"].endswith("+syn-en")
    assert ("trelm_unmigrated", "same_order", "syn-en") in rows


def test_a_pretraining_job_and_fine_tuning_on_it(bench, monkeypatch):
    data, root = bench
    (data / "mono" / "en").mkdir(parents=True, exist_ok=True)
    lines = ["set an alarm for 7 am", "remind me to call mom", "play music by queen", "what is the weather"] * 4
    for name in ("bench-a.txt", "bench-b.txt"):
        (data / "mono" / "en" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(synthetic, "EN_FILES", ["mono/en/bench-a.txt"])
    monkeypatch.setattr(synthetic, "SYN_FILES", ["mono/en/bench-b.txt"])
    monkeypatch.setattr(synthetic, "STAGE_TEST_OVERRIDES", [
        "model.name=tiny-random", "corpus.heldout_lines=2", "phases.0.steps=1", "phases.0.eval_every=1",
        "phases.1.steps=2", "phases.1.eval_every=2", "phases.0.batch_size=4", "phases.1.batch_size=4",
        "options.eval_sequences=4", "options.pppl_sequences=2"])
    out = synthetic.run_job("pretrain-mlm-permuted", 1, str(data))
    assert (out / "model" / "synthetic.json").exists()
    # Artetxe et al.'s variant: the body stays as the head phase left it (frozen), only word embeddings learn
    emb = synthetic.run_job("pretrain-mlm_embeddings-permuted", 1, str(data))
    from safetensors.torch import load_file
    head = load_file(str(emb / "phase1-head" / "final" / "model.safetensors"))
    final = load_file(str(emb / "phase2-all" / "final" / "model.safetensors"))
    body = [k for k in head if "layer.0.attention" in k and k in final]
    assert body and all(torch.equal(head[k], final[k]) for k in body)
    words = "encoder.embeddings.word_embeddings.weight"
    assert not torch.equal(head[words], final[words])
    tiny = [o for o in synthetic.TEST_OVERRIDES if not o.startswith("model.name")]
    monkeypatch.setattr(synthetic, "TEST_OVERRIDES", tiny)  # the pre-trained encoder is the model
    synthetic.run_job("xsid-after_mlm-permuted", 1, str(data))
    synthetic.collect(root / "runs", root / "results")
    rows = json.loads((root / "results" / "synthetic.json").read_text())["rows"]
    assert {(r["method"], r["lang"]) for r in rows} >= {("continued_mlm", "syn-en-perm"),
                                                       ("continued_mlm_pretrain", "syn-en-perm")}
    stage_row = next(r for r in rows if r["method"] == "continued_mlm_pretrain")  # the budget each phase used
    assert [(p["name"], p["steps"]) for p in stage_row["phases"]] == [("head", 1), ("all", 2)]
    assert all(p["train_seconds"] >= 0 and p["heldout"]["heldout_mlm_loss"] > 0 for p in stage_row["phases"])


def test_trelm_from_scratch_shares_the_migrated_runs_vocabulary_and_is_target_trained(monkeypatch, tmp_path):
    monkeypatch.setattr(synthetic, "RUNS", tmp_path)
    overrides = synthetic.STAGES["trelm_scratch"][1]("syn-en-perm")
    assert "options.init=scratch" in overrides
    # the migrated run's base folder (RUN_DIR/base), where its stage builds vocabulary and rows
    from xlt.config import find_config, load_stage_config
    from xlt.stages.trelm_base import base_folder

    migrated = load_stage_config(find_config("pretrain-trelm-es"), [
        *synthetic.STAGES["trelm"][1]("syn-en-perm"), f"output_dir={tmp_path}",
        "name=synthetic-pretrain-trelm-permuted"])
    assert f"options.base_from={base_folder(migrated)}" in overrides
    assert set(synthetic.STAGES["trelm"][1]("syn-en-perm")) < set(overrides)  # same text, phases and steps
    folder = synthetic.stage_dir("trelm_scratch", "permuted")
    folder.mkdir()
    (folder / "results.json").write_text("{}")
    config, extra = synthetic.spec("xsid-after_trelm_scratch-permuted", 1)
    assert f"model.name={folder / 'model'}" in extra and "data.source_lang=syn-en-perm" in extra


def test_every_stage_loads_as_a_config_and_the_comparable_text_splits_one_text(monkeypatch, tmp_path):
    """Each stage's overrides make a valid config of its shipped stage (unknown keys or bad values would be errors);
    the comparable TreLM runs read the same files on both sides, English the even lines, the synthetic language the
    odd ones, and their from-scratch baseline reuses their vocabulary."""
    from xlt.config import find_config, load_stage_config

    monkeypatch.setattr(synthetic, "RUNS", tmp_path)
    # each stage's rows get a method name of their own
    assert set(synthetic.STAGES) <= set(synthetic.STAGE_METHOD)
    assert len(set(synthetic.STAGE_METHOD.values())) == len(synthetic.STAGE_METHOD)
    for stage, (config, overrides) in synthetic.STAGES.items():
        for lang in synthetic.VARIANTS.values():
            cfg = load_stage_config(find_config(config), overrides(lang))
            assert lang in cfg.corpus.langs or lang in cfg.corpus.parallel, stage
    cfg = load_stage_config(find_config("pretrain-trelm-es"),
                            synthetic.STAGES["trelm_scratch_comparable"][1]("syn-en"))
    assert cfg.corpus.line_selection == {"en": [2, 0], "syn-en": [2, 1]}
    assert cfg.corpus.langs["en"] == cfg.corpus.langs["syn-en"] == synthetic.COMPARABLE
    assert cfg.options.base_from == str(tmp_path / "synthetic-pretrain-trelm_bridge_comparable-same_order" / "base")
    assert cfg.options.vocabulary.map_into == "english_fasttext"


def test_a_rebuilt_base_does_not_replace_the_alignment_row_of_a_finished_stage(tmp_path, monkeypatch):
    """A TreLM base rebuilt only for a baseline that reuses it (no results.json beside it) reports its alignment when
    the stage has no row yet, and leaves the committed row alone when the stage was trained from another base."""
    monkeypatch.setattr(synthetic, "RUNS", tmp_path / "runs")
    base = synthetic.stage_dir("trelm_bridge_comparable", "same_order") / "base"
    base.mkdir(parents=True)
    (base / "migration.json").write_text(json.dumps({"precision_at_1": {"initialised_rows": {"all": 0.5}},
                                                     "vocabulary": 10, "seconds": 1.0}))
    method = "trelm_migrated_bridge_comparable"
    committed = [{"dataset": "pretraining", "method": f"{method}_{kind}", "variant": "same_order", "lang": "syn-en",
                  "seed": 1, "precision_at_1": 0.9} for kind in ("alignment", "pretrain")]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "synthetic.json").write_text(json.dumps({"rows": committed}))
    [row] = synthetic.stage_rows(tmp_path / "runs", "trelm_bridge_comparable", "same_order")
    assert row["precision_at_1"] == 0.5  # an align-only job: its row as soon as the base is built
    synthetic.collect(tmp_path / "runs", tmp_path / "results")
    rows = json.loads((tmp_path / "results" / "synthetic.json").read_text())["rows"]
    assert [r["precision_at_1"] for r in rows if r["method"] == f"{method}_alignment"] == [0.9]


def test_frozen_fine_tuning_after_an_embedding_phase_freezes_the_rows_pre_training_tied(monkeypatch, tmp_path):
    monkeypatch.setattr(synthetic, "RUNS", tmp_path)
    stage = "unicoder_mlm+tlm_xsid_reset_embeddings_1500"
    assert stage in synthetic.FROZEN_AFTER and "mlm" not in synthetic.FROZEN_AFTER
    assert f"xsid-frozen_after_{stage}-same_order" in synthetic.jobs()
    folder = synthetic.stage_dir(stage, "same_order")
    folder.mkdir()
    (folder / "results.json").write_text("{}")
    _, plain = synthetic.spec(f"xsid-after_{stage}-same_order", 1)
    _, frozen = synthetic.spec(f"xsid-frozen_after_{stage}-same_order", 1)
    assert f"model.name={folder / 'model'}" in frozen
    # COMMON unfreezes them for every row; the later override wins
    assert frozen.index("model.freeze_embeddings=true") > frozen.index("model.freeze_embeddings=false")
    assert "model.freeze_embeddings=true" not in plain


def test_the_k1_filter_ablation_fuses_one_layer_and_teaches_from_the_k1_run(monkeypatch, tmp_path):
    monkeypatch.setattr(synthetic, "RUNS", tmp_path)
    from xlt.config import find_config, load_config

    assert {"pawsx-filter_k1-same_order", "pawsx-filter_self_teaching_k1-permuted"} <= set(synthetic.jobs())
    _, plain = synthetic.spec("pawsx-filter-same_order", 2)
    assert not any(o.startswith("options.fusion_layers") for o in plain)  # the shipped k = 5
    for job, method in (("pawsx-filter_k1-same_order", "filter"),
                        ("pawsx-filter_self_teaching_k1-permuted", "filter_self_teaching")):
        config, extra = synthetic.spec(job, 2)
        cfg = load_config(find_config(config), [f"output_dir={tmp_path}", *extra])
        assert cfg.train.method == method and cfg.train.max_steps == 500
        assert (cfg.options.local_layers, cfg.options.fusion_layers) == (1, 1)
    teacher = tmp_path / "synthetic-pawsx-filter_k1-permuted-seed2"
    assert cfg.options.teacher == str(teacher)


def test_the_1000_step_filter_row_overrides_the_paired_500_steps(monkeypatch, tmp_path):
    monkeypatch.setattr(synthetic, "RUNS", tmp_path)
    from xlt.config import find_config, load_config

    assert "pawsx-filter_1000-same_order" in synthetic.jobs()
    config, extra = synthetic.spec("pawsx-filter_1000-same_order", 3)
    cfg = load_config(find_config(config), [f"output_dir={tmp_path}", *extra])
    assert (cfg.train.method, cfg.train.max_steps, cfg.train.eval_every) == ("filter", 1000, 250)
    assert (cfg.options.local_layers, cfg.options.fusion_layers) == (1, 5)  # the shipped k = 5


def test_the_heavy_xeroalign_row_weights_the_alignment_30x_at_the_paired_budget(monkeypatch, tmp_path):
    monkeypatch.setattr(synthetic, "RUNS", tmp_path)
    from xlt.config import find_config, load_config

    assert "pawsx-xeroalign_w30-same_order" in synthetic.jobs()
    assert "pawsx-xeroalign_w30-permuted" not in synthetic.jobs()
    config, extra = synthetic.spec("pawsx-xeroalign_w30-same_order", 1)
    cfg = load_config(find_config(config), [f"output_dir={tmp_path}", *extra])
    assert (cfg.train.method, cfg.train.max_steps, cfg.options.weight) == ("xeroalign", 500, 30.0)
    plain = load_config(find_config(config), [f"output_dir={tmp_path}", *synthetic.spec("pawsx-xeroalign-same_order",
                                                                                          1)[1]])
    assert plain.options.weight == 1.0  # the paper's weight stays the default row's
