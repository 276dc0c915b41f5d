"""TALL on tiny-random: DAE noise, the tied decoder (shapes, causal mask, shared embeddings), greedy generation
restricted to a language's tokens, one back-translation step, and the stage end to end (BLEU, exported decoder)."""
import json

import pytest
import torch

from tests.conftest import write_lines
from xlt import zoo
from xlt.config import find_config, load_stage_config
from xlt.losses.seq2seq import BackTranslation, DenoisingAutoEncoder, add_noise, sentences_from_generation
from xlt.models.decoder import DecoderSettings, TiedDecoder, greedy_decode, init_from_encoder
from xlt.stages import run_stage

EN = ["set an alarm for the morning", "play music in berlin", "remind me to call mom tomorrow",
      "the weather is cold", "show all reminders"]
JA = ["明天 早上 七点 的 闹钟", "東京 の 天気", "明天 的 天気", "早上 七点 の 闹钟"]


def test_add_noise_keeps_ends_drops_and_shuffles_locally():
    ids = list(range(100, 140))
    seq = [0] + ids + [2]
    g = torch.Generator().manual_seed(0)
    noisy = add_noise(seq, g, drop=0.0, shuffle=3.0)
    assert noisy[0] == 0 and noisy[-1] == 2 and sorted(noisy[1:-1]) == ids and noisy != seq
    assert all(abs(noisy[1:-1].index(t) - ids.index(t)) < 3 for t in ids)  # no token moves k = 3 places or more
    dropped = add_noise(seq, torch.Generator().manual_seed(0), drop=0.5, shuffle=0.0)
    assert 1 < len(dropped) - 2 < len(ids) and dropped[1:-1] == sorted(dropped[1:-1])  # order kept without shuffle
    assert len(add_noise([0, 5, 2], torch.Generator().manual_seed(1), drop=1.0)) == 3  # never empties a sentence
    blanked = add_noise(seq, torch.Generator().manual_seed(0), drop=0.0, shuffle=0.0, blank=1.0, blank_id=4)
    assert blanked[1:-1] == [4] * len(ids)
    again = add_noise(seq, torch.Generator().manual_seed(0), drop=0.0, shuffle=3.0)
    assert again == noisy  # seeded: a resumed run corrupts as an uninterrupted one


def tiny_decoder(vocab=50, hidden=32, langs=("en", "ja")):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(vocab, hidden)
    dec = TiedDecoder(hidden, vocab, DecoderSettings(layers=2, heads=2, ffn=64, dropout=0.0, max_positions=20,
                                                     languages=list(langs)))
    return emb, dec.eval()


def test_decoder_shapes_causal_mask_and_shared_embeddings():
    emb, dec = tiny_decoder()
    memory, mem_mask = torch.randn(2, 5, 32), torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    tokens = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 1]])
    lang = torch.tensor([0, 1])
    hidden = dec(emb, lang, tokens, memory, mem_mask, token_mask=torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]))
    assert hidden.shape == (2, 5, 32)  # language token + 4 target positions
    changed = tokens.clone()
    changed[:, 3] = 20
    hidden2 = dec(emb, lang, changed, memory, mem_mask)
    assert torch.allclose(hidden[0, :4], hidden2[0, :4], atol=1e-5)  # position i never sees tokens after i
    assert not torch.allclose(hidden[0, 4], hidden2[0, 4])
    other_lang = dec(emb, torch.tensor([1, 1]), tokens, memory, mem_mask)
    assert not torch.allclose(hidden[0], other_lang[0])  # the language token steers the decoder
    # no token embedding of its own: the output projection is the shared input matrix
    assert not any(p is emb.weight for p in dec.parameters())
    logits = dec.logits(emb, hidden)
    assert logits.shape == (2, 5, 50)
    logits.sum().backward()
    assert emb.weight.grad is not None and emb.weight.grad.abs().sum() > 0


