"""Unicoder objectives on tiny-random: word recovery's attention mixture (shapes, padding, the paper's formula),
gradients through every objective, the shared MLM head."""
import json

import pytest
import torch

from tests.conftest import write_lines
from xlt import zoo
from xlt.core.batching import IGNORE
from xlt.losses.mlm import MaskedLanguageModel
from xlt.losses.unicoder import ParaphraseClassifier, SharedHeadMLM, WordRecovery


def test_word_recovery_mixture_is_the_papers_attention():
    torch.manual_seed(0)
    wr = WordRecovery(8)
    x, y = torch.randn(2, 5, 8), torch.randn(2, 4, 8)
    y_mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    mixed, attention = wr.mixture(x, y, y_mask)
    assert mixed.shape == (2, 5, 8) and attention.shape == (2, 5, 4)
    assert torch.allclose(attention.sum(-1), torch.ones(2, 5))
    assert torch.all(attention[1, :, 2:] == 0)  # padding of Y gets no weight
    # A_ij = W [x_i, y_j, x_i * y_j], written out
    naive = torch.stack([torch.stack([wr.score(torch.cat([x[0, i], y[0, j], x[0, i] * y[0, j]]))[0]
                                      for j in range(4)]) for i in range(5)])
    assert torch.allclose(attention[0], naive.softmax(-1), atol=1e-6)
    assert torch.allclose(mixed[0], naive.softmax(-1) @ y[0], atol=1e-5)


def test_objectives_train_through_the_shared_head(xlt_home):
    encoder, _, _ = zoo.load_encoder("tiny-random")
    H, V = encoder.config.hidden_size, encoder.config.vocab_size
    head = MaskedLanguageModel(H).resize(V)
    ids = torch.randint(5, V, (3, 7))
    mask = torch.ones(3, 7, dtype=torch.long)
    labels = torch.full((3, 7), IGNORE)
    labels[:, 2] = ids[:, 2]
    out = SharedHeadMLM("tlm")(encoder, {"input_ids": ids, "attention_mask": mask, "mlm_labels": labels},
                               lm_head=head)
    assert set(out) == {"loss", "tlm_loss", "tlm_accuracy"}
    wr = WordRecovery(H)
    batch = {"input_ids": ids, "attention_mask": mask, "other_ids": ids[:, :5], "other_mask": mask[:, :5],
             "recover_labels": torch.where(mask.bool(), ids, torch.full_like(ids, IGNORE))}
    got = wr(encoder, batch, lm_head=head)
    got["loss"].backward()
    assert wr.score.weight.grad is not None and wr.score.weight.grad.abs().sum() > 0
    assert encoder.get_input_embeddings().weight.grad.abs().sum() > 0 and head.bias.grad.abs().sum() > 0
    para = ParaphraseClassifier(H)
    res = para(encoder, {"input_ids": ids, "attention_mask": mask, "paraphrase": torch.tensor([1, 0, 1])})
    assert torch.isfinite(res["loss"]) and 0 <= float(res["paraphrase_accuracy"]) <= 1


def test_hard_negatives_exclude_the_translation_and_its_copies():
    from xlt.stages.hard_negatives import mine, train_dan

    torch.manual_seed(0)
    # "translations": other-side token t + 50 for English token t; sentences share words so negatives are close
    english = [[0, 5, 6, 7, 2], [0, 5, 6, 8, 2], [0, 9, 10, 11, 2], [0, 9, 10, 12, 2], [0, 5, 6, 7, 2],
               [0, 13, 14, 2]]
    other = [[0] + [t + 50 for t in s[1:-1]] + [2] for s in english]
    lang = ["de"] * 5 + ["es"]
    dan = train_dan(english, other, torch.randn(70, 16), {0, 2}, seed=1, steps=200, batch_size=6, lr=1e-2)
    negatives, report = mine(english, other, lang, dan, {0, 2}, seed=1)
    for i, j in enumerate(negatives):
        assert j != i and other[j] != other[i]  # pairs 0 and 4 have the same text: never each other's negative
        assert lang[j] == lang[i] or lang[i] == "es"  # es has no other sentence: a random one of another language
    assert negatives[1] in (0, 4) and negatives[2] == 3  # the nearest sentence that is not the translation
    assert report["hard_negatives"] == 5 and report["random_negatives"] == 1  # es has no other candidate
    assert report["dan_retrieval_accuracy"] >= 4 / 6


