"""AllenNLP-style model tests on tiny-random: it trains, every trainable parameter gets a gradient, checkpoints
round-trip, an interrupted run resumes to the identical result, vocabulary trimming is exact."""
import json

import pytest
import torch
from safetensors.torch import load_file

from tests.conftest import setup_run
from xlt.cli import main as cli_main
from xlt.core.batching import collate
from xlt.core.loop import cpu_model
from xlt.errors import ConfigError
from xlt.evaluation import evaluate_run
from xlt.trained import build_model, load_trained, pad_id
from xlt.finetune import train


def _setup(cfg):
    ctx, method, data, model, tok = setup_run(cfg)
    return data, model, tok, method


def test_two_steps_finite_loss_and_gradient_on_every_trainable_parameter(tiny_cfg):
    cfg = tiny_cfg()
    data, model, tok, method = _setup(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = collate(method.task, data.train[:8], pad_id(tok, data.trim))
    losses = []
    for _ in range(2):
        opt.zero_grad()
        parts = method.loss(model, batch)
        parts["loss"].backward()
        assert torch.isfinite(parts["loss"])
        for name, p in model.named_parameters():
            if p.requires_grad:
                assert p.grad is not None and torch.isfinite(p.grad).all(), name
                assert p.grad.abs().sum() > 0, f"no gradient reaches {name}"
        opt.step()
        losses.append(parts["loss"].item())
    assert losses[1] < losses[0]


def test_frozen_embeddings_get_no_update(tiny_cfg):
    cfg = tiny_cfg("model.freeze_embeddings=true")
    _, model, _, _ = _setup(cfg)
    assert not model.encoder.get_input_embeddings().weight.requires_grad


def test_attention_dropout_setting_reaches_the_encoder(tiny_cfg):
    """model.attention_dropout (null: the encoder's own 0.1) sets the attention-probability dropout of the run's
    encoder; the config check refuses 1 or more."""
    def attention_ps(cfg) -> set[float]:
        model = setup_run(cfg)[3]
        return {m.dropout.p for m in model.encoder.modules() if type(m).__name__.endswith("SelfAttention")}

    assert attention_ps(tiny_cfg()) == {0.1} and attention_ps(tiny_cfg("model.attention_dropout=0")) == {0.0}
    with pytest.raises(ConfigError, match="attention_dropout"):
        tiny_cfg("model.attention_dropout=1.0")


def test_trimmed_vocabulary_is_exact(tiny_cfg):
    cfg = tiny_cfg("model.trim_vocab=true", "model.dropout=0.0")
    data, trimmed, tok, method = _setup(cfg)
    full_setup = setup_run(tiny_cfg("model.trim_vocab=false", "model.dropout=0.0"))
    full, _ = build_model(full_setup[0], full_setup[1], data.labels, None)
    full.load_state_dict({k: v for k, v in trimmed.state_dict().items() if "word_embeddings" not in k},
                         strict=False)
    assert len(data.trim.kept) < tok.get_vocab_size()
    trimmed.eval(), full.eval()
    batch = collate(method.task, data.dev, pad_id(tok, data.trim))
    old_ids = torch.tensor([data.trim.kept[i] for i in batch["input_ids"].flatten()]).view_as(batch["input_ids"])
    a = trimmed(batch)
    b = full({**batch, "input_ids": old_ids})
    assert torch.allclose(a["slot_logits"], b["slot_logits"], atol=1e-6)


def test_resume_reaches_identical_parameters(tiny_cfg):
    straight = train(tiny_cfg("name=straight", "train.max_steps=6", "train.eval_every=2"))
    cfg = tiny_cfg("name=interrupted", "train.max_steps=6", "train.eval_every=2")
    train(cfg, stop_after=3)  # "killed" after step 3; the last checkpoint is from step 2
    assert json.loads((cfg.run_dir / "last" / "trainer_state.json").read_text())["step"] == 2
    train(cfg, resume=True)
    a = load_file(str(straight / "last" / "model.safetensors"))
    b = load_file(str(cfg.run_dir / "last" / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    log_a = [json.loads(x) for x in (straight / "metrics.jsonl").read_text().splitlines()]
    log_b = [json.loads(x) for x in (cfg.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log_b] == [2, 4, 6]
    assert [r["dev_en_slot_f1"] for r in log_a] == [r["dev_en_slot_f1"] for r in log_b]
    # the logged training loss is the mean over the steps since the previous evaluation, resumed or not
    assert [r["loss"] for r in log_a] == pytest.approx([r["loss"] for r in log_b], abs=1e-6)


def test_run_refuses_to_overwrite_without_resume(tiny_cfg):
    import pytest

    from xlt.errors import XltError

    cfg = tiny_cfg("name=twice", "train.max_steps=2", "train.eval_every=2")
    train(cfg)
    with pytest.raises(XltError, match="--resume"):
        train(cfg)


def test_saved_run_round_trips_and_reports(tiny_cfg, capsys):
    cfg = tiny_cfg("name=roundtrip", "train.max_steps=4", "train.eval_every=2")
    run_dir = train(cfg)
    data, _, tok, _ = _setup(cfg)
    run = load_trained(run_dir, cfg)
    model, labels = run.model, run.labels
    best = load_file(str(run_dir / "best" / "model.safetensors"))
    emb = model.encoder.get_input_embeddings().weight.data
    assert torch.equal(emb[torch.tensor(data.trim.kept)], best["encoder.embeddings.word_embeddings.weight"])
    results = evaluate_run(run_dir)
    assert set(results["per_language"]) == {"en", "de", "ja"}
    assert results["selection"] == "source-dev" and "transfer_gap" in results
    for f in ("results.json", "results.md", "intent_acc.png", "slot_f1.png", "semantic_acc.png",
              "config.yaml", "data_report.json", "metrics.jsonl", "train_summary.json"):
        assert (run_dir / f).exists(), f
    # the CPU kind is recorded: one seed's numbers can differ in their last digits across kinds of CPU
    assert json.loads((run_dir / "train_summary.json").read_text())["cpu"] == cpu_model() != ""
    # the report's numbers are the ones predict() gives on the same data
    preds = run.predict(data.test_examples["de"])
    acc = sum(p.intent == u.intent for p, u in zip(preds, data.test_examples["de"])) / len(preds)
    assert acc == results["per_language"]["de"]["intent_acc"]
    cli_main(["predict", str(run_dir), "set alarm for 7 am", "明天 早上 七点"])
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert len(lines) == 2 and lines[0]["intent"] in labels["intents"] and lines[1]["text"] == "明天 早上 七点"
    assert all("明天 早上 七点"[s["start"]:s["end"]] == s["text"] for s in lines[1]["slots"])


def test_halve_on_plateau_restores_the_best_model_and_halves_the_rate(tiny_cfg):
    """TALL's schedule: an evaluation without improvement goes back to the best model with half the learning rate;
    `patience` such evaluations in all end the run."""
    cfg = tiny_cfg("name=halving", "train.max_steps=40", "train.eval_every=2", "train.schedule=halve_on_plateau",
                   "train.patience=2", "train.lr=0.5", "train.warmup_ratio=0")  # a rate that makes things worse
    run_dir = train(cfg)
    log = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    cancelled = [r for r in log if not r["improved"]]
    assert cancelled, "lr 0.5 should make some evaluation worse"
    assert [r["lr_scale"] for r in cancelled] == [0.5, 0.25][:len(cancelled)]
    assert len(cancelled) == 2 and log[-1] is cancelled[-1]  # stopped at the second cancelled evaluation
    first = cancelled[0]
    after = log[log.index(first) + 1]
    assert after["lr"] == pytest.approx(first["lr"] * 0.5)  # the next interval runs at half the rate
    # the run ended on a cancelled evaluation: the checkpoint written after it holds the restored best model
    best = load_file(str(run_dir / "best" / "model.safetensors"))
    last = load_file(str(run_dir / "last" / "model.safetensors"))
    assert best.keys() == last.keys() and all(torch.equal(best[k], last[k]) for k in best)
    summary = json.loads((run_dir / "train_summary.json").read_text())
    assert summary["stopped_early"] and summary["step"] < 40


@pytest.mark.slow  # inductor compiles the model first: about a minute on 2 cores
def test_a_compiled_run_trains_saves_and_loads_like_any_other(tiny_cfg):
    from xlt.evaluation import evaluate_run

    run = train(tiny_cfg("train.compile=true", "train.max_steps=2", "train.eval_every=2", "name=compiled"))
    results = evaluate_run(run)  # a fresh, uncompiled model loads the checkpoint: same keys
    assert set(results["per_language"]) == {"en", "de", "ja"}