def test_pre_ln_decoder_saves_loads_and_old_files_read_as_post_ln(tmp_path):
    """norm_first=True builds pre-LN layers + a final LayerNorm; save/load keeps it; a decoder.json written before
    the setting existed loads as the post-LN decoder it was."""
    import json

    torch.manual_seed(0)
    emb = torch.nn.Embedding(50, 32)
    settings = DecoderSettings(layers=2, heads=2, ffn=64, dropout=0.0, max_positions=20, norm_first=True)
    dec = TiedDecoder(32, 50, settings).eval()
    assert dec.layers.layers[0].norm_first and dec.layers.norm is not None
    memory, mem_mask, tokens = torch.randn(1, 5, 32), torch.ones(1, 5), torch.tensor([[5, 6, 7]])
    dec.save(tmp_path)
    again = TiedDecoder.load(tmp_path, 32).eval()
    assert again.settings.norm_first
    assert torch.equal(dec(emb, torch.tensor([0]), tokens, memory, mem_mask),
                       again(emb, torch.tensor([0]), tokens, memory, mem_mask))
    _, post = tiny_decoder()
    post.save(tmp_path)
    meta = json.loads((tmp_path / "decoder.json").read_text())
    del meta["norm_first"]
    (tmp_path / "decoder.json").write_text(json.dumps(meta))
    old = TiedDecoder.load(tmp_path, 32)
    assert not old.settings.norm_first and old.layers.norm is None


def test_decoder_starts_from_the_encoder_layers(xlt_home):
    """decoder_init=encoder (XLM's recipe): layer i's self-attention, feed-forward and LayerNorms are encoder layer
    i's, positions are the encoder's (+ token type 0); the cross-attention stays new; a decoder whose heads differ
    from the encoder's is refused."""
    from xlt.errors import ConfigError

    encoder, _, _ = zoo.load_encoder("tiny-random")
    c = encoder.config
    dec = TiedDecoder(c.hidden_size, 50, DecoderSettings(layers=2, heads=c.num_attention_heads,
                                                         ffn=c.intermediate_size, max_positions=20))
    cross_before = dec.layers.layers[0].multihead_attn.in_proj_weight.clone()
    init_from_encoder(dec, encoder)
    for mine, theirs in zip(dec.layers.layers, encoder.encoder.layer):
        q, k, v = mine.self_attn.in_proj_weight.chunk(3)
        assert torch.equal(q, theirs.attention.self.query.weight) and torch.equal(v, theirs.attention.self.value.weight)
        assert torch.equal(k, theirs.attention.self.key.weight)
        assert torch.equal(mine.self_attn.in_proj_bias[:c.hidden_size], theirs.attention.self.query.bias)
        assert torch.equal(mine.linear1.weight, theirs.intermediate.dense.weight)
        assert torch.equal(mine.linear2.bias, theirs.output.dense.bias)
        assert torch.equal(mine.norm3.weight, theirs.output.LayerNorm.weight)
    emb = encoder.embeddings
    assert torch.allclose(dec.positions.weight[:20], emb.position_embeddings.weight[:20]
                          + emb.token_type_embeddings.weight[0])
    assert torch.equal(dec.layers.layers[0].multihead_attn.in_proj_weight, cross_before)
    wrong = TiedDecoder(c.hidden_size, 50, DecoderSettings(layers=2, heads=c.num_attention_heads * 2,
                                                           ffn=c.intermediate_size))
    with pytest.raises(ConfigError, match="heads"):
        init_from_encoder(wrong, encoder)
    pre_ln = TiedDecoder(c.hidden_size, 50, DecoderSettings(layers=2, heads=c.num_attention_heads,
                                                            ffn=c.intermediate_size, norm_first=True))
    with pytest.raises(ConfigError, match="post-LN"):
        init_from_encoder(pre_ln, encoder)


def test_decoder_inputs_start_from_the_encoder_embedding_layer(xlt_home):
    """decoder_init=inputs: positions (+ token type 0) and the input LayerNorm are the encoder's; every layer stays
    new (and the decoder may have other heads than the encoder)."""
    from xlt.models.decoder import init_inputs_from_encoder

    encoder, _, _ = zoo.load_encoder("tiny-random")
    c, emb = encoder.config, encoder.embeddings
    dec = TiedDecoder(c.hidden_size, 50, DecoderSettings(layers=1, heads=1, max_positions=20))
    layer_before = dec.layers.layers[0].self_attn.in_proj_weight.clone()
    init_inputs_from_encoder(dec, encoder)
    assert torch.allclose(dec.positions.weight, emb.position_embeddings.weight[:20] + emb.token_type_embeddings.weight[0])
    assert torch.equal(dec.norm.weight, emb.LayerNorm.weight) and torch.equal(dec.norm.bias, emb.LayerNorm.bias)
    assert torch.equal(dec.layers.layers[0].self_attn.in_proj_weight, layer_before)
    init_inputs_from_encoder(dec, encoder, shift=1)  # slot t: the position of the token it predicts
    assert torch.allclose(dec.positions.weight, emb.position_embeddings.weight[1:21] + emb.token_type_embeddings.weight[0])


