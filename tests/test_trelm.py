"""The TreLM stage end to end on tiny-random and toy text: vocabulary migration into RUN_DIR/base, the four phases
of the shipped config (commonality, two transfer directions from it, their merge, language-specific MLM) with the
right parameters frozen in each, BPW after every phase, the export read back as a fine-tuning backbone, kill and
resume, and the vocabulary-sharing baselines (random embeddings, from scratch)."""
import json
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from tests.conftest import ROOT, write_lines
from tests.test_multiprocess import cpu_env
from xlt import zoo
from xlt.config import find_config, load_stage_config
from xlt.models.trilayer import TreLMBackbone
from xlt.stages import run_stage

pytest.importorskip("gensim", reason="gensim (extra trelm) is not installed")
if shutil.which("eflomal-align") is None and not __import__("importlib").util.find_spec("eflomal"):
    pytest.skip("eflomal not installed (pip install eflomal)", allow_module_level=True)

EN = ["the house is small", "the dog eats in the house", "the big house", "the cat sleeps", "the dog and the cat",
      "a small dog sleeps in the garden", "the cat eats", "the garden is big"]
ES = ["la casa es pequeña", "el perro come en la casa", "la casa grande", "el gato duerme", "el perro y el gato",
      "un perro pequeño duerme en el jardín", "el gato come", "el jardín es grande"]
DICTIONARY = [("house", "casa"), ("dog", "perro"), ("cat", "gato"), ("small", "pequeña"), ("big", "grande"),
              ("garden", "jardín"), ("eats", "come"), ("sleeps", "duerme")]


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    for lang, lines in (("en", EN), ("es", ES)):
        write_lines(d / "mono" / lang / "a.txt", lines * 8)
        write_lines(d / "parallel" / "en-es" / f"p.{lang}", lines * 4)
    (d / "muse").mkdir()
    for name, part in (("en-es.0-5000.txt", DICTIONARY[:5]), ("en-es.5000-6500.txt", DICTIONARY[5:])):
        (d / "muse" / name).write_text("".join(f"{a} {b}\n" for a, b in part), encoding="utf-8")
    return d


def trelm_overrides(data, tmp_path, *extra) -> list[str]:
    steps = [f"phases.{i}.{k}={v}" for i in range(4) for k, v in (("steps", 3), ("eval_every", 3),
                                                                  ("batch_size", 4))]
    return ["model.name=tiny-random", f"corpus.data_dir={data}", "corpus.heldout_lines=4",
            "corpus.langs={en: [mono/en/*.txt], es: [mono/es/*.txt]}", "corpus.parallel.es=[parallel/en-es/p.es]",
            f"output_dir={tmp_path / 'runs'}", "name=trelm",
            "options.vocabulary.vocab_size=150", "options.vocabulary.fasttext_epochs=1",
            "options.vocabulary.refinement_iterations=1", "options.vocabulary.adversarial.epochs=1",
            "options.vocabulary.adversarial.epoch_size=64", "options.vocabulary.adversarial.discriminator_hidden=8",
            "options.vocabulary.adversarial.most_frequent=100", "options.eval_sequences=6", "options.eval_pairs=4",
            "phases.1.trainable=[encoder.trilayer.*, encoder.bert.encoder.layer.1.*]",
            "phases.2.trainable=[encoder.trilayer.*, encoder.bert.encoder.layer.0.*]", *steps, *extra]


def trelm_cfg(data, tmp_path, *extra):
    return load_stage_config(find_config("pretrain-trelm-es"), trelm_overrides(data, tmp_path, *extra))


def layers(state, prefix="encoder.bert.encoder.layer."):
    return {k: v for k, v in state.items() if k.startswith(prefix)}


