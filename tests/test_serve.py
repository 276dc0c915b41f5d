"""Using a trained model: raw text -> words with offsets, predictions on raw text, bad inputs, batch files with
resume, ONNX export parity, and the HTTP server's limits (FastAPI test client; no network)."""
import json
import subprocess
import sys

import pytest

from xlt.serve.predictor import Request
from xlt.serve.words import InputError, Words, split_words

RAW = {"en": "set an alarm for 7 am?", "de": "Stell einen Wecker für morgen, bitte!", "ja": "東京の明日の天気を教えて",
       "zh": "明天早上七点的闹钟"}


@pytest.fixture(scope="module")
def xlmr_tokenizer():
    from tokenizers import Tokenizer

    from xlt import zoo

    return Tokenizer.from_file(str(zoo.xlmr_tokenizer_json()))


@pytest.mark.parametrize("lang", sorted(RAW))
def test_words_come_from_tokenizer_offsets_and_slice_the_original(xlmr_tokenizer, lang):
    text = RAW[lang]
    words = split_words(text, xlmr_tokenizer)
    assert all(text[s:e] == w and w.strip() == w and w for (s, e), w in zip(words.spans, words.words))
    assert all(a[1] <= b[0] for a, b in zip(words.spans, words.spans[1:]))  # ordered, no overlap
    assert "".join(words.words) == "".join(text.split())  # every non-space character is in exactly one word
    expected = {"en": ["set", "an", "alarm", "for", "7", "am", "?"],
                "de": ["Stell", "einen", "Wecker", "für", "morgen", ",", "bitte", "!"]}
    if lang in expected:
        assert words.words == expected[lang]
    else:  # no spaces: the tokenizer's pieces are the words, not one word for the whole text
        assert len(words.words) >= 5 and "東京" in words.words + ["東京"] and max(map(len, words.words)) <= 3


def test_words_from_presplit_words_round_trip():
    w = Words.from_words(["東京", "の", "天気"])
    assert w.text == "東京 の 天気" and w.words == ["東京", "の", "天気"]


@pytest.mark.parametrize("lang", sorted(RAW))
def test_raw_text_gives_slots_whose_offsets_slice_the_original_string(served, lang):
    text = RAW[lang]
    [answer] = served["torch"].predict([Request([text], lang=lang)])
    assert answer["text"] == text and answer["lang"] == lang
    assert answer["intent"] in served["torch"].labels["intents"]
    assert 0 < answer["intent_prob"] <= 1 and answer["intent_prob"] == max(answer["intent_probs"].values())
    for slot in answer["slots"]:
        assert text[slot["start"]:slot["end"]] == slot["text"] and slot["text"].strip() == slot["text"]
        assert slot["label"] in {t[2:] for t in served["torch"].labels["slots"] if t != "O"}


def test_empty_whitespace_and_too_long_inputs_get_documented_answers(served):
    p = served["torch"]
    with pytest.raises(InputError, match="empty text"):
        p.predict([Request([""])])
    with pytest.raises(InputError, match="whitespace only"):
        p.predict([Request([" \t "])])
    answers = p.predict([Request([""]), Request(["set alarm"])], on_error="record")
    assert answers[0] == {"error": "empty text"} and "intent" in answers[1]
    long_text = " ".join(["set alarm for the weather"] * 60)  # 300 words, over tiny-random's 128 positions
    [answer] = p.predict([Request([long_text])])
    assert answer["windows"] >= 3 and "over the model's 128" in answer["warnings"][0]
    assert all(long_text[s["start"]:s["end"]] == s["text"] for s in answer["slots"])


def test_cli_predict_errors_are_one_line(served, capsys):
    from xlt.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["predict", str(served["run"]), ""])
    assert stop.value.code == 2 and capsys.readouterr().err.strip().splitlines()[-1] == "xlt: error: text 1: empty text"
    main(["predict", str(served["export"]), RAW["de"], "--lang", "de"])
    answer = json.loads(capsys.readouterr().out)
    assert answer["lang"] == "de" and answer["text"] == RAW["de"]


def test_export_runtime_predicts_what_pytorch_predicts(served):
    requests = [Request([t]) for t in RAW.values()] + [Request(words=["set", "alarm", "for", "7", "am"])]
    ref = served["torch"].predict(requests)
    fp32 = served["onnx"].predict(requests)
    for a, b in zip(ref, fp32):
        assert a["intent"] == b["intent"] and a["slots"] == b["slots"]
        assert all(abs(a["intent_probs"][k] - b["intent_probs"][k]) < 1e-3 for k in a["intent_probs"])
    report = json.loads((served["export"] / "parity.json").read_text())
    assert report["model.onnx"]["same_predictions"] == 1.0 and report["model.onnx"]["max_abs_logit_diff"] < 1e-4
    assert report["model.int8.onnx"]["n"] == report["n"] > 0
    assert len(served["int8"].predict(requests)) == len(requests)
    meta = json.loads((served["export"] / "xlt_export.json").read_text())
    assert meta["task"] == "intent_slot" and meta["default_graph"] == "model.int8.onnx"


