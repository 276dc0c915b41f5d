"""Pre-training stages on tiny-random: continued MLM end to end (two phases, held-out metrics, an HF folder that
fine-tuning accepts), kill and exact resume, trimmed-vocabulary exactness of the MLM head, corpus validation."""
import json

import pytest
import torch
from safetensors.torch import load_file

from xlt import zoo
from xlt.config import find_config, load_stage_config
from xlt.core.batching import IGNORE
from xlt.core.vocab import special_ids
from xlt.data.corpora import load_corpus
from xlt.errors import ConfigError, DataError
from xlt.losses.mlm import MaskedLanguageModel, mask_tokens
from xlt.stages import run_stage
from xlt.finetune import train

LINES = ["set an alarm for the morning", "play music in berlin", "remind me to call mom tomorrow",
         "the weather is cold", "show all reminders", "明天 早上 七点 的 闹钟", "東京 の 天気", "wecker für morgen"]


@pytest.fixture
def corpus_dir(tmp_path):
    d = tmp_path / "data" / "mono" / "xx"
    d.mkdir(parents=True)
    (d / "a.txt").write_text("\n".join(LINES * 6) + "\n", encoding="utf-8")
    (d / "b.txt").write_text("\n".join(reversed(LINES * 3)) + "\n", encoding="utf-8")
    return tmp_path / "data"


def stage_cfg(corpus_dir, tmp_path, *extra):
    return load_stage_config(find_config("pretrain-mlm-ja"), [
        "model.name=tiny-random", f"corpus.data_dir={corpus_dir}", "corpus.files=[mono/xx/*.txt]",
        "corpus.heldout_lines=4", f"output_dir={tmp_path / 'runs'}", "name=mlm", "phases.0.steps=3",
        "phases.0.eval_every=3", "phases.1.steps=4", "phases.1.eval_every=2", "phases.0.batch_size=8",
        "phases.1.batch_size=8", "options.eval_sequences=8", "options.pppl_sequences=2", *extra])


def test_continued_mlm_end_to_end_and_fine_tuning_on_its_output(corpus_dir, tmp_path, xlt_home, tiny_cfg):
    cfg = stage_cfg(corpus_dir, tmp_path)
    out = run_stage(cfg)
    results = json.loads((cfg.run_dir / "results.json").read_text())
    assert [p["name"] for p in results["phases"]] == ["head", "all"]
    head, full = results["phases"]
    assert head["parameters"]["trainable"] < full["parameters"]["trainable"]  # phase 1: the head only
    for p in results["phases"]:
        ev = p["final_eval"]
        assert ev["heldout_masked"] > 0 and ev["heldout_pppl_tokens"] > 0 and ev["heldout_pppl"] > 1
        assert 0 < ev["heldout_mlm_loss"] < 20
    assert results["corpus"]["heldout_sequences"] == 8  # 4 lines of each of the 2 files, never trained on
    # an ordinary HF folder over the full vocabulary; embedding rows the corpus never used are the pretrained ones
    encoder, tok, _ = zoo.load_encoder(str(out))
    base, _, _ = zoo.load_encoder("tiny-random")
    assert encoder.get_input_embeddings().weight.shape == base.get_input_embeddings().weight.shape
    head_weights = load_file(str(out / "mlm_head.safetensors"))
    assert head_weights["bias"].shape[0] == encoder.get_input_embeddings().weight.shape[0]  # full vocabulary
    assert (out / "xlt_stage.json").exists()
    seen = {i for line in LINES for i in tok.encode(line).ids} | set(special_ids(tok))  # specials are always kept
    unused = next(i for i in range(tok.get_vocab_size()) if i not in seen)  # never in the corpus
    used = tok.encode("alarm").ids[1]
    emb, emb0 = encoder.get_input_embeddings().weight, base.get_input_embeddings().weight
    assert torch.equal(emb[unused], emb0[unused]) and not torch.equal(emb[used], emb0[used])
    # fine-tuning accepts it as model.name and as model.init_from
    for how in (f"model.name={out}", f"model.init_from={out}"):
        run = train(tiny_cfg(how, "train.max_steps=2", "train.eval_every=2", f"name=ft-{how[6:10]}"))
        assert (run / "best" / "model.safetensors").exists()