def test_trelm_end_to_end(data, tmp_path, xlt_home, tiny_cfg):
    cfg = trelm_cfg(data, tmp_path)
    out = run_stage(cfg)
    run = cfg.run_dir
    migration = json.loads((run / "base" / "migration.json").read_text())
    assert {"adversarial+procrustes", "identical_strings+procrustes"} <= set(migration["precision_at_1"])
    assert "perro" in zoo.load_tokenizer(run / "base").get_vocab()  # the new vocabulary covers the target text
    results = json.loads((run / "results.json").read_text())
    assert [p["name"] for p in results["phases"]] == ["commonality", "s2t", "t2s", "specific"]
    for p in results["phases"]:
        ev = p["final_eval"]
        assert ev["heldout_es_bpw"] > 0 and ev["heldout_en_bpw"] > 0 and ev["heldout_es_mlm_tokens"] > 0
        assert 0 <= ev["heldout_cdlm_s2t_accuracy"] <= 1 and ev["heldout_cdlm_t2s_tokens"] > 0
    state = {p: load_file(str(run / f"phase{i + 1}-{p}" / "final" / "model.safetensors"))
             for i, p in enumerate(["commonality", "s2t", "t2s", "specific"])}
    base = {f"encoder.bert.{k}": v for k, v in load_file(str(run / "base" / "model.safetensors")).items()}
    # (a) commonality: the transformer layers frozen, the embeddings and the TRILayer trained
    assert all(torch.equal(v, base[k]) for k, v in layers(state["commonality"]).items())
    key = "encoder.bert.embeddings.word_embeddings.weight"
    assert not torch.equal(state["commonality"][key], base[key])
    assert not torch.equal(state["commonality"]["encoder.trilayer.output.dense.weight"],
                           base["encoder.bert.encoder.layer.1.output.dense.weight"])
    # (b) both directions start from (a); each trains only its half (tiny-random: 2 layers, halves of one)
    for name, trained, frozen in (("s2t", "1", "0"), ("t2s", "0", "1")):
        for k, v in layers(state[name]).items():
            same = torch.equal(v, state["commonality"][k])
            assert same == k.startswith(f"encoder.bert.encoder.layer.{frozen}."), (name, k)
    # the CdLM phases' eval accuracies differ from each other: they are different models, not one continued
    assert results["phases"][1]["final_eval"] != results["phases"][2]["final_eval"]
    # the export: BERT folder + TRILayer, read back as a Spanish fine-tuning backbone computing what the stage did
    encoder, tok, _ = zoo.load_encoder(str(out))
    assert isinstance(encoder, TreLMBackbone) and encoder.trelm.languages == ["en", "es"]
    assert torch.equal(encoder.trelm.trilayer.output.dense.weight, state["specific"]["encoder.trilayer.output.dense.weight"])
    ids = torch.tensor([tok.encode("el perro come").ids])
    hidden = encoder.eval()(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
    assert hidden.shape == (1, ids.shape[1], encoder.config.hidden_size) and torch.isfinite(hidden).all()
    assert json.loads((out / "xlt_stage.json").read_text())["migration"]["init"] == "aligned"
    ft = __import__("xlt.finetune", fromlist=["train"]).train(
        tiny_cfg(f"model.name={out}", "train.max_steps=2", "train.eval_every=2", "name=ft-trelm"))
    assert (ft / "best" / "model.safetensors").exists()
    # baselines on the same vocabulary: random embeddings (English layers kept), everything from scratch
    for init, keeps_layers in (("random", True), ("scratch", False)):
        other = trelm_cfg(data, tmp_path, f"name={init}", f"options.init={init}", f"options.base_from={run / 'base'}",
                          "phases=[{name: mlm, steps: 2, eval_every: 2, batch_size: 4, objectives: {mlm_target: 1.0}}]")
        run_stage(other)
        built = load_file(str(other.run_dir / "base" / "model.safetensors"))
        assert zoo.load_tokenizer(other.run_dir / "base").get_vocab() == zoo.load_tokenizer(run / "base").get_vocab()
        k = "encoder.layer.0.attention.self.query.weight"
        assert torch.equal(built[k], base[f"encoder.bert.{k}"]) == keeps_layers
        ev = json.loads((other.run_dir / "results.json").read_text())["phases"][0]["final_eval"]
        assert ev["heldout_es_mlm_tokens"] == results["phases"][0]["final_eval"]["heldout_es_mlm_tokens"]
    # CdLM on the same vocabulary and pairs reuses the links of the run it shares the vocabulary with; other pairs
    # (here: another held-out split) get their own eflomal fit
    cdlm = "phases=[{name: t, steps: 2, eval_every: 2, batch_size: 4, objectives: {cdlm_s2t: 1.0}}]"
    links = json.loads((run / "cdlm_alignments.json").read_text())
    for name, extra, source in (("same-pairs", [], f"reused from {run / 'cdlm_alignments.json'}"),
                                ("other-pairs", ["corpus.heldout_lines=3"], "eflomal fit")):
        other = trelm_cfg(data, tmp_path, f"name={name}", "options.init=random", f"options.base_from={run / 'base'}",
                          cdlm, *extra)
        run_stage(other)
        report = json.loads((other.run_dir / "results.json").read_text())["export"]["pairs"]
        assert report["cdlm_alignments"] == source
        mine = json.loads((other.run_dir / "cdlm_alignments.json").read_text())
        assert (mine["pairs_digest"] == links["pairs_digest"]) == (name == "same-pairs")
        if name == "same-pairs":
            assert mine["train"] == links["train"] and mine["heldout"] == links["heldout"]


def test_trelm_kill_and_resume(data, tmp_path, xlt_home):
    cfg = trelm_cfg(data, tmp_path, "name=killed")
    run_stage(cfg, stop_after=(2, 2))  # killed in phase 3 (t2s) after step 2
    made = (cfg.run_dir / "base" / "migration.json").stat().st_mtime_ns
    first = load_file(str(cfg.run_dir / "phase1-commonality" / "final" / "model.safetensors"))
    assert not (cfg.run_dir / "model").exists() and (cfg.run_dir / "phase2-s2t" / "final").exists()
    run_stage(cfg, resume=True)
    assert (cfg.run_dir / "base" / "migration.json").stat().st_mtime_ns == made  # the base is not rebuilt
    again = load_file(str(cfg.run_dir / "phase1-commonality" / "final" / "model.safetensors"))
    assert all(torch.equal(first[k], again[k]) for k in first)
    log = [json.loads(x) for x in (cfg.run_dir / "phase3-t2s" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [3] and (cfg.run_dir / "model" / "trelm.safetensors").exists()


def test_trelm_config_errors(data, tmp_path, xlt_home):
    from xlt.errors import ConfigError
    with pytest.raises(ConfigError, match="base_from"):
        run_stage(trelm_cfg(data, tmp_path, "name=a", "options.init=random"))
    with pytest.raises(ConfigError, match="trim_vocab"):
        run_stage(trelm_cfg(data, tmp_path, "name=b", "model.trim_vocab=true"))
    with pytest.raises(ConfigError, match="cdlm_t2s"):
        run_stage(trelm_cfg(data, tmp_path, "name=c", "phases.3.start_from=[commonality, s2t]"))


def test_trelm_two_processes_fit_the_links_once(data, tmp_path, xlt_home):
    """``torchrun`` with two CPU processes: the base is built and eflomal fitted by the main process alone, the other
    reads both back (before: each process fitted and both wrote one file), and CdLM trains on the shared links."""
    phase = "phases=[{name: t, steps: 2, eval_every: 2, batch_size: 4, objectives: {cdlm_s2t: 1.0, mlm: 1.0}}]"
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           "-m", "xlt.cli", "pretrain", "pretrain-trelm-es",
                           *trelm_overrides(data, tmp_path, "name=two", phase)],
                          cwd=ROOT, env=cpu_env(xlt_home), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "runs" / "two"
    assert done.stdout.count("stage folder:") == 1 and not list(run.rglob("*.tmp"))
    assert json.loads((run / "cdlm_alignments.json").read_text())["source"] == "eflomal fit"
    ev = json.loads((run / "results.json").read_text())["phases"][0]["final_eval"]
    assert ev["heldout_cdlm_s2t_tokens"] > 0 and (run / "model" / "trelm.safetensors").exists()


def test_trelm_other_processes_wait_for_the_main_process_links(data, tmp_path, xlt_home, monkeypatch):
    """A process that is not the main one never fits eflomal: it waits, then reads what the main process wrote (here
    the main process's part is played by copying a finished run's links while it waits)."""
    phase = "phases=[{name: t, steps: 2, eval_every: 2, batch_size: 4, objectives: {cdlm_s2t: 1.0}}]"
    main = trelm_cfg(data, tmp_path, "name=main", phase)
    run_stage(main)
    written = main.run_dir / "cdlm_alignments.json"
    other = trelm_cfg(data, tmp_path, "name=other", phase)

    class OtherProcess:
        is_main_process = False

        def wait_for_everyone(self) -> None:
            shutil.copy(written, other.run_dir / "cdlm_alignments.json")

    monkeypatch.setattr("accelerate.PartialState", OtherProcess)
    monkeypatch.setattr("xlt.stages.trelm.subtoken_links", lambda *a: pytest.fail("a second process fitted eflomal"))
    run_stage(other)
    assert json.loads((other.run_dir / "results.json").read_text())["export"]["pairs"]["cdlm_alignments"] == "eflomal fit"


def test_trelm_migrates_to_a_synthetic_language_scored_on_the_true_bijection(data, tmp_path, xlt_home):
    from xlt.stages.trelm_base import dictionary_pairs
    from xlt.synthetic import cipher

    cfg = trelm_cfg(data, tmp_path, "name=trelm-syn", "corpus.langs={en: [mono/en/*.txt], syn-en: [mono/en/*.txt]}",
                    "corpus.parallel={syn-en: [mono/en/a.txt]}", "options.target_lang=syn-en")
    assert cfg.model.name == "tiny-random"  # TreLM builds the target vocabulary itself
    assert dictionary_pairs("syn-en", DICTIONARY[5:]) == [(cipher(e), e) for e, _ in DICTIONARY[5:]]
    run_stage(cfg)
    migration = json.loads((cfg.run_dir / "base" / "migration.json").read_text())
    assert migration["precision_at_1"]
    assert cipher("house") in "".join(zoo.load_tokenizer(cfg.run_dir / "base").get_vocab())