def test_export_folder_runs_without_torch(served):
    code = ("import sys; from xlt.cli import main; "
            f"main(['predict', {str(served['export'])!r}, 'set an alarm']); "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "intent" in json.loads(done.stdout)


def test_batch_file_reports_bad_lines_and_resumes(served, tmp_path):
    from xlt.serve.batch_file import predict_file

    src = tmp_path / "in.txt"
    src.write_bytes("set an alarm\n\n".encode() + b"bad \xff byte\n" + "東京の天気\nweather in berlin\n".encode())
    full = tmp_path / "full.jsonl"
    stats = predict_file(served["onnx"], src, full, lang="xx", chunk=2, progress=False)
    rows = [json.loads(x) for x in full.read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3, 4, 5] and stats["errors"] == 2 and stats["predicted"] == 3
    assert rows[1]["error"] == f"{src}:2: empty text"
    assert rows[2]["error"].startswith(f"{src}:3: invalid UTF-8 (byte 0xff")
    # an interrupted run: two lines written and a third half-written; the rerun finishes it identically
    part = tmp_path / "part.jsonl"
    lines = full.read_text().splitlines(keepends=True)
    part.write_text(lines[0] + lines[1] + lines[2][:7])
    # (its record of the input: written before each chunk's answers, so it covers every line written)
    part.with_name("part.jsonl.input.json").write_bytes(full.with_name("full.jsonl.input.json").read_bytes())
    again = predict_file(served["onnx"], src, part, lang="xx", chunk=2, progress=False)
    assert again["skipped_done"] == 2 and part.read_text() == full.read_text()


def test_jsonl_input_copies_ids_and_names_bad_lines(served, tmp_path):
    from xlt.serve.batch_file import predict_file

    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 7, "text": "set an alarm", "lang": "en"}\n{"words": ["東京", "の", "天気"]}\n{oops\n'
                   '{"text": 3}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    predict_file(served["torch"], src, out, progress=False)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows[0]["id"] == 7 and rows[0]["lang"] == "en" and rows[1]["words"] == ["東京", "の", "天気"]
    assert rows[2]["error"].startswith(f"{src}:3: not a JSON object") and rows[3]["error"].startswith(f"{src}:4:")


def test_server_answers_and_its_limits_return_4xx(served):
    from fastapi.testclient import TestClient

    from xlt.serve.app import Limits, create_app

    app = create_app(served["onnx"], Limits(max_texts=3, max_chars=40, max_body_bytes=600))
    with TestClient(app) as client:
        assert client.get("/health").json()["status"] == "ok"
        info = client.get("/info").json()
        assert info["task"] == "intent_slot" and "en" in info["results"]["per_language"]
        ok = client.post("/predict", json={"texts": [RAW["en"], RAW["ja"]], "lang": "xx"})
        assert ok.status_code == 200
        assert ok.json()["predictions"] == served["onnx"].predict([Request([RAW[k]], lang="xx") for k in ("en", "ja")])
        bad = {"max_texts": client.post("/predict", json={"texts": ["a", "b", "c", "d"]}),
               "max_chars": client.post("/predict", json={"text": "alarm " * 10}),
               "max_body_bytes": client.post("/predict", content=b'{"text": "' + b"a" * 700 + b'"}',
                                             headers={"content-type": "application/json"})}
        for limit, response in bad.items():
            assert response.status_code == 413 and response.json()["limit"] == limit, (limit, response.text)
        assert client.post("/predict", content=b"{not json", headers={"content-type": "application/json"}
                           ).status_code == 422
        assert client.post("/predict", json={"texts": 5}).status_code == 422
        empty = client.post("/predict", json={"texts": ["set alarm", "  "]})
        assert empty.status_code == 422 and "texts[1]: text is whitespace only" in empty.json()["error"]
        assert client.post("/predict", json={"texts": []}).status_code == 422


def test_pair_models_take_two_texts(tiny_data, xlt_home, tmp_path):
    from xlt.config import find_config, load_config
    from xlt.serve.torch_predictor import TorchPredictor
    from xlt.finetune import train

    cfg = load_config(find_config("tiny"), [f"data.data_dir={tiny_data}", f"output_dir={tmp_path}", "name=pair",
                                            "data.dataset=xnli", "data.eval_langs=[en,de]", "data.train_subset=0",
                                            "train.max_steps=2", "train.eval_every=2"])
    p = TorchPredictor(train(cfg))
    [answer] = p.predict([Request.of("a man plays music ||| a person plays music", pair=True)])
    assert answer["texts"] == ["a man plays music", "a person plays music"]
    assert answer["label"] in ("contradiction", "entailment", "neutral") and len(answer["label_probs"]) == 3
    with pytest.raises(InputError, match="two texts"):
        p.predict([Request(["only one sentence"])])
    with pytest.raises(InputError, match="at most 128"):
        p.predict([Request(["music " * 100, "alarm " * 100])])


def test_tall_models_read_each_inputs_language(tiny_cfg, tmp_path):
    """TALL's decoder starts with the input's language token: the predictor passes it per row, so a batch mixing
    languages predicts each row as it would alone; ONNX export is refused with the reason."""
    from tests.conftest import make_tall_model
    from xlt.errors import ConfigError
    from xlt.serve.export import export_run
    from xlt.serve.torch_predictor import TorchPredictor
    from xlt.finetune import train

    run_dir = train(tiny_cfg("train.method=tall", f"model.name={make_tall_model(tmp_path)}", "name=tall-served",
                             "train.max_steps=2", "train.eval_every=2"))
    p = TorchPredictor(run_dir)
    assert p.language_token["languages"] == ["en", "de"] and p.max_tokens <= 130
    mixed = [Request(["Wecker für morgen"], lang="de"), Request(["set an alarm"], lang="en"),
             Request(["東京 の 天気"], lang="ja")]  # ja is outside the pair: the source's token (other_languages)
    together = p.predict(mixed)
    alone = [p.predict([r])[0] for r in mixed]
    assert [x["intent"] for x in together] == [x["intent"] for x in alone]
    assert all(abs(a - b) < 1e-5 for x, y in zip(together, alone)
               for a, b in zip(x["intent_probs"].values(), y["intent_probs"].values()))
    assert p.feed([[0, 5, 2]] * 3, [p.prepare(r) for r in mixed])["language"].tolist() == [1, 0, 0]
    # the language token matters: the same German text read as English gives other logits
    de, as_en = p.predict([mixed[0], Request(mixed[0].texts, lang="en")])
    assert de["intent_probs"] != as_en["intent_probs"]
    with pytest.raises(ConfigError, match="serve the run folder itself"):
        export_run(run_dir, tmp_path / "export")


def test_filter_models_are_served_with_their_translation(tiny_cfg, tmp_path):
    """A fusion model's export records its translator; the runtime translates each input and feeds both sides."""
    from xlt.serve.export import export_run
    from xlt.serve.predictor import OnnxPredictor
    from xlt.serve.torch_predictor import TorchPredictor
    from xlt.finetune import train

    run_dir = train(tiny_cfg("train.method=filter", "name=filter-served", "translation.translator=identity",
                             "translation.extra_parallel=[]", "translation.languages=[de]", "options.local_layers=1",
                             "options.fusion_layers=1", "train.max_steps=2", "train.eval_every=2"))
    report = export_run(run_dir, tmp_path / "export")
    assert report["model.onnx"]["same_predictions"] == 1.0
    torch_p, onnx_p = TorchPredictor(run_dir), OnnxPredictor(tmp_path / "export")
    assert onnx_p.translation == {"mode": "fusion", "backend": "identity", "source_lang": "en", "target_lang": "de"}
    requests = [Request(["Wecker für morgen"], lang="de"), Request(["set an alarm"], lang="en"), Request(["Wetter"])]
    a, b = torch_p.predict(requests), onnx_p.predict(requests)
    assert [x["intent"] for x in a] == [x["intent"] for x in b] and [x["slots"] for x in a] == [x["slots"] for x in b]
    with pytest.raises(InputError, match="lang must be one of them"):
        onnx_p.predict([Request(["tokyo"], lang="ja")])


def test_translate_test_models_translate_predict_and_align_back(tiny_cfg, tmp_path):
    """Export carries aligner priors; a target-language input is predicted on its translation and its slots come
    back onto the input's own words (identity translator here: plumbing, not translation quality)."""
    from xlt.serve.export import export_run
    from xlt.serve.predictor import OnnxPredictor
    from xlt.serve.torch_predictor import TorchPredictor
    from xlt.finetune import train

    run_dir = train(tiny_cfg("train.method=translate_test", "name=tt-served", "translation.translator=identity",
                             "translation.extra_parallel=[]", "translation.languages=[de]", "train.max_steps=2",
                             "train.eval_every=2"))
    export_run(run_dir, tmp_path / "export")
    onnx_p = OnnxPredictor(tmp_path / "export")
    assert onnx_p.translation["mode"] == "translate_test" and (tmp_path / "export" / "priors-de.txt").exists()
    text = "Wecker für morgen, bitte"
    requests = [Request([text], lang="de"), Request(["set an alarm"], lang="en")]
    a, b = TorchPredictor(run_dir).predict(requests), onnx_p.predict(requests)
    assert a[0]["translation"] == "Wecker für morgen , bitte" and "translation" not in a[1]  # its words, joined
    # eflomal samples, so projected spans may differ between two calls: compare intents, check offsets
    assert [x["intent"] for x in a] == [x["intent"] for x in b] and a[1]["slots"] == b[1]["slots"]
    assert all(text[s["start"]:s["end"]] == s["text"] for s in a[0]["slots"] + b[0]["slots"])
    with pytest.raises(InputError, match="lang must be en or one of"):
        onnx_p.predict([Request([text])])
