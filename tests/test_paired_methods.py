"""XeroAlign, FILTER and FILTER self-teaching on tiny-random (identity translator): FILTER's corner cases against
the plain encoder, gradients on every layer, alignment losses, end-to-end training, teacher -> student round trip,
and config errors."""
import pytest
import torch

from tests.conftest import setup_run
from xlt.core.batching import collate
from xlt.core.vocab import prepare_tokenizer
from xlt.errors import ConfigError
from xlt.evaluation import evaluate_run
from xlt.losses.alignment import alignment_loss
from xlt.models.fusion import FusionModel, fusion_encode
from xlt.trained import load_trained, pad_id
from xlt.tasks import get_task
from xlt.finetune import train
from xlt import zoo

IDENTITY = ["translation.translator=identity", "translation.extra_parallel=[]", "translation.languages=[de]"]


def _encoder():
    encoder, tok, _ = zoo.load_encoder("tiny-random")
    return encoder.eval(), prepare_tokenizer(tok)


def _batch(tok, texts):
    enc = [tok.encode(t).ids for t in texts]
    T = max(map(len, enc))
    ids = torch.full((len(enc), T), tok.token_to_id("<pad>"))
    mask = torch.zeros((len(enc), T), dtype=torch.long)
    for i, e in enumerate(enc):
        ids[i, :len(e)], mask[i, :len(e)] = torch.tensor(e), 1
    return ids, mask


def test_filter_without_fusion_layers_equals_the_plain_encoder_on_each_side():
    encoder, tok = _encoder()
    a, am = _batch(tok, ["set an alarm for 7 am", "weather in berlin"])
    b, bm = _batch(tok, ["wecker um 7", "wetter in berlin heute abend bitte"])
    L = len(encoder.encoder.layer)
    with torch.no_grad():
        alone_a = encoder(input_ids=a, attention_mask=am).last_hidden_state
        alone_b = encoder(input_ids=b, attention_mask=bm).last_hidden_state
        for m in range(L + 1):  # m = L, k = 0 and m < L, k = 0 (local then per-language layers) alike
            ha, hb = fusion_encode(encoder, m, 0, a, am, b, bm)
            assert torch.allclose(ha, alone_a, atol=1e-5) and torch.allclose(hb, alone_b, atol=1e-5)
        ha, hb = fusion_encode(encoder, 0, L, a, am)  # no pair: side a alone through every layer
        assert hb is None and torch.allclose(ha, alone_a, atol=1e-5)


def test_fusion_layers_mix_the_sides_ignore_padding_and_are_symmetric():
    encoder, tok = _encoder()
    L = len(encoder.encoder.layer)
    a, am = _batch(tok, ["set an alarm for 7 am"])
    b, bm = _batch(tok, ["wecker um 7"])
    c, cm = _batch(tok, ["wetter in berlin heute"])
    with torch.no_grad():
        alone = encoder(input_ids=a, attention_mask=am).last_hidden_state
        for m, k in [(0, L), (1, 1), (0, 1)]:
            ab, _ = fusion_encode(encoder, m, k, a, am, b, bm)
            ac, _ = fusion_encode(encoder, m, k, a, am, c, cm)
            assert not torch.allclose(ab, alone, atol=1e-4)  # the translation is seen
            assert not torch.allclose(ab, ac, atol=1e-4)
            pad = torch.full((1, 4), tok.token_to_id("<pad>"))  # padding the pair changes nothing
            ab_pad, _ = fusion_encode(encoder, m, k, a, am, torch.cat([b, pad], 1),
                                      torch.cat([bm, torch.zeros_like(pad)], 1))
            assert torch.allclose(ab, ab_pad, atol=1e-5)
            _, ba = fusion_encode(encoder, m, k, b, bm, a, am)  # positions restart per side: order-free
            assert torch.allclose(ab, ba, atol=1e-5)


def test_filter_rejects_more_layers_than_the_encoder_has():
    encoder, _ = _encoder()
    heads = get_task("intent_slot").heads(32, {"intents": ["a"], "slots": ["O"]}, "mean", 0.1)
    with pytest.raises(ValueError, match="m \\+ k <= 2"):
        FusionModel(encoder, heads, 2, 1)


def test_alignment_losses():
    a, b = torch.ones(2, 4), torch.zeros(2, 4)
    assert alignment_loss(a, b, "mse", "mean").item() == pytest.approx(1.0)
    assert alignment_loss(a, b, "mse", "sum").item() == pytest.approx(4.0)
    assert alignment_loss(a, a, "cosine", "mean").item() == pytest.approx(0.0, abs=1e-6)
    assert alignment_loss(a, -a, "cosine", "mean").item() == pytest.approx(2.0)
    with pytest.raises(ConfigError, match="distance"):
        alignment_loss(a, b, "l1", "mean")