def test_code_switched_documents_alternate_languages_within_a_file():
    from xlt.stages.unicoder_data import code_switched_documents, pair_input

    assert pair_input([0, 5, 2], [0, 7, 8, 2], eos=2) == [0, 5, 2, 2, 7, 8, 2]
    english = [[0, 10 + i, 2] for i in range(7)]
    other = [[0, 100 + i, 101 + i, 2] for i in range(7)]
    file = [0, 0, 0, 0, 0, 1, 1]
    docs = code_switched_documents(english, other, ["de"] * 7, file, max_length=8, in_document={0, 1})
    for d in docs:
        assert d.ids[0] == 0 and d.ids[-1] == 2 and len(d.ids) <= 8
        assert all(a != b for a, b in zip(d.langs, d.langs[1:]))  # languages alternate
        assert len({file[d.first_pair + k] for k in range(len(d.langs))}) == 1  # never across files
    assert docs[0].ids == [0, 10, 2, 101, 102, 2, 12, 2] and docs[0].langs == ["en", "de", "en"]  # 8 tokens
    assert docs[1].langs[0] == "de"  # the next document starts in the other language
    assert code_switched_documents(english, other, ["de"] * 7, file, 8, in_document={1})[0].first_pair == 5


def test_interleaved_batches_code_their_objective():
    from xlt.stages.unicoder_data import Interleaved

    plan = Interleaved(["mlm", "tlm"], {"mlm": [3] * 10, "tlm": [4] * 3}, ["mlm", "tlm", "paraphrase"])
    batches = plan.batches(batch_size=2, bucket_size=2, seed=1, epoch=0)
    decoded = [plan.decode(b) for b in batches]
    assert [o for o, _ in decoded] == ["mlm", "tlm"] * 5  # in turn, the shorter task repeated
    assert sorted(i for o, idx in decoded if o == "mlm" for i in idx) == list(range(10))
    assert all(0 <= i < 3 for o, idx in decoded if o == "tlm" for i in idx)
    assert batches == plan.batches(batch_size=2, bucket_size=2, seed=1, epoch=0)  # deterministic: resumable


def test_language_balanced_batches_draw_each_language_equally():
    """Unicoder samples its languages with equal probability: a language with a tenth of the pairs gets as many
    batches as the largest, each batch one language; the total number of batches is unchanged."""
    from xlt.stages.unicoder_data import language_balanced_batches

    groups = ["de"] * 40 + ["es"] * 20 + ["tr"] * 4
    batches = language_balanced_batches([5] * 64, groups, batch_size=4, bucket_size=2, seed=1, epoch=0)
    langs = [{groups[i] for i in b} for b in batches]
    assert all(len(g) == 1 for g in langs) and len(batches) == 10 + 5 + 1
    counts = {g: sum(x == {g} for x in langs) for g in ("de", "es", "tr")}
    assert max(counts.values()) - min(counts.values()) <= 1
    assert batches == language_balanced_batches([5] * 64, groups, 4, 2, 1, 0)  # deterministic: resumable


def test_unicoder_stage_with_the_papers_sampling_and_schedule(unicoder_data, tmp_path, xlt_home):
    from xlt.core.loop import inverse_sqrt
    from xlt.stages import run_stage

    f = inverse_sqrt(4)
    assert [round(f(s), 3) for s in (0, 3, 4, 15)] == [0.25, 1.0, round((4 / 5) ** 0.5, 3), 0.5]
    cfg = unicoder_cfg(unicoder_data, tmp_path, "options.language_sampling=equal", "phases.1.schedule=inverse_sqrt",
                       "name=paper")
    run_stage(cfg)
    results = json.loads((cfg.run_dir / "results.json").read_text())
    assert results["phases"][1]["final_eval"]["lr"] > 0  # inverse square root: never decays to 0 at the end


EN = ["the house is small", "play some music", "set an alarm for seven", "the weather is cold today",
      "show my reminders", "call my mother", "good morning to you", "where is the station", "i like green tea",
      "turn the lights off", "what time is it", "open the window please"]