def test_greedy_decode_stays_in_allowed_tokens_and_stops():
    emb, dec = tiny_decoder()
    memory, mask = torch.randn(3, 4, 32), torch.ones(3, 4, dtype=torch.long)
    allowed = torch.zeros(3, 50, dtype=torch.bool)
    allowed[:, [2, 30, 31, 32]] = True  # 2 = eos
    out = greedy_decode(dec, emb, torch.tensor([0, 1, 0]), memory, mask, eos=2, pad=1, max_length=6,
                        allowed=allowed)
    assert out.shape[0] == 3 and out.shape[1] <= 6
    assert set(out.flatten().tolist()) <= {1, 2, 30, 31, 32}
    ids, m = sentences_from_generation(out, bos=0, eos=2, pad=1)
    for row, mrow in zip(ids, m):
        real = row[mrow.bool()].tolist()
        assert real[0] == 0 and real[-1] == 2 and 2 not in real[1:-1]


@pytest.mark.parametrize("norm_first", [False, True])
def test_greedy_decode_one_position_at_a_time_gives_what_re_reading_the_prefix_gives(norm_first):
    """The cached decode against the plain one (the whole prefix through ``TiedDecoder.forward`` at every step):
    the same ids, with padded memory, per-row length limits, an allowed set and rows that stop early."""
    torch.manual_seed(3)
    emb = torch.nn.Embedding(60, 32)
    dec = TiedDecoder(32, 60, DecoderSettings(layers=2, heads=4, ffn=64, max_positions=20, languages=["en", "ja"],
                                              norm_first=norm_first)).eval()
    torch.nn.init.normal_(dec.positions.weight, std=0.5)  # positions that matter, so a misplaced one shows
    memory, mask = torch.randn(4, 6, 32), torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 3 + [0] * 3, [1] * 6])
    lang, limit = torch.tensor([0, 1, 1, 0]), torch.tensor([12, 5, 12, 9])
    allowed = torch.ones(4, 60, dtype=torch.bool)
    allowed[:, 1] = False  # never the pad id
    allowed[2, 2:40] = False  # row 2 may say little but eos (2) and a few ids

    def reference():
        out = torch.full((4, 0), 1, dtype=torch.long)
        done = torch.zeros(4, dtype=torch.bool)
        for t in range(int(limit.max())):
            hidden = dec(emb, lang, out, memory, mask, token_mask=out != 1 if t else None)
            nxt = dec.logits(emb, hidden[:, -1]).masked_fill(~allowed, float("-inf")).argmax(-1)
            nxt = torch.where(done, torch.ones_like(nxt), nxt)
            out = torch.cat([out, nxt.unsqueeze(1)], dim=1)
            done |= (nxt == 2) | (t + 1 >= limit)
            if bool(done.all()):
                break
        return out

    with torch.no_grad():
        expected = reference()
    got = greedy_decode(dec, emb, lang, memory, mask, eos=2, pad=1, max_length=limit, allowed=allowed)
    assert torch.equal(got, expected)
    assert (got[1, 5:] == 1).all() and got.shape[1] > 5  # row 1 cut at its limit while others went on


def test_one_back_translation_step_trains_encoder_and_decoder(xlt_home):
    encoder, tok, _ = zoo.load_encoder("tiny-random")
    vocab = encoder.get_input_embeddings().weight.shape[0]
    dec = TiedDecoder(32, vocab, DecoderSettings(2, 2, 64, 0.0, 40, ["en", "ja"]))
    allowed = torch.ones(2, vocab, dtype=torch.bool)
    bt = BackTranslation(bos=tok.token_to_id("<s>"), eos=tok.token_to_id("</s>"), pad=tok.token_to_id("<pad>"),
                         allowed=allowed, max_length=10)
    seqs = [tok.encode(s).ids for s in EN[:3]]
    T = max(map(len, seqs))
    pad = tok.token_to_id("<pad>")
    ids = torch.tensor([s + [pad] * (T - len(s)) for s in seqs])
    mask = (ids != pad).long()
    batch = {"input_ids": ids, "attention_mask": mask, "targets": torch.where(mask[:, 1:].bool(), ids[:, 1:], pad),
             "lang": torch.zeros(3, dtype=torch.long), "other": torch.ones(3, dtype=torch.long)}
    encoder.train()
    dec.train()
    out = bt(encoder, batch, dec)
    assert torch.isfinite(out["loss"]) and encoder.training and dec.training  # modes restored after generating
    out["loss"].backward()
    assert dec.lang.weight.grad is not None and encoder.get_input_embeddings().weight.grad is not None
    dae = DenoisingAutoEncoder(pad)(encoder, batch, dec)
    assert torch.isfinite(dae["loss"]) and 0 <= float(dae["dae_accuracy"]) <= 1