@pytest.mark.parametrize("method,options", [
    ("xeroalign", ["options.reduction=sum"]),
    ("filter", ["options.local_layers=1", "options.fusion_layers=1"]),
])
def test_paired_loss_reaches_every_layer(tiny_cfg, method, options):
    cfg = tiny_cfg(f"train.method={method}", *IDENTITY, *options)
    ctx, meth, data, model, tok = setup_run(cfg)
    assert all(e.pair is not None for e in data.train)
    batch = collate(ctx.task, data.train[:8], pad_id(tok, data.trim))
    # identity translations: pair each row with another sentence
    batch["pair"] = {k: v.roll(1, 0) for k, v in batch["pair"].items()}
    parts = meth.loss(model, batch)
    parts["loss"].backward()
    assert torch.isfinite(parts["loss"])
    if method == "xeroalign":
        assert parts["align_loss"] > 0 and parts["loss"] > parts["task_loss"]
        assert 0 < float(parts["align_task_grad_ratio"]) < float("inf")
    else:
        assert parts["target_loss"] > 0
    for name, p in model.named_parameters():
        if p.requires_grad:
            assert p.grad is not None and p.grad.abs().sum() > 0, f"no gradient reaches {name}"


def test_gradient_ratio_compares_the_pulls_on_the_states_and_leaves_gradients_alone():
    from xlt.methods.xeroalign import gradient_ratio

    hidden = torch.randn(2, 3, 4, requires_grad=True)
    states = hidden * 1.0  # a non-leaf, as the encoder's output
    align, task = (2 * states).sum(), (states ** 2).sum() / 2  # gradients 2 and the states themselves
    ratio = gradient_ratio(align, task, states)
    assert float(ratio) == pytest.approx(2 * (24 ** 0.5) / float(hidden.norm()), rel=1e-5)
    (align + task).backward()
    assert torch.allclose(hidden.grad, 2 + hidden.detach())  # one backward as if nothing had been measured


def test_xeroalign_trains_and_evaluates_as_a_plain_encoder(tiny_cfg):
    run = train(tiny_cfg("train.method=xeroalign", *IDENTITY, "translation.languages=[de,ja]"))
    results = evaluate_run(run)
    assert set(results["per_language"]) == {"en", "de", "ja"}
    report = (run / "data_report.json").read_text()
    assert '"pairs": 40' in report  # every source row paired once per language
    assert results["train_summary"]["train_sentences"] == 6 * 8 * 2


def test_filter_teacher_to_student_round_trip(tiny_cfg):
    layers = ["options.local_layers=1", "options.fusion_layers=1"]
    teacher = train(tiny_cfg("train.method=filter", "name=teacher", *IDENTITY, *layers))
    t_results = evaluate_run(teacher)
    assert t_results["test_time"]["de"]["de-en"]["pairs"] == 2
    run = load_trained(teacher, tiny_cfg("train.method=filter", *IDENTITY, *layers))
    labels = run.labels
    assert isinstance(run.model, FusionModel)
    student = train(tiny_cfg("train.method=filter_self_teaching", "name=student", *IDENTITY, *layers,
                             f"options.teacher={teacher}"))
    soft = student / "teacher_soft_labels.safetensors"
    from safetensors.torch import load_file
    stored = load_file(str(soft))
    assert stored["intent_logits"].shape == (40, len(labels["intents"]))
    assert torch.allclose(stored["intent_logits"].sum(-1), torch.ones(40), atol=1e-5)
    assert stored["slot_logits"].shape == (int(stored["words"].sum()), len(labels["slots"]))
    import json
    log = [json.loads(line) for line in (student / "metrics.jsonl").read_text().splitlines()]
    assert all(r["kl_loss"] >= 0 for r in log) and "target_loss" in log[0]
    assert set(evaluate_run(student)["per_language"]) == {"en", "de", "ja"}


def test_paired_method_config_errors(tiny_cfg):
    with pytest.raises(ConfigError, match="unknown key"):
        tiny_cfg("train.method=xeroalign", "options.wieght=2")
    with pytest.raises(ConfigError, match="takes no options"):
        tiny_cfg("train.method=zero_shot", "options.weight=2")
    with pytest.raises(ConfigError, match="teacher"):
        train(tiny_cfg("train.method=filter_self_teaching", *IDENTITY, "options.teacher=/nonexistent"))
    with pytest.raises(ConfigError, match="at most the encoder's 2 layers"):
        train(tiny_cfg("train.method=filter", *IDENTITY, "options.fusion_layers=2"))
    with pytest.raises(ConfigError, match="exactly one"):
        train(tiny_cfg("train.method=filter", *IDENTITY, "translation.languages=[de,ja]", "options.fusion_layers=1"))