DE = ["das haus ist klein", "spiel etwas musik", "stell einen wecker auf sieben", "das wetter ist heute kalt",
      "zeig meine erinnerungen", "ruf meine mutter an", "guten morgen dir", "wo ist der bahnhof",
      "ich mag grünen tee", "mach das licht aus", "wie spät ist es", "öffne bitte das fenster"]


@pytest.fixture
def unicoder_data(tmp_path):
    root = tmp_path / "data"
    for lang, lines in (("en", EN), ("de", DE)):
        write_lines(root / "mono" / lang / "a.txt", lines * 3)
        for name in ("bible-x", "gettext"):
            write_lines(root / "parallel" / "en-de" / f"{name}.{lang}", lines * 2)
    return root


def unicoder_cfg(root, tmp_path, *extra):
    from xlt.config import find_config, load_stage_config
    return load_stage_config(find_config("pretrain-unicoder"), [
        "model.name=tiny-random", f"corpus.data_dir={root}", "corpus.files=[mono/*/*.txt]",
        "corpus.parallel={de: [parallel/en-de/*.de]}", "corpus.heldout_lines=6", "corpus.max_length=24",
        f"output_dir={tmp_path / 'runs'}", "name=uni", "phases.0.steps=5", "phases.0.eval_every=5",
        "phases.0.batch_size=4", "phases.1.steps=5", "phases.1.eval_every=5", "phases.1.batch_size=4",
        "options.document_max_length=40", "options.dan_steps=20", "options.dan_batch_size=8",
        "options.eval_examples=8", *extra])


def test_unicoder_stage_end_to_end(unicoder_data, tmp_path, xlt_home):
    from safetensors.torch import load_file

    from xlt.stages import run_stage

    cfg = unicoder_cfg(unicoder_data, tmp_path)
    out = run_stage(cfg)
    results = json.loads((cfg.run_dir / "results.json").read_text())
    ev = results["phases"][1]["final_eval"]
    for task in ("mlm", "tlm", "word_recovery", "paraphrase", "cs_mlm"):
        assert ev[f"heldout_{task}_examples"] > 0 and 0 <= ev[f"heldout_{task}_accuracy"] <= 1, task
        assert f"{task}_loss" in ev  # every task trained in the window (a batch of each in turn)
    data = results["export"]["data"]
    assert data["documents"] > 0 and data["parallel"]["pairs_per_language"] == {"de": 36}
    negatives = data["paraphrase_negatives"]["train_report"]
    assert negatives["hard_share"] > 0.5
    assert (out / "mlm_head.safetensors").exists() and load_file(str(out / "mlm_head.safetensors"))["bias"].numel()


def test_unicoder_ablation_trains_only_its_tasks(unicoder_data, tmp_path, xlt_home):
    from xlt.stages import run_stage

    only = "{mlm: 1.0, tlm: 1.0}"
    cfg = unicoder_cfg(unicoder_data, tmp_path, f"phases.0.objectives={only}", f"phases.1.objectives={only}",
                       "name=mlm-tlm")
    run_stage(cfg)
    ev = json.loads((cfg.run_dir / "results.json").read_text())["phases"][1]["final_eval"]
    assert "heldout_tlm_accuracy" in ev and "heldout_word_recovery_accuracy" not in ev
    assert "word_recovery_loss" not in ev and not (cfg.run_dir / "paraphrase_negatives.json").exists()


