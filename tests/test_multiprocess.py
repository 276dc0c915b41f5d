"""Two processes on CPU (``torchrun``, gloo) against one process with the same global batch, on tiny-random: the
training batches and the evaluation are sharded, checkpoints and logs are written once, and the metrics agree within
noise (dropout masks differ between the runs, so they are not bit-identical)."""
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, TRAIN, write_conll


@pytest.fixture
def fit_data(tmp_path):
    """Dev = the training utterances: both runs must learn them, so their metrics are comparable."""
    d = tmp_path / "data" / "xsid"
    (d / "train").mkdir(parents=True)
    rows = TRAIN * 8
    (d / "train" / "en.text").write_text("".join(t + "\n" for t, _, _ in rows))
    (d / "train" / "en.label").write_text("".join(f"{tags}\t{intent}\n" for _, tags, intent in rows))
    write_conll(d / "en.valid.conll", TRAIN)
    write_conll(d / "en.test.conll", TRAIN)
    return tmp_path / "data"


def cpu_env(xlt_home) -> dict:
    """On CPU (gloo) also on a GPU machine: NCCL needs a GPU per process."""
    return dict(os.environ, XLT_HOME=str(xlt_home), OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")


def xlt_train(processes: int, name: str, data, tmp_path, xlt_home) -> dict:
    overrides = [f"data.data_dir={data}", f"output_dir={tmp_path / 'runs'}", "data.train_subset=0",
                 "data.dedup=false", "data.eval_langs=[en]", "train.max_steps=60", "train.eval_every=30", "train.lr=5e-3",
                 f"name={name}"]
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
                 str(processes)] if processes > 1 else [sys.executable])
    env = cpu_env(xlt_home)
    done = subprocess.run([*launcher, "-m", "xlt.cli", "train", "tiny", *overrides], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "runs" / name
    return {"log": [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()],
            "summary": json.loads((run / "train_summary.json").read_text()),
            "results": json.loads((run / "results.json").read_text()), "run": run, "stdout": done.stdout}


def test_two_processes_match_one_process(fit_data, tmp_path, xlt_home):
    one = xlt_train(1, "one", fit_data, tmp_path, xlt_home)
    two = xlt_train(2, "two", fit_data, tmp_path, xlt_home)
    assert one["summary"]["processes"] == 1 and two["summary"]["processes"] == 2
    # one log line per evaluation and one set of checkpoints: only the main process writes
    assert [r["step"] for r in two["log"]] == [r["step"] for r in one["log"]] == [30, 60]
    assert (two["run"] / "best" / "model.safetensors").exists() and not list(two["run"].glob("*.tmp"))
    assert two["stdout"].count("run folder:") == 1
    # the same global batch: the same number of training sentences seen; both learn (the logged loss is the main
    # process's share of the last batch, too noisy to compare step by step) and reach the same metrics
    assert two["summary"]["train_sentences"] == one["summary"]["train_sentences"]
    for run in (one, two):
        assert run["log"][-1]["loss"] < 0.9 * run["log"][0]["loss"]
    m1, m2 = one["results"]["per_language"]["en"], two["results"]["per_language"]["en"]
    for metric in ("intent_acc", "slot_f1"):  # both fit the 5 utterances; one utterance of difference is noise
        assert m1[metric] >= 0.8 and abs(m1[metric] - m2[metric]) <= 0.21, (metric, m1, m2)


def test_two_process_stage_shards_and_evaluates_like_one(tmp_path, xlt_home):
    corpus = tmp_path / "corpus" / "mono" / "xx"
    corpus.mkdir(parents=True)
    (corpus / "a.txt").write_text("\n".join([t for t, _, _ in TRAIN] * 10) + "\n", encoding="utf-8")
    overrides = ["model.name=tiny-random", f"corpus.data_dir={tmp_path / 'corpus'}", "corpus.files=[mono/xx/*.txt]",
                 "corpus.heldout_lines=4", f"output_dir={tmp_path / 'runs'}", "phases.0.steps=2",
                 "phases.0.eval_every=2", "phases.1.steps=4", "phases.1.eval_every=2", "phases.0.batch_size=8",
                 "phases.1.batch_size=8", "options.eval_sequences=4", "options.pppl_sequences=2"]
    env = cpu_env(xlt_home)
    logs = {}
    for processes in (1, 2):
        launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
                    if processes > 1 else [sys.executable])
        done = subprocess.run([*launcher, "-m", "xlt.cli", "pretrain", "pretrain-mlm-ja", *overrides,
                               f"name=p{processes}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.count("stage folder:") == 1
        logs[processes] = [json.loads(x) for x in
                           (tmp_path / "runs" / f"p{processes}" / "phase2-all" / "metrics.jsonl").read_text().splitlines()]
        assert (tmp_path / "runs" / f"p{processes}" / "model" / "model.safetensors").exists()
    for a, b in zip(logs[1], logs[2], strict=True):  # held-out text masked identically, whatever the sharding
        assert a["heldout_masked"] == b["heldout_masked"] > 0 and a["heldout_pppl_tokens"] == b["heldout_pppl_tokens"]
        assert abs(a["heldout_mlm_loss"] - b["heldout_mlm_loss"]) < 0.05 * a["heldout_mlm_loss"]