@pytest.fixture
def pair_corpus(tmp_path):
    root = tmp_path / "data"
    for lang, lines in (("en", EN), ("ja", JA)):
        write_lines(root / "mono" / lang / "a.txt", lines * 8)
    write_lines(root / "ref" / "ja.txt", ["東京 の 天気", "明天 的 天気"])
    write_lines(root / "ref" / "en.txt", ["the weather is cold", "play music"])
    return root


def tall_cfg(root, tmp_path, *extra):
    return load_stage_config(find_config("pretrain-tall-en-ja"), [
        "model.name=tiny-random", f"corpus.data_dir={root}", "corpus.heldout_lines=3", f"output_dir={tmp_path}",
        "name=tall", "phases.0.steps=2", "phases.0.eval_every=2", "phases.0.batch_size=4", "phases.1.steps=3",
        "phases.1.eval_every=3", "phases.1.batch_size=4", "options.decoder_heads=2", "options.decoder_ffn=64",
        "options.max_decode_length=12", "options.eval_sentences=3",
        "options.reference={ja: [ref/ja.txt, ref/en.txt]}", "corpus.langs={en: [mono/en/*.txt], ja: [mono/ja/*.txt]}",
        *extra])


def test_tall_stage_end_to_end(pair_corpus, tmp_path, xlt_home):
    cfg = tall_cfg(pair_corpus, tmp_path)
    out = run_stage(cfg)
    results = json.loads((cfg.run_dir / "results.json").read_text())
    assert [p["name"] for p in results["phases"]] == ["dae", "dae-bt"]
    ev = results["phases"][1]["final_eval"]
    for key in ("roundtrip_bleu_en", "roundtrip_bleu_ja", "bleu_en_ja", "bleu_ja_en", "identical_en_ja"):
        assert 0 <= ev[key] <= 100, key
    assert ev["samples"] and ("bt_loss" in ev or "dae_loss" in ev)
    log = [json.loads(x) for x in (cfg.run_dir / "phase1-dae" / "metrics.jsonl").read_text().splitlines()]
    assert "bt_loss" not in log[-1]  # phase 1 trains the decoder by denoising only
    meta = json.loads((out / "decoder.json").read_text())
    assert meta["languages"] == ["en", "ja"] and (out / "decoder.safetensors").exists()
    encoder, _, _ = zoo.load_encoder(str(out))
    dec = TiedDecoder.load(out, encoder.config.hidden_size)
    assert dec.bias.shape[0] == encoder.get_input_embeddings().weight.shape[0]  # full vocabulary again


def test_tall_stage_with_a_decoder_from_the_encoder(pair_corpus, tmp_path, xlt_home):
    from xlt.errors import ConfigError

    cfg = tall_cfg(pair_corpus, tmp_path, "options.decoder_init=encoder", "phases.1.steps=1", "phases.1.eval_every=1")
    out = run_stage(cfg)
    encoder, _, _ = zoo.load_encoder(str(out))
    assert TiedDecoder.load(out, encoder.config.hidden_size).settings.heads == encoder.config.num_attention_heads
    with pytest.raises(ConfigError, match="decoder_init"):
        run_stage(tall_cfg(pair_corpus, tmp_path, "name=bad", "options.decoder_init=copy"))


def test_tall_needs_both_languages_named(pair_corpus, tmp_path, xlt_home):
    from xlt.errors import ConfigError
    cfg = tall_cfg(pair_corpus, tmp_path, "corpus.langs={en: [mono/en/*.txt]}")
    with pytest.raises(ConfigError, match="corpus.langs"):
        run_stage(cfg)