def test_stage_kill_and_resume_is_exact(corpus_dir, tmp_path, xlt_home):
    straight = run_stage(stage_cfg(corpus_dir, tmp_path, "name=straight"))
    cfg = stage_cfg(corpus_dir, tmp_path, "name=killed")
    run_stage(cfg, stop_after=(1, 3))  # killed in phase 2 after step 3; its last checkpoint is from step 2
    assert not (cfg.run_dir / "model").exists()
    assert (cfg.run_dir / "phase1-head" / "final" / "model.safetensors").exists()
    resumed = run_stage(cfg, resume=True)
    a, b = load_file(str(straight / "model.safetensors")), load_file(str(resumed / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    log = [json.loads(x) for x in (cfg.run_dir / "phase2-all" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [2, 4]


def test_mlm_head_over_a_trimmed_vocabulary_is_exact():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(50, 8)
    encoder = type("E", (), {"get_input_embeddings": lambda self: emb})()
    head = MaskedLanguageModel(8).resize(50)
    head.bias.data.normal_()
    kept = torch.tensor([0, 3, 7, 11, 20, 49])
    small = torch.nn.Embedding(len(kept), 8)
    small.weight.data = emb.weight.data[kept]
    trimmed = MaskedLanguageModel(8).resize(len(kept))
    trimmed.load_state_dict({**head.state_dict(), "bias": head.bias.data[kept]})
    h = torch.randn(5, 8)
    small_encoder = type("E", (), {"get_input_embeddings": lambda self: small})()
    assert torch.allclose(trimmed.logits(small_encoder, h), head.logits(encoder, h)[:, kept], atol=1e-6)


def test_masking_is_deterministic_and_never_touches_specials():
    ids = torch.randint(5, 40, (4, 20))
    ids[:, 0], ids[:, -1] = 0, 2
    attention = torch.ones_like(ids)
    special = (ids == 0) | (ids == 2)
    a = mask_tokens(ids, attention, special, 4, 40, torch.Generator().manual_seed(1), 0.5)
    b = mask_tokens(ids, attention, special, 4, 40, torch.Generator().manual_seed(1), 0.5)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert (a[1][special] == IGNORE).all() and (a[1] != IGNORE).any()
    assert torch.equal(a[0][a[1] == IGNORE], ids[a[1] == IGNORE])


def test_corpus_errors_and_cache(corpus_dir, tmp_path, xlt_home):
    from xlt.core.vocab import prepare_tokenizer
    folder = zoo.resolve("tiny-random")
    tok = prepare_tokenizer(zoo.load_tokenizer(folder))
    cfg = stage_cfg(corpus_dir, tmp_path).corpus
    first = load_corpus(cfg, tok, folder / "tokenizer.json", tmp_path / "cache")
    again = load_corpus(cfg, tok, folder / "tokenizer.json", tmp_path / "cache")
    assert first.train == again.train and len(list((tmp_path / "cache").glob("*.safetensors"))) == 2
    cfg.max_length = 6  # long lines are split into pieces, never cut
    split = load_corpus(cfg, tok, folder / "tokenizer.json", tmp_path / "cache")
    assert max(map(len, split.train)) <= 6 and split.report["train_tokens"] > first.report["train_tokens"]
    cfg.files = ["mono/zz/*.txt"]
    with pytest.raises(DataError, match="no file matches"):
        load_corpus(cfg, tok, folder / "tokenizer.json", tmp_path / "cache")
    with pytest.raises(ConfigError, match="matches no parameter"):
        run_stage(stage_cfg(corpus_dir, tmp_path, "phases.0.trainable=[head.*]", "name=bad"))


def test_a_phase_can_start_from_an_earlier_phase(corpus_dir, tmp_path, xlt_home):
    """phases[].start_from: the third phase starts where the FIRST ended (TreLM's transfer phase branches from the
    commonality phase); with lr 0 it ends there too.  Two names need the stage's merge, unknown names are errors."""
    from xlt.errors import ConfigError

    def phases(start_from):
        return ("phases=[{name: head, steps: 3, eval_every: 3, batch_size: 8, lr: 1.0e-3, trainable: ['objectives.*']},"
                " {name: all, steps: 3, eval_every: 3, batch_size: 8},"
                f" {{name: again, steps: 2, eval_every: 2, batch_size: 8, lr: 0.0, start_from: {start_from}}}]")

    cfg = stage_cfg(corpus_dir, tmp_path, phases("[head]"))
    run_stage(cfg)
    head = load_file(str(cfg.run_dir / "phase1-head" / "final" / "model.safetensors"))
    full = load_file(str(cfg.run_dir / "phase2-all" / "final" / "model.safetensors"))
    again = load_file(str(cfg.run_dir / "phase3-again" / "final" / "model.safetensors"))
    assert all(torch.equal(head[k], again[k]) for k in head)
    assert not all(torch.equal(full[k], again[k]) for k in full)
    with pytest.raises(ConfigError, match="not an earlier phase"):
        run_stage(stage_cfg(corpus_dir, tmp_path, "name=bad", phases("[later]")))
    with pytest.raises(ConfigError, match="cannot merge"):
        run_stage(stage_cfg(corpus_dir, tmp_path, "name=merge", phases("[head, all]")))


def test_a_stage_folder_is_overwritten_only_when_asked(corpus_dir, tmp_path, xlt_home):
    from xlt.errors import XltError

    cfg = stage_cfg(corpus_dir, tmp_path, "phases=[{name: one, steps: 2, eval_every: 2, batch_size: 8}]")
    run_stage(cfg)
    with pytest.raises(XltError, match="--overwrite"):
        run_stage(cfg)
    with pytest.raises(XltError, match="contradict"):
        run_stage(cfg, resume=True, overwrite=True)
    (cfg.run_dir / "marker").write_text("from the first run")
    run_stage(cfg, overwrite=True)
    assert not (cfg.run_dir / "marker").exists() and (cfg.run_dir / "results.json").exists()


@pytest.mark.parametrize("trim", ["true", "false"])
def test_attention_dropout_applies_while_pre_training_and_the_export_keeps_the_base_value(corpus_dir, tmp_path,
                                                                                        xlt_home, trim):
    """model.attention_dropout=0 changes what the stage trains (other weights than the stock run's, same seed) and
    not the exported folder's config (fine-tuning on it starts from the base's own 0.1)."""
    outs = {p: run_stage(stage_cfg(corpus_dir, tmp_path, f"name=ad-{p}", f"model.trim_vocab={trim}",
                                   *([f"model.attention_dropout={p}"] if p != "own" else [])))
            for p in ("own", "0")}
    for out in outs.values():
        assert json.loads((out / "config.json").read_text())["attention_probs_dropout_prob"] == 0.1
    a, b = (load_file(str(outs[p] / "model.safetensors")) for p in ("own", "0"))
    assert a.keys() == b.keys() and not all(torch.equal(a[k], b[k]) for k in a)
