"""Every declared study (benchmarks/studies/*.yaml) is well formed: its rows name shipped configs or stages whose
overrides load (unknown keys, bad values and references to rows that do not exist fail here, not hours into a
queue), and the runner's results rows carry the labels the docs tables select on."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
STUDIES = sorted((ROOT / "benchmarks" / "studies").glob("*.yaml"))


@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_every_row_of_a_study_loads_as_a_config(path):
    import re

    import study
    from xlt.config import find_config, load_config, load_stage_config

    spec = study.load_study(path.stem)
    names = {r["name"] for r in spec["rows"]}
    for row in spec["rows"]:
        assert sum(k in row for k in ("stage", "config", "call")) == 1, row["name"]
        if "call" in row:
            continue
        for ref in re.findall(r"\{run:((?:[^{}]|\{seed\})+)\}", " ".join(row.get("overrides", []))):
            assert ref in names, f"{row['name']}: {{run:{ref}}} is no row of {path.name}"
        for seed in study.row_seeds(row, [1]):
            overrides = study.resolved_overrides(row, seed, str(ROOT / "tests"))
            cfg = (load_stage_config(find_config(row["stage"]), overrides) if "stage" in row else
                   load_config(find_config(row["config"]), overrides))
            assert cfg.run_dir.name == row["name"].format(seed=seed)


def test_results_rows_carry_the_row_labels(tmp_path, monkeypatch):
    import study

    run = tmp_path / "x-seed2"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({
        "method": "zero_shot", "task": "intent_slot", "dataset": "xsid", "best_step": 10,
        "train_summary": {"step": 10, "train_seconds": 1.0, "cpu": "test"},
        "per_language": {"en": {"intent_acc": 0.5, "slot_f1": 0.25, "n": 4}, "de": {"intent_acc": 0.1, "n": 4}}}))
    monkeypatch.setattr(study, "RUNS", tmp_path)
    rows = study.result_rows({"name": "x-seed{seed}", "config": "xsid-zero-shot", "langs": ["de"],
                              "labels": {"deviation": "d", "variant": "after"}}, 2)
    assert rows == [{"method": "zero_shot", "task": "intent_slot", "dataset": "xsid", "deviation": "d",
                     "variant": "after", "run": "x-seed2", "seed": 2, "lang": "de", "intent_acc": 0.1, "n_test": 4,
                     "train_sentences": None, "steps": 10, "best_step": 10, "train_seconds": 1.0,
                     "tokens_per_second": None, "peak_rss_mb": None, "cpu": "test"}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        {"step": 5, "ratio": 0.123456}, {"step": 10, "loss": 1.0}, {"step": 15, "ratio": 2.0})))
    logged = study.result_rows({"name": "x-seed{seed}", "config": "xsid-zero-shot", "langs": ["de"],
                                "train_metrics": ["ratio", "absent"]}, 2)[0]
    assert (logged["ratio_first_window"], logged["ratio_last_window"]) == (0.1235, 2.0)
    assert not any(k.startswith("absent") for k in logged)
    (run / "results.json").write_text(json.dumps({**json.loads((run / "results.json").read_text()),
                                                  "selection_detail": "the last step"}))
    fields = study.result_rows({"name": "x-seed{seed}", "config": "xsid-zero-shot", "langs": ["de"],
                                "fields": ["selection_detail", "train_summary.cpu", "train_summary.absent"]}, 2)[0]
    assert (fields["selection_detail"], fields["cpu"], fields["absent"]) == ("the last step", "test", None)


def test_rows_go_to_their_results_files_and_a_file_without_runs_stays(tmp_path, monkeypatch):
    """A row's ``results`` names its own file (a variant's); a file none of whose runs is here is not rewritten; a
    row that ``requires: cuda`` is not run on a machine without one; ``{run:NAME-seed{seed}}`` is that seed's run."""
    import study

    runs, results = tmp_path / "runs", tmp_path / "results"
    runs.mkdir(), results.mkdir()
    monkeypatch.setattr(study, "RUNS", runs)
    monkeypatch.setattr(study, "RESULTS", results)
    (results / "b.json").write_text('{"rows": [], "notes": "committed"}')
    run = runs / "a-seed1"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({
        "method": "zero_shot", "task": "intent_slot", "dataset": "xsid", "best_step": 10,
        "train_summary": {"step": 10, "train_seconds": 1.0, "cpu": "test", "threads": 2, "device": "cpu"},
        "per_language": {"en": {"intent_acc": 0.5, "n": 4}}}))
    (run / "train_summary.json").write_text(json.dumps({"cpu": "test", "threads": 2, "device": "cpu"}))
    spec = {"name": "a", "rows": [{"name": "a-seed{seed}", "config": "xsid-zero-shot"},
                                  {"name": "b-seed{seed}", "config": "xsid-zero-shot", "results": "b",
                                   "requires": "cuda",
                                   "overrides": ["options.teacher={run:a-seed{seed}}"]}]}
    assert study.collect(spec, [1]) == [results / "a.json"]
    written = json.loads((results / "a.json").read_text())
    assert [r["run"] for r in written["rows"]] == ["a-seed1"] and written["machine"] == "test, 2 CPU threads, device cpu"
    assert json.loads((results / "b.json").read_text())["notes"] == "committed"
    assert f"options.teacher={runs / 'a-seed1'}" in study.resolved_overrides(spec["rows"][1], 1, "data")
    import torch

    assert study.can_run(spec["rows"][1]) == torch.cuda.is_available()
    from xlt.core.precision import resolve_precision

    assert study.can_run({"requires": "native_bf16"}) == (resolve_precision("auto") == "bf16")


