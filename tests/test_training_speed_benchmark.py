"""benchmarks/training_speed.py on tiny-random: both variants train on the same sentences and the file has the
rows the issue asks for (the numbers themselves come from the real model, on the real machine)."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import training_speed  # noqa: E402


def test_side_by_side_rows(tiny_data, xlt_home, tmp_path):
    corpus = tmp_path / "text" / "mono" / "xx"
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / "a.txt").write_text("set an alarm for the morning\nplay music in berlin\nthe weather is cold\n" * 8)
    out = training_speed.main(["--data-dir", str(tiny_data), "--steps", "3", "--mlm-steps", "3", "--batch-size", "4"],
                              model="tiny-random", config="tiny", extra=["data.train_subset=0", "data.dedup=false"],
                              results=tmp_path, mlm_extra=[f"corpus.data_dir={tmp_path / 'text'}", "corpus.files=[mono/xx/*.txt]", "corpus.heldout_lines=2",
                                                           "phases.0.batch_size=4"])
    rows = {r["variant"]: r for r in json.loads((tmp_path / "training-speed-b4.json").read_text())["rows"]}
    assert set(rows) == {"hf_trainer", "xlt", "xlt_mlm", "hf_trainer_mlm", "hf_trainer_no_attention_dropout",
                         "xlt_no_attention_dropout", "xlt_mlm_no_attention_dropout"} and out["fp32_gemm_peak_flops"] > 0
    assert out["xlt_no_attention_dropout_speedup_over_xlt"] > 0 and 0 <= rows["xlt"]["dev_en_intent_slot_mean"] <= 1
    for r in rows.values():
        assert r["steps"] == 3 and r["batch_size"] == 4 and r["tokens_per_second"] > 0 and r["peak_rss_mb"] > 0
        assert r["tokens"] >= 3 * 4 * 3  # non-pad sub-tokens of 3 batches of 4 utterances (<s> word </s> at least)
    assert rows["hf_trainer"]["flops_per_token"] == rows["xlt"]["flops_per_token"] > 0
    assert rows["hf_trainer_no_attention_dropout"]["flops_per_token"] == rows["xlt"]["flops_per_token"]
    assert rows["hf_trainer_mlm"]["flops_per_token"] == rows["xlt_mlm"]["flops_per_token"] > 0
    assert rows["xlt_mlm_no_attention_dropout"]["task"] == "mlm"
    assert rows["xlt_mlm_no_attention_dropout"]["flops_per_token"] == rows["xlt_mlm"]["flops_per_token"]
    # --mlm-steps 0: the fine-tuning rows only (the GPU run at a large batch); bf16 peak measured for bf16 rows
    out = training_speed.main(["--data-dir", str(tiny_data), "--steps", "2", "--mlm-steps", "0", "--batch-size", "4",
                               "--precision", "bf16", "--no-attention-dropout-rows"],
                              model="tiny-random", config="tiny",
                              extra=["data.train_subset=0", "data.dedup=false"], results=tmp_path)
    assert [r["variant"] for r in out["rows"]] == ["hf_trainer", "xlt"] and out["xlt_mlm_speedup_over_hf_trainer"] is None
    assert out["precision_gemm_peak_flops"] > 0 and (tmp_path / "training-speed-b4-bf16.json").exists()
