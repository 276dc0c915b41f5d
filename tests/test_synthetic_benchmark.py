"""The synthetic study (benchmarks/studies/synthetic.yaml) on tiny-random: its rows run, and its results carry
gap_closed computed from the zero-shot run of the same seed (translate-test through the exact translator closes the
whole gap); its rows say what the docs say they do."""
import json
import sys
from pathlib import Path

import pytest
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import study  # noqa: E402
import study_results  # noqa: E402

TINY = ["model.name=tiny-random", "train.max_steps=4", "train.eval_every=2", "train.batch_size=8", "train.lr=1e-3",
        "data.train_subset=0", "data.dedup=false"]


def rows() -> dict[str, dict]:
    return {r["name"]: r for r in study.load_study("synthetic")["rows"]}


def config_of(name: str, seed: int = 1):
    from xlt.config import find_config, load_config, load_stage_config

    row = rows()[name]
    overrides = study.resolved_overrides(row, seed, "data")
    return (load_stage_config(find_config(row["stage"]), overrides) if "stage" in row
            else load_config(find_config(row["config"]), overrides))


@pytest.fixture
def bench(tiny_data, xlt_home, tmp_path, monkeypatch):
    monkeypatch.setattr(study, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(study, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(study, "EXTRA", {"config": list(TINY), "stage": []})
    (tmp_path / "results").mkdir()
    return tiny_data, tmp_path


def collect() -> None:
    study.collect(study.load_study("synthetic"), [1])


def run(name: str, data: Path, seed: int = 1) -> Path:
    return study.run_row(rows()[name.format(seed=seed)], seed, str(data))


def test_rows_run_and_have_gap_closed(bench, monkeypatch):
    data, root = bench
    for name in ("synthetic-xsid-zero_shot-seed1", "synthetic-xsid-translate_train-permuted-seed1",
                 "synthetic-xsid-filter-same_order-seed1", "synthetic-xsid-filter_self_teaching-same_order-seed1",
                 "synthetic-xsid-after_unmigrated-same_order-seed1"):
        layers = ["options.local_layers=1", "options.fusion_layers=1"] if "filter" in name else []
        monkeypatch.setitem(study.EXTRA, "config", TINY + layers)  # tiny-random has 2 layers
        study.run_row(rows()[name.replace("-seed1", "-seed{seed}")], 1, str(data))
    collect()
    out = json.loads((root / "results" / "synthetic.json").read_text())
    got = {(r["method"], r.get("variant"), r["lang"]): r for r in out["rows"]}
    assert ("translate_train", "permuted", "syn-en-perm") in got and ("zero_shot", None, "en") in got
    assert got[("translate_train", "permuted", "syn-en-perm")]["steps"] == 4  # the steps the run took (max_steps)
    tt = got[("translate_test", "permuted", "syn-en-perm")]
    # the exact translator: translate-test scores what English scores, so it closes the gap exactly when there is one
    assert tt["intent_acc"] == got[("zero_shot", None, "en")]["intent_acc"]
    assert tt["gap_closed_intent"] in (1.0, None)
    assert got[("zero_shot", "same_order", "syn-en")]["gap_closed_slot"] in (0.0, None)
    assert ("filter_self_teaching", "same_order", "syn-en") in got
    # TreLM's baseline is trained, selected and tested in the synthetic language (a supervised run)
    trained = yaml.safe_load((root / "runs" / "synthetic-xsid-after_unmigrated-same_order-seed1" / "config.yaml")
                             .read_text())
    assert trained["data"]["source_lang"] == "syn-en" and trained["model"]["name"].endswith("+syn-en")
    assert ("trelm_unmigrated", "same_order", "syn-en") in got


def test_a_pretraining_row_and_fine_tuning_on_it(bench, monkeypatch):
    data, root = bench
    (data / "mono" / "en").mkdir(parents=True, exist_ok=True)
    lines = ["set an alarm for 7 am", "remind me to call mom", "play music by queen", "what is the weather"] * 4
    for name in ("bench-a.txt", "bench-b.txt"):
        (data / "mono" / "en" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setitem(study.EXTRA, "stage", [
        "corpus.langs={en: [mono/en/bench-a.txt], syn-en-perm: [mono/en/bench-b.txt]}",
        "model.name=tiny-random", "corpus.heldout_lines=2", "phases.0.steps=1", "phases.0.eval_every=1",
        "phases.1.steps=2", "phases.1.eval_every=2", "phases.0.batch_size=4", "phases.1.batch_size=4",
        "options.eval_sequences=4", "options.pppl_sequences=2"])
    out = run("synthetic-pretrain-mlm-permuted", data)
    assert (out / "model" / "synthetic.json").exists()
    # Artetxe et al.'s variant: the body stays as the head phase left it (frozen), only word embeddings learn
    emb = run("synthetic-pretrain-mlm_embeddings-permuted", data)
    from safetensors.torch import load_file
    head = load_file(str(emb / "phase1-head" / "final" / "model.safetensors"))
    final = load_file(str(emb / "phase2-all" / "final" / "model.safetensors"))
    body = [k for k in head if "layer.0.attention" in k and k in final]
    assert body and all(torch.equal(head[k], final[k]) for k in body)
    words = "encoder.embeddings.word_embeddings.weight"
    assert not torch.equal(head[words], final[words])
    monkeypatch.setitem(study.EXTRA, "config", [o for o in TINY if not o.startswith("model.name")])
    study.run_row(rows()["synthetic-xsid-after_mlm-permuted-seed{seed}"], 1, str(data))
    collect()
    got = json.loads((root / "results" / "synthetic.json").read_text())["rows"]
    assert {(r["method"], r["lang"]) for r in got} >= {("continued_mlm", "syn-en-perm"),
                                                      ("continued_mlm_pretrain", "syn-en-perm")}
    stage_row = next(r for r in got if r["method"] == "continued_mlm_pretrain")  # the budget each phase used
    assert [(p["name"], p["steps"]) for p in stage_row["phases"]] == [("head", 1), ("all", 2)]
    assert all(p["train_seconds"] >= 0 and p["heldout"]["heldout_mlm_loss"] > 0 for p in stage_row["phases"])


def test_trelm_baselines_reuse_the_migrated_vocabulary_and_are_target_trained(monkeypatch, tmp_path):
    from xlt.stages.trelm_base import base_folder

    monkeypatch.setattr(study, "RUNS", tmp_path)
    migrated, scratch = config_of("synthetic-pretrain-trelm-permuted"), config_of("synthetic-pretrain-trelm_scratch-permuted")
    assert scratch.options.init == "scratch" and scratch.options.base_from == str(base_folder(migrated))
    assert scratch.corpus == migrated.corpus and scratch.phases == migrated.phases  # same text, phases and steps
    tuned = config_of("synthetic-xsid-after_trelm_scratch-permuted-seed{seed}")
    # (the name grows "+syn-en": the synthetic vocabulary added to the model it names)
    assert tuned.model.name.startswith(str(tmp_path / "synthetic-pretrain-trelm_scratch-permuted" / "model"))
    assert tuned.data.source_lang == "syn-en-perm" and tuned.data.eval_langs == ["syn-en-perm"]
    # the comparable runs read the same files on both sides, English the even lines, syn-en the odd ones
    cfg = config_of("synthetic-pretrain-trelm_scratch_comparable-same_order")
    assert cfg.corpus.line_selection == {"en": [2, 0], "syn-en": [2, 1]}
    assert cfg.corpus.langs["en"] == cfg.corpus.langs["syn-en"] and len(cfg.corpus.langs["en"]) == 4
    assert cfg.options.base_from == str(tmp_path / "synthetic-pretrain-trelm_bridge_comparable-same_order" / "base")
    assert cfg.options.vocabulary.map_into == "english_fasttext"


def test_every_stage_reads_its_synthetic_language_and_has_a_method_of_its_own():
    stages = [r for r in rows().values() if "stage" in r]
    assert len(stages) == 2 * 27
    for row in stages:
        cfg = config_of(row["name"])
        lang = row["labels"]["lang"]
        assert lang in cfg.corpus.langs or lang in cfg.corpus.parallel, row["name"]
    methods = [(r["labels"]["method"], r["labels"]["variant"]) for r in stages]
    assert len(set(methods)) == len(methods)


def test_a_rebuilt_base_does_not_replace_the_alignment_rows_of_a_finished_stage(tmp_path, monkeypatch):
    """A TreLM base rebuilt only for a baseline that reuses it (no results.json beside it) is not the base the
    committed stage rows came from: its alignment gives no rows; once the stage finishes, its own base's do."""
    monkeypatch.setattr(study, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(study, "RESULTS", tmp_path / "results")
    name = "synthetic-pretrain-trelm_bridge_comparable-same_order"
    base = tmp_path / "runs" / name / "base"
    base.mkdir(parents=True)
    (base / "migration.json").write_text(json.dumps({
        "precision_at_1": {"initialised_rows": {"all": 0.5, "different_strings": 0.5}}, "vocabulary": 10,
        "seconds": 1.0, "test_dictionary": "muse/en-es.5000-6500.txt", "initialising_step": "initialised_rows"}))
    committed = [{"dataset": "muse/en-es.5000-6500.txt", "method": "trelm_alignment", "variant": "same_order",
                  "lang": "syn-en", "seed": 1, "step": "initialised_rows", "run": name, "precision_at_1": 0.9}]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "synthetic.json").write_text(json.dumps({"rows": committed}))
    row = rows()[name]
    assert study_results.result_rows(row, base.parent, 1) == []
    study.collect(study.load_study("synthetic"), [1])
    got = json.loads((tmp_path / "results" / "synthetic.json").read_text())["rows"]
    assert [r["precision_at_1"] for r in got if r["method"] == "trelm_alignment"] == [0.9]
    (base.parent / "results.json").write_text(json.dumps({"phases": [{"name": "mlm", "final_eval": {"loss": 1.5},
                                                                      "summary": {"step": 2, "train_seconds": 3.0}}]}))
    fresh = [(r["method"], r.get("precision_at_1")) for r in study_results.result_rows(row, base.parent, 1)]
    assert fresh == [("trelm_alignment", 0.5), ("trelm_migrated_bridge_comparable_pretrain", None)]


def test_frozen_fine_tuning_after_an_embedding_phase_freezes_the_rows_pre_training_tied(monkeypatch, tmp_path):
    monkeypatch.setattr(study, "RUNS", tmp_path)
    stage = "unicoder_mlm+tlm_xsid_reset_embeddings_1500"
    plain = config_of(f"synthetic-xsid-after_{stage}-same_order-seed{{seed}}")
    frozen = config_of(f"synthetic-xsid-frozen_after_{stage}-same_order-seed{{seed}}")
    assert frozen.model.name == plain.model.name
    assert plain.model.name.startswith(
        str(tmp_path / "synthetic-pretrain-unicoder_mlm-tlm_xsid_reset_embeddings_1500-same_order" / "model"))
    assert frozen.model.freeze_embeddings and not plain.model.freeze_embeddings  # every other row unfreezes them
    assert "synthetic-xsid-frozen_after_mlm-same_order-seed{seed}" not in rows()


def test_the_filter_and_xeroalign_ablations(monkeypatch, tmp_path):
    """k = 1 fused layer (teacher: the k = 1 run of the same order and seed), 1000 steps, XeroAlign's term x30 --
    each on the paired 500-step budget otherwise, the shipped k = 5 and weight 1 in the plain rows."""
    monkeypatch.setattr(study, "RUNS", tmp_path)
    plain = config_of("synthetic-pawsx-filter-same_order-seed{seed}", 2)
    assert (plain.options.local_layers, plain.options.fusion_layers, plain.train.max_steps) == (1, 5, 500)
    student = config_of("synthetic-pawsx-filter_self_teaching_k1-permuted-seed{seed}", 2)
    assert (student.train.method, student.options.fusion_layers, student.train.max_steps) == \
        ("filter_self_teaching", 1, 500)
    assert student.options.teacher == str(tmp_path / "synthetic-pawsx-filter_k1-permuted-seed2")
    long = config_of("synthetic-pawsx-filter_1000-same_order-seed{seed}", 3)
    assert (long.train.method, long.train.max_steps, long.train.eval_every) == ("filter", 1000, 250)
    heavy = config_of("synthetic-pawsx-xeroalign_w30-same_order-seed{seed}")
    assert (heavy.train.method, heavy.train.max_steps, heavy.options.weight) == ("xeroalign", 500, 30.0)
    assert config_of("synthetic-pawsx-xeroalign-same_order-seed{seed}").options.weight == 1.0
    assert "synthetic-pawsx-xeroalign_w30-permuted-seed{seed}" not in rows()