def test_manual_rows_run_only_when_named_and_unknown_names_are_refused():
    import study

    spec = {"name": "s", "rows": [{"name": "a-seed{seed}"}, {"name": "b", "manual": True}, {"name": "c"}]}
    assert [r["name"] for r in study.chosen_rows(spec, None)] == ["a-seed{seed}", "c"]
    assert [r["name"] for r in study.chosen_rows(spec, ["b", "a"])] == ["b", "a-seed{seed}"]
    with pytest.raises(SystemExit, match="no row"):
        study.chosen_rows(spec, ["d"])


def test_rows_expand_per_variant_and_extend_another_row():
    spec = {"expand": {"variant": {"x": {"lang": "lx"}, "y": {"lang": "ly"}}},
            "rows": [{"name": "base-{variant}", "each": "variant", "config": "c", "overrides": [["a={lang}"], "b=1"]},
                     {"name": "more-{variant}", "each": {"variant": ["y"]}, "extends": "base-{variant}",
                      "overrides": ["b=2"], "labels": {"v": "{variant}"}}]}
    import study_rows

    rows = study_rows.expanded(spec)
    assert [(r["name"], r["overrides"]) for r in rows] == [("base-x", ["a=lx", "b=1"]), ("base-y", ["a=ly", "b=1"]),
                                                           ("more-y", ["a=ly", "b=1", "b=2"])]
    assert rows[2]["config"] == "c" and rows[2]["labels"] == {"v": "y"}


def test_a_pretraining_gives_a_row_per_phase_and_its_extracted_rows(tmp_path, monkeypatch):
    """``phases: each`` (one row per phase, ``{phase}`` in a label), ``extract`` (a TreLM base's alignment table),
    ``lang_sets`` on fine-tuning rows only, ``rows_from`` of a probe, and the study's labels under a row's own."""
    import study
    import study_results

    monkeypatch.setattr(study, "RUNS", tmp_path)
    run = tmp_path / "pre"
    (run / "base").mkdir(parents=True)
    phase = lambda name, step: {"name": name, "final_eval": {"heldout_loss": 1.23456, "heldout_n": 7, "flag": True},  # noqa: E731
                                "parameters": {"trainable": 10},
                                "summary": {"step": step, "train_seconds": 2.0, "tokens_per_second": 5.0,
                                            "peak_rss_mb": 9.4, "train_sentences": 3, "train_tokens": 30}}
    (run / "results.json").write_text(json.dumps({"phases": [phase("head", 3), phase("all", 5)]}))
    (run / "base" / "migration.json").write_text(json.dumps({
        "test_dictionary": "muse/x.txt", "initialising_step": "identical_strings", "vocabulary": 50, "seconds": 1.0,
        "precision_at_1": {"identity": {"all": 0.0, "different_strings": 0.0},
                           "identical_strings": {"all": 0.5, "different_strings": None}}}))
    spec = {"labels": {"method": "target_trained", "regime": "r"}, "lang_sets": {"seen": ["de"]}}
    row = {"name": "pre", "stage": "pretrain-trelm-es", "phases": "each", "extract": "trelm_alignment",
           "labels": {"method": "trelm_pretrain", "lang": "es", "variant": "after_{phase}"}}
    rows = study.result_rows(row, 1, spec)
    aligned, pre = rows[:2], rows[2:]
    assert [(r["method"], r["step"], r["initialises_embeddings"], r["dataset"]) for r in aligned] == [
        ("trelm_alignment", "identity", False, "muse/x.txt"), ("trelm_alignment", "identical_strings", True, "muse/x.txt")]
    assert [(r["method"], r["variant"], r["phase"], r["steps"], r["heldout_loss"], r["heldout_n"], r["peak_rss_mb"])
            for r in pre] == [("trelm_pretrain", "after_head", "head", 3, 1.2346, 7, 9),
                              ("trelm_pretrain", "after_all", "all", 5, 1.2346, 7, 9)]
    assert "flag" not in pre[0] and "seen" not in pre[0] and pre[0]["regime"] == "r"
    last = study.result_rows({**row, "phases": None, "extract": None}, 1, spec)
    assert len(last) == 1 and last[0]["steps"] == 8 and last[0]["heldout_loss"] == 1.2346

    tuned = tmp_path / "ft-seed1"
    tuned.mkdir()
    (tuned / "results.json").write_text(json.dumps({
        "method": "zero_shot", "task": "intent_slot", "dataset": "mtod", "best_step": 1,
        "train_summary": {"step": 1, "train_seconds": 1.0}, "per_language": {"de": {"intent_acc": 1.0, "n": 1},
                                                                            "ja": {"intent_acc": 0.0, "n": 1}}}))
    got = study.result_rows({"name": "ft-seed{seed}", "config": "mtod-target-trained-es"}, 1, spec)
    assert [(r["method"], r["lang"], r["seen"]) for r in got] == [("target_trained", "de", True),
                                                                 ("target_trained", "ja", False)]
    (tmp_path / "probe.json").write_text('[{"method": "probe", "lang": "de"}]')
    assert study_results.file_rows({"rows_from": "probe.json"}, tmp_path) == [{"method": "probe", "lang": "de"}]
    assert study_results.file_rows({"rows_from": "absent.json"}, tmp_path) == []
    both = study.result_rows({"name": "ft-seed{seed}", "config": "x", "langs": ["de"],
                              "labels": {"regime": ["equal_steps", "equal_sentences"]}}, 1, spec)
    assert [r["regime"] for r in both] == ["equal_steps", "equal_sentences"]


