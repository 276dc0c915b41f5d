"""Every encoder family a user is likely to bring (tiny random models built from each family's ``transformers``
config class: ``xlt.zoo.tiny_random``), through the registry harness of ``tests/test_registry.py``: every task
(zero-shot), every method (on xSID) and every stage either passes or is refused at config time with one line saying
why (``xlt.models.families``).  BERT itself is tiny-random, run by test_registry.py and the stage tests."""
import pytest
import torch

from tests.conftest import make_tall_model
from tests.test_registry import DATASETS, check_method_on_task
from xlt import zoo
from xlt.errors import ConfigError
from xlt.methods import METHODS
from xlt.models.families import family_of

ARCHITECTURES = ["xlm-roberta", "roberta", "distilbert", "deberta-v2", "electra"]
STAGES = ("continued_mlm", "unicoder", "tall", "trelm")


def why_not(arch: str, kind: str, name: str) -> str | None:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(zoo.resolve("tiny-random" if arch == "bert" else f"tiny-random-{arch}")))
    return family_of(config).why_not(kind, name, config)


@pytest.mark.parametrize("arch", ["bert", *ARCHITECTURES])
def test_the_family_adapter_reproduces_the_encoder(arch, xlt_home):
    """embed + run over every layer = the encoder's own forward, padding included (what FILTER's fusion relies on)."""
    encoder, tok, _ = zoo.load_encoder("tiny-random" if arch == "bert" else f"tiny-random-{arch}")
    encoder.eval()
    rows = [tok.encode(t).ids for t in ("set an alarm for 7 am", "weather")]
    ids = torch.full((2, max(map(len, rows))), 1)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, :len(r)], mask[i, :len(r)] = torch.tensor(r), 1
    family = family_of(encoder)
    with torch.no_grad():
        own = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        mine = family.run(encoder, list(family.layers(encoder)), family.embed(encoder, ids, mask), mask)
    real = mask.bool()
    assert torch.allclose(own[real], mine[real], atol=1e-5)


@pytest.mark.parametrize("arch,dataset", [(a, d) for a in ARCHITECTURES for d in DATASETS])
def test_task_on_architecture(tiny_cfg, tmp_path, arch, dataset):
    check_method_on_task(tiny_cfg, tmp_path, dataset, "zero_shot", f"tiny-random-{arch}")


@pytest.mark.parametrize("arch,method", [(a, m) for a in ARCHITECTURES for m in METHODS.names() if m != "zero_shot"])
def test_method_on_architecture(tiny_cfg, tmp_path, arch, method):
    reason = why_not(arch, "method", method)
    if reason:
        with pytest.raises(ConfigError, match=reason[:30]):
            check_method_on_task(tiny_cfg, tmp_path, "xsid", method, f"tiny-random-{arch}")
        return
    check_method_on_task(tiny_cfg, tmp_path, "xsid", method, f"tiny-random-{arch}")


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_export_on_architecture(tiny_cfg, tmp_path, arch):
    """A trained run of each family exports to ONNX and the graph predicts what PyTorch predicts."""
    from xlt.serve.export import export_run
    from xlt.finetune import train

    run = train(tiny_cfg(f"model.name=tiny-random-{arch}", "train.max_steps=2", "train.eval_every=2"))
    report = export_run(run, tmp_path / "export")
    assert report["model.onnx"]["same_predictions"] == 1.0 and report["model.onnx"]["max_abs_logit_diff"] < 1e-4


@pytest.mark.parametrize("arch,stage", [(a, s) for a in ["bert", *ARCHITECTURES] for s in STAGES
                                        if (a, s) != ("bert", "trelm")])  # BERT's TreLM: tests/test_trelm.py
def test_stage_on_architecture(tmp_path, xlt_home, tiny_cfg, arch, stage):
    """A few steps of the stage, then zero-shot fine-tuning on its export; or the one-line refusal."""
    from tests import stage_runs

    model = "tiny-random" if arch == "bert" else f"tiny-random-{arch}"
    reason = why_not(arch, "stage", stage)
    if reason:
        with pytest.raises(ConfigError, match=reason[:30]):
            stage_runs.run(stage, model, tmp_path)
        return
    out = make_tall_model(tmp_path, model) if stage == "tall" else stage_runs.run(stage, model, tmp_path)
    encoder, _, _ = zoo.load_encoder(str(out))
    assert family_of(encoder).name == family_of(zoo.load_encoder(model)[0]).name
    method = "tall" if stage == "tall" else "zero_shot"
    run = __import__("xlt.finetune", fromlist=["train"]).train(tiny_cfg(
        f"model.name={out}", f"train.method={method}", "train.max_steps=2", "train.eval_every=2", "name=ft",
        "translation.translator=identity", "translation.extra_parallel=[]", "translation.languages=[de]",
        "data.eval_langs=[en,de]"))
    assert (run / "best" / "model.safetensors").exists()


@pytest.mark.parametrize("arch", ["xlm-roberta", "distilbert", "deberta-v2"])
def test_tall_decoder_init_from_the_encoder_or_a_one_line_refusal(arch, xlt_home):
    from xlt.models.decoder import DecoderSettings, TiedDecoder, init_from_encoder

    encoder, _, _ = zoo.load_encoder(f"tiny-random-{arch}")
    c = encoder.config
    dec = TiedDecoder(c.hidden_size, 50, DecoderSettings(layers=2, heads=c.num_attention_heads, ffn=64,
                                                         max_positions=20))
    reason = why_not(arch, "decoder_init", "encoder")
    if reason:
        with pytest.raises(ConfigError, match="decoder_init=encoder cannot run"):
            init_from_encoder(dec, encoder)
        return
    init_from_encoder(dec, encoder)  # RoBERTa: the decoder's position 0 is the encoder's first real position
    emb = encoder.embeddings
    assert torch.allclose(dec.positions.weight[:20], emb.position_embeddings.weight[2:22]
                          + emb.token_type_embeddings.weight[0])


@pytest.mark.parametrize("arch", ["bert", *ARCHITECTURES])
def test_attention_dropout_override_reaches_every_attention_and_nothing_else(arch, xlt_home):
    """model.attention_dropout=0 zeroes each family's attention-probability dropout (its own config key): exactly
    one dropout per layer changes, from the config's 0.1 to 0, the hidden-state dropouts stay; null (the default)
    keeps the encoder's own."""
    name = "tiny-random" if arch == "bert" else f"tiny-random-{arch}"

    def dropouts(encoder) -> dict[str, float]:
        return {k: m.p for k, m in encoder.named_modules() if isinstance(m, torch.nn.Dropout)}

    encoder = zoo.load_encoder(name)[0]
    own, zeroed = dropouts(encoder), dropouts(zoo.load_encoder(name, attention_dropout=0.0)[0])
    changed = {k: (own[k], zeroed[k]) for k in own if own[k] != zeroed[k]}
    assert set(own) == set(zeroed) and len(changed) == encoder.config.num_hidden_layers, changed
    assert all(was == 0.1 and now == 0.0 for was, now in changed.values())
    assert any(p > 0 for p in zeroed.values())  # hidden dropout untouched