def test_unicoder_kill_and_resume_is_exact(unicoder_data, tmp_path, xlt_home):
    from safetensors.torch import load_file

    from xlt.stages import run_stage

    extra = ("phases.1.eval_every=2",)
    straight = run_stage(unicoder_cfg(unicoder_data, tmp_path, "name=straight", *extra))
    cfg = unicoder_cfg(unicoder_data, tmp_path, "name=killed", *extra)
    run_stage(cfg, stop_after=(1, 3))  # killed in phase 2 after step 3 (a paraphrase batch); resumes from step 2
    resumed = run_stage(cfg, resume=True)
    a, b = load_file(str(straight / "model.safetensors")), load_file(str(resumed / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_unicoder_examples_per_task(unicoder_data, tmp_path, xlt_home):
    """TLM masks both halves, word recovery asks for every real token of the recovered side, paraphrase positives
    are translations and negatives are not, the held-out paraphrase set is balanced."""
    from xlt import zoo
    from xlt.core.vocab import prepare_tokenizer
    from xlt.data.corpora import load_corpus
    from xlt.stages.unicoder import Unicoder

    cfg = unicoder_cfg(unicoder_data, tmp_path)
    folder = zoo.resolve("tiny-random")
    tok = prepare_tokenizer(zoo.load_tokenizer(folder))
    corpus = load_corpus(cfg.corpus, tok, folder / "tokenizer.json", tmp_path / "cache")
    stage = Unicoder(cfg, tok, corpus, None)
    encoder, _, _ = zoo.load_encoder("tiny-random")
    stage.objectives(encoder)  # mines the paraphrase negatives
    n = len(stage.pairs)
    tlm = stage.examples("tlm", list(range(16)), list(range(16)), heldout=False)
    sep = [row.tolist().index(stage.eos) for row in tlm["input_ids"]]  # end of the English half
    masked = tlm["mlm_labels"] != IGNORE
    assert any(masked[r, :sep[r]].any() for r in range(16)) and any(masked[r, sep[r] + 1:].any() for r in range(16))
    wr = stage.examples("word_recovery", [0, 1, 2, 3], [1, 2, 3, 4], heldout=False)
    real = wr["attention_mask"].bool() & ~torch.isin(wr["input_ids"], stage.specials)
    assert torch.equal(wr["recover_labels"] != IGNORE, real)
    para = stage.examples("paraphrase", [0, n], [5, 5], heldout=False)
    assert para["paraphrase"].tolist() == [1, 0] and stage.negatives[0] != 0
    assert stage.pairs.other[stage.negatives[0]] != stage.pairs.other[0]
    held = stage.heldout_examples("paraphrase")
    m = len(stage.heldout_pairs)
    assert sum(e < m for e in held) == sum(e >= m for e in held) > 0


def test_tlm_restarts_the_translations_positions_as_xlm_does(unicoder_data, tmp_path, xlt_home):
    """TLM's pair ``<s> A </s></s> B </s>`` counts B's positions from 0 again (Lample & Conneau 2019), so the k-th
    token of each side shares a position embedding; the encoder reads them (the loss changes), and
    ``options.tlm_reset_positions=false`` gives the running positions back (no position_ids: the encoder's own)."""
    from xlt import zoo
    from xlt.core.vocab import prepare_tokenizer
    from xlt.data.corpora import load_corpus
    from xlt.stages.unicoder import Unicoder
    from xlt.stages.unicoder_data import pair_input, pair_positions

    assert pair_positions([0, 5, 6, 2], [0, 7, 2]) == [0, 1, 2, 3, 0, 1, 2]
    assert len(pair_input([0, 5, 6, 2], [0, 7, 2], 2)) == 7
    folder = zoo.resolve("tiny-random")
    tok = prepare_tokenizer(zoo.load_tokenizer(folder))
    stages = {}
    for reset in (True, False):
        cfg = unicoder_cfg(unicoder_data, tmp_path, f"options.tlm_reset_positions={str(reset).lower()}")
        corpus = load_corpus(cfg.corpus, tok, folder / "tokenizer.json", tmp_path / "cache")
        stages[reset] = Unicoder(cfg, tok, corpus, None)
    tlm = stages[True].examples("tlm", [0, 1, 2], [1, 2, 3], heldout=False)
    plain = stages[False].examples("tlm", [0, 1, 2], [1, 2, 3], heldout=False)
    assert "position_ids" not in plain and torch.equal(plain["input_ids"], tlm["input_ids"])
    pairs = stages[True].pairs
    for r in range(3):
        a, b = pairs.english[r], pairs.other[r]
        assert tlm["position_ids"][r, :len(a) + len(b)].tolist() == list(range(len(a))) + list(range(len(b)))
    encoder, _, _ = zoo.load_encoder("tiny-random")
    encoder.eval()
    head = MaskedLanguageModel(encoder.config.hidden_size).resize(encoder.config.vocab_size)
    assert not torch.allclose(head(encoder, tlm)["loss"], head(encoder, plain)["loss"])