def test_a_study_with_an_unknown_key_is_refused(tmp_path, monkeypatch):
    import study_rows

    (tmp_path / "s.yaml").write_text("name: s\nrows:\n  - {name: a, config: xsid-zero-shot, label: {x: 1}}\n")
    monkeypatch.setattr(study_rows, "STUDIES", tmp_path)
    with pytest.raises(SystemExit, match=r"unknown keys \['label'\]"):
        study_rows.load_study("s")


def test_a_translation_pretraining_gives_a_row_per_direction():
    """``phases: directions`` (TALL): BLEU, round-trip BLEU and copy rate of each direction, cost over the phases."""
    import study_results

    summary = {"step": 2, "train_sentences": 64, "train_tokens": 100, "train_seconds": 10.0, "peak_rss_mb": 5.0}
    last = {"bleu_en_ja": 2.214, "char_bleu_en_ja": 9.87, "bleu_ja_en": 1.0, "roundtrip_bleu_en": 3.0,
            "roundtrip_bleu_ja": 4.0, "identical_en_ja": 0.5, "identical_ja_en": 0.25, "samples": []}
    res = {"phases": [{"name": "dae", "objectives": {"dae": 1.0}, "summary": summary, "final_eval": {}},
                      {"name": "dae-bt", "objectives": {"dae": 1.0, "bt": 1.0}, "summary": summary,
                       "final_eval": last}], "corpus": {"train_sequences": 7}}
    rows = study_results.direction_rows(res, {"method": "tall_pretrain", "variant": "none"})
    assert [(r["lang"], r["bleu"], r.get("char_bleu"), r["roundtrip_bleu"], r["identical_rate"], r["bleu_tokenize"])
            for r in rows] == [("en-ja", 2.21, 9.87, 3.0, 0.5, "ja-mecab"), ("ja-en", 1.0, None, 4.0, 0.25, "13a")]
    assert (rows[0]["steps"], rows[0]["train_sentences"], rows[0]["tokens_per_second"]) == (4, 128, 10.0)


@pytest.mark.parametrize("study_name,run_name,results_name,method,dataset,replaces", [
    ("tasks", "xnli-zero-shot-seed1", "xnli", "zero_shot", "xnli", True),
    ("translation", "xsid-zero-shot-seed1", "translation", "zero_shot", "xsid", True),
    ("xeroalign-filter", "xsid-xeroalign-da-seed1", "xeroalign-filter", "xeroalign", "xsid", True),
    ("unicoder", "xsid-unicoder-all5-seed1", "unicoder", "zero_shot", "xsid", True),
    ("selection", "selection-xsid-zero-shot-seed1-last", "selection", "zero_shot", "xsid", True),
    ("reproducibility", "repro-xsid-filter-sr-b-seed1", "reproducibility", "filter", "xsid", True),
    # a run with the fixed read-out replaces its own committed rows (same CPU); the own-position rows stay beside them
    ("tall", "xsid-tall-en-de-none-seed1", "tall", "tall", "xsid", True)])