def test_tall_run_is_a_translator(pair_corpus, tmp_path, xlt_home):
    """The exported run translates through the translation layer exactly as the stage's evaluation did (same greedy
    outputs over the same per-language tokens), within its pair only, cached under its own name."""
    from xlt.translate import TranslationCache, TranslatorUnavailable, get_translator, translate_cached

    cfg = tall_cfg(pair_corpus, tmp_path, "options.max_decode_length=40")  # the evaluation reads whole sentences
    run_stage(cfg)
    ev = json.loads((cfg.run_dir / "results.json").read_text())["phases"][1]["final_eval"]
    translator = get_translator("tall", model=str(cfg.run_dir), max_output=40)
    assert translator.name.startswith("tall:")
    def plain(text):  # tiny-random's tokenizer does not drop <s> / </s> when decoding
        return " ".join(text.replace("<s>", "").replace("</s>", "").split())

    samples = [[plain(x) for x in s.split(": ", 1)[1].split(" => ")] for s in ev["samples"] if s.startswith("en_ja")]
    assert samples
    got = translator.translate([src for src, _ in samples], "en", "ja")
    assert [plain(g) for g in got] == [out for _, out in samples]
    cache = TranslationCache(tmp_path / "cache.sqlite")
    again, stats = translate_cached(translator, [src for src, _ in samples], "en", "ja", cache)
    assert again == got and stats["translated"] == len(set(src for src, _ in samples))
    assert cache.get_many(translator.name, "en", "ja", [samples[0][0]])
    with pytest.raises(TranslatorUnavailable, match="en-ja"):
        translator.translate(["hola"], "es", "en")


def test_translator_tall_needs_a_tall_run(tmp_path):
    from xlt.errors import ConfigError
    from xlt.translate import get_translator

    with pytest.raises(ConfigError, match="tall_model"):
        get_translator("tall", model=str(tmp_path))


def test_tall_stage_kill_and_resume_is_exact(pair_corpus, tmp_path, xlt_home):
    """Killed during DAE + back-translation, resumed: the same decoder and encoder as an uninterrupted run (noise
    and batch order are functions of (seed, step); back-translation is greedy)."""
    from safetensors.torch import load_file

    extra = ("phases.1.steps=4", "phases.1.eval_every=2")
    straight = run_stage(tall_cfg(pair_corpus, tmp_path, "name=straight", *extra))
    cfg = tall_cfg(pair_corpus, tmp_path, "name=killed", *extra)
    run_stage(cfg, stop_after=(1, 3))  # killed in phase 2 after step 3; its last checkpoint is from step 2
    assert not (cfg.run_dir / "model").exists()
    resumed = run_stage(cfg, resume=True)
    for name in ("model.safetensors", "decoder.safetensors"):
        a, b = load_file(str(straight / name)), load_file(str(resumed / name))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name


def test_a_tall_run_translates_for_translate_test_from_the_cli(pair_corpus, tmp_path, tiny_cfg):
    """README's `xlt eval RUN translation.translator=tall translation.tall_model=TALL_RUN --as translate_test`: an
    English-trained run scores Japanese through the TALL run's ja->en translations."""
    from xlt.cli import main as cli_main
    from xlt.finetune import train

    stage = tall_cfg(pair_corpus, tmp_path, "options.max_decode_length=20")
    run_stage(stage)
    run_dir = train(tiny_cfg("train.max_steps=2"))
    cli_main(["eval", str(run_dir), "translation.translator=tall", f"translation.tall_model={stage.run_dir}",
              "translation.extra_parallel=[]", "--langs", "ja", "--as", "translate_test", "--tag", "tall"])
    got = json.loads((run_dir / "results-tall.json").read_text())
    assert json.dumps(got["test_time"]["ja"]).count('"backend": "tall:') == 1
    assert 0.0 <= got["per_language"]["ja"]["intent_acc"] <= 1.0


def test_tall_nlu_reads_each_token_from_the_state_before_it(xlt_home):
    """TALL section 2 / BART's read-out: the state a word head reads at position t has read the language token and
    the tokens before t, never token t itself; sentence pooling covers every decoder state but the last."""
    from types import SimpleNamespace

    from xlt.models.encoder_decoder import decoder_states

    encoder, _, _ = zoo.load_encoder("tiny-random")
    hidden = encoder.config.hidden_size
    decoder = TiedDecoder(hidden, encoder.config.vocab_size, DecoderSettings(layers=1, heads=2, ffn=64,
                                                                     languages=["en", "de"])).eval()
    memory = torch.randn(1, 5, hidden)

    class FixedMemory(torch.nn.Module):  # the same encoder states for both inputs: only the decoder's input differs
        def get_input_embeddings(self):
            return encoder.get_input_embeddings()

        def forward(self, input_ids, attention_mask):
            return SimpleNamespace(last_hidden_state=memory)

    ids, mask, lang = torch.tensor([[0, 10, 11, 12, 2]]), torch.ones(1, 5, dtype=torch.long), torch.tensor([1])
    other = ids.clone()
    other[0, 2] = 13
    with torch.no_grad():
        _, a, pool = decoder_states(FixedMemory(), decoder, ids, mask, lang)
        _, b, _ = decoder_states(FixedMemory(), decoder, other, mask, lang)
    assert torch.allclose(a[0, :3], b[0, :3]), "the state read for token 2 has read token 2"
    assert not torch.allclose(a[0, 3], b[0, 3])  # the next token's state has read it
    assert pool.tolist() == [[0, 1, 1, 1, 1]]  # states 0..3 of 0..4: all but the last (the one that read </s>)


