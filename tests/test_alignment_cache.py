"""Same seed, same numbers across a translation (issue 48): eflomal samples without a seed, so a run's word
alignments are kept by a hash of their inputs and reused; the key is recorded in the data report and results."""
import json

from xlt.align.eflomal_align import align, alignment_key

SRC = [["set", "an", "alarm", "for", "seven"], ["weather", "in", "berlin"], ["play", "music"]]
TGT = [["stell", "einen", "wecker", "für", "sieben"], ["wetter", "in", "berlin"], ["spiel", "musik"]]


def test_a_cached_alignment_is_reused_exactly(tmp_path):
    first, again, other = {}, {}, {}
    links = align(SRC, TGT, cache=tmp_path, record=first)
    assert align(SRC, TGT, cache=tmp_path, record=again) == links
    assert first["reused"] is False and again["reused"] is True and first["cache_key"] == again["cache_key"]
    align(SRC, TGT[:2] + [["spiel", "laut", "musik"]], cache=tmp_path, record=other)  # other input, other key
    assert other["reused"] is False and other["cache_key"] != first["cache_key"]
    assert alignment_key(SRC, TGT, [], True, None) == first["cache_key"]
    assert alignment_key(SRC, TGT, [], False, None) != first["cache_key"]  # settings are part of the key


def test_a_translate_train_run_records_and_reuses_its_alignment(tiny_cfg, tmp_path):
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train

    common = ["train.method=translate_train", "translation.translator=identity", "translation.extra_parallel=[]",
              "translation.languages=[de]", "train.max_steps=2", "train.eval_every=2",
              f"translation.alignment_cache={tmp_path / 'alignments'}"]
    runs = [train(tiny_cfg(*common, f"name=tt-{k}")) for k in "ab"]
    reports = [json.loads((r / "data_report.json").read_text())["translation"]["de"]["projection"]["alignment"]
               for r in runs]
    assert reports[0]["reused"] is False and reports[1]["reused"] is True
    assert reports[0]["cache_key"] == reports[1]["cache_key"]
    results = evaluate_run(runs[1])
    assert list(results["alignment_cache_keys"].values()) == [reports[0]["cache_key"]]