def test_a_fresh_run_replaces_its_committed_rows(tmp_path, monkeypatch, study_name, run_name, results_name, method,
                                                 dataset, replaces):
    """The rows a study's run makes now carry the identity of the committed rows that run made before: they replace
    them (the other runs' rows and the file's other keys stay; a zero-shot run's translate-test rows too)."""
    import shutil

    import study
    import study_results

    runs, results = tmp_path / "runs", tmp_path / "results"
    runs.mkdir()
    shutil.copytree(ROOT / "benchmarks" / "results", results)
    monkeypatch.setattr(study, "RUNS", runs)
    monkeypatch.setattr(study, "RESULTS", results)
    committed = json.loads((results / f"{results_name}.json").read_text())
    spec = study.load_study(study_name)
    row = study.by_name(spec)[run_name.replace("-seed1", "")]
    labels = {**spec.get("labels", {}), **row.get("labels", {})}
    regimes = labels.get("regime") if isinstance(labels.get("regime"), list) else [labels.get("regime")]
    langs = sorted({r["lang"] for r in committed["rows"] if r["method"] == labels.get("method", method)
                    and r["dataset"] == dataset and r.get("seed") == 1 and r.get("variant") == labels.get("variant")
                    and r.get("regime") in regimes})
    assert langs, "no committed rows of this run to replace"
    run = runs / run_name
    run.mkdir()
    # the CPU its committed rows record (a study whose identity has ``cpu`` replaces rows of the same CPU only)
    cpu = next((r.get("cpu") for r in committed["rows"] if r.get("run") == run_name and r.get("cpu")), None)
    res = {"method": method, "task": "t", "dataset": dataset, "best_step": 1,
           "train_summary": {"step": 1, "train_seconds": 1.0, "cpu": cpu},
           "per_language": {lang: {"accuracy": 0.5, "intent_acc": 0.5, "n": 1} for lang in langs}}
    (run / "results.json").write_text(json.dumps(res))
    tests = study_results.translate_tests(row)
    for tt in tests:
        (run / f"results-{tt['name']}.json").write_text(json.dumps({**res, "per_language": {
            lang: {"accuracy": 0.5, "intent_acc": 0.5, "n": 1} for lang in tt["langs"]}}))
    study.collect(spec, [1])
    written = json.loads((results / f"{results_name}.json").read_text())
    fresh = [r for r in written["rows"] if r.get("run") == run_name]
    assert len(fresh) == len(langs) * len(regimes) + sum(len(tt["langs"]) for tt in tests)
    assert len(written["rows"]) == len(committed["rows"]) + (0 if replaces else len(fresh))
    assert {k for k in committed if k not in ("created", "git_commit", "machine", "notes")} <= set(written)


def test_gap_closed_is_measured_against_the_baseline_of_the_same_dataset_and_seed():
    import study_results

    spec = {"baseline": "zero_shot", "metrics": {"intent_acc": "gap"}, "skip": ["trelm_*"]}
    rows = [{"dataset": "xsid", "method": "zero_shot", "seed": 1, "lang": "en", "intent_acc": 0.9},
            {"dataset": "xsid", "method": "zero_shot", "seed": 1, "lang": "de", "intent_acc": 0.5},
            {"dataset": "xsid", "method": "zero_shot", "seed": 2, "lang": "en", "intent_acc": 0.8},
            {"dataset": "xsid", "method": "zero_shot", "seed": 2, "lang": "de", "intent_acc": 0.8},
            {"dataset": "xsid", "method": "filter", "seed": 1, "lang": "de", "intent_acc": 0.8},
            {"dataset": "xsid", "method": "filter", "seed": 2, "lang": "de", "intent_acc": 0.9},
            {"dataset": "xsid", "method": "filter", "seed": 3, "lang": "de", "intent_acc": 0.9},
            {"dataset": "xsid", "method": "trelm_migrated", "seed": 1, "lang": "de", "intent_acc": 0.9}]
    study_results.add_gap_closed(rows, spec)
    assert [r.get("gap", "-") for r in rows] == ["-", 0.0, "-", None, 0.75, None, None, "-"]


def test_each_over_two_keys_gives_every_combination():
    import study_rows

    spec = {"expand": {"a": {"x": {}, "y": {}}, "b": {"1": {"f": "one"}, "2": {"f": "two"}}},
            "rows": [{"name": "r-{a}-{b}", "each": ["a", {"b": ["2"]}], "labels": {"f": "{f}"}}]}
    assert [(r["name"], r["labels"]["f"]) for r in study_rows.expanded(spec)] == [("r-x-2", "two"), ("r-y-2", "two")]