def test_decoder_memory_reads_the_chosen_encoder_layer_or_a_learned_mix(tmp_path, xlt_home):
    """options.memory_layer / memory_mix (issue 101): the states the decoder attends to; saved with the decoder."""
    encoder, tok, _ = zoo.load_encoder("tiny-random")
    encoder.eval()
    ids = torch.tensor([tok.encode(EN[0]).ids])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        states = encoder(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    hidden, vocab, n = encoder.config.hidden_size, encoder.config.vocab_size, len(states)

    def dec(**kw):
        return TiedDecoder(hidden, vocab, DecoderSettings(layers=1, heads=2, ffn=64, **kw))

    with torch.no_grad():
        assert torch.equal(dec().memory(encoder, ids, mask), states[-1])  # the paper's: the last layer
        assert torch.equal(dec(memory_layer=0).memory(encoder, ids, mask), states[0])
        mix = dec(memory_mix=n)
        assert torch.allclose(mix.memory(encoder, ids, mask), torch.stack(states).mean(0), atol=1e-6)  # equal start
    out = mix.memory(encoder, ids, mask)
    out.pow(2).sum().backward()
    assert mix.memory_weights.grad is not None and mix.memory_weights.grad.abs().sum() > 0
    with torch.no_grad():
        mix.memory_weights[0] = 5.0
    mix.save(tmp_path)
    again = TiedDecoder.load(tmp_path, hidden)
    assert again.settings.memory_mix == n and torch.equal(again.memory_weights, mix.memory_weights)
    with pytest.raises(ValueError, match="memory_mix"):
        dec(memory_mix=n + 1).memory(encoder, ids, mask)


def test_tall_stage_with_its_decoder_on_a_lower_layer(pair_corpus, tmp_path, xlt_home, tiny_cfg):
    from xlt.errors import ConfigError
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train

    cfg = tall_cfg(pair_corpus, tmp_path, "options.memory_layer=1", "phases.1.steps=1", "phases.1.eval_every=1")
    out = run_stage(cfg)
    encoder, _, _ = zoo.load_encoder(str(out))
    assert TiedDecoder.load(out, encoder.config.hidden_size).settings.memory_layer == 1
    # TALL's NLU fine-tune reads the same layer (the decoder's settings travel with it)
    run = train(tiny_cfg("train.method=tall", f"model.name={out}", "name=tall-layer1", "train.max_steps=2",
                         "train.eval_every=2"))
    assert evaluate_run(run)["per_language"]["en"]["n"] > 0
    with pytest.raises(ConfigError, match="memory_layer"):
        run_stage(tall_cfg(pair_corpus, tmp_path, "name=bad", "options.memory_layer=99"))


def test_tall_rows_of_a_synthetic_language_from_the_bridge(pair_corpus, tmp_path, xlt_home):
    """options.row_init=bridge: the synthetic language's rows come from the unsupervised fastText bridge (Lample et
    al. 2018b's initialisation), scored on the cipher's true pairs; a real language keeps its pretrained rows."""
    from xlt.errors import ConfigError

    bridge = ["options.row_init=bridge", "options.bridge.bridge_dim=16", "options.bridge.fasttext_epochs=1",
              "options.bridge.seed_words=40", "options.bridge.alignment=similarity_seed",
              "options.bridge.adversarial.epochs=0", "options.reference={}"]
    cfg = tall_cfg(pair_corpus, tmp_path, "name=bridge", "options.languages=[en, syn-en]",
                   "corpus.langs={en: [mono/en/*.txt], syn-en: [mono/en/*.txt]}", "model.name=tiny-random+syn-en",
                   "phases.1.steps=1", "phases.1.eval_every=1", *bridge)
    out = run_stage(cfg)
    report = json.loads((out / "xlt_stage.json").read_text())["row_init"]["syn-en"]
    assert report["rows_set"] > 10 and 0 <= report["true_row_nearest"] <= 1
    with pytest.raises(ConfigError, match="row_init=bridge"):
        run_stage(tall_cfg(pair_corpus, tmp_path, "name=bad", *bridge))
