"""Nothing lost, nothing silently wrong (issue 100): --overwrite never loses the old run for a typo, a streamed body
stops at the limit, a damaged test file is an error, every number finite and every choice from its list (config
keys and CLI flags alike), one check of ``lang``, typed API inputs, runs that find their data from anywhere, exports
that keep to their folder, and a word aligner that gives the same links every time."""
import asyncio
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.test_cli import data, train_argv, user_error  # noqa: F401 (data is a fixture)
from xlt.errors import ConfigError, DataError

ROOT = Path(__file__).resolve().parents[1]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- 1. --overwrite -------------------------------------------------------------------------------------------------
def _victim(data, tmp_path) -> tuple[Path, str]:
    from xlt.cli import main

    main(train_argv(data, tmp_path, "name=victim", "train.max_steps=2", "train.eval_every=2"))
    run = tmp_path / "runs" / "victim"
    return run, sha(run / "best" / "model.safetensors")


def test_overwrite_with_a_typo_leaves_the_old_run_as_it_was(data, tmp_path, capsys):
    run, before = _victim(data, tmp_path)
    capsys.readouterr()
    for typo in ("data.data_dir=/typo", "train.lr=.nan", "model.pooling=nope"):
        user_error(capsys, train_argv(data, tmp_path, "name=victim", "--overwrite", typo))
        assert sha(run / "best" / "model.safetensors") == before and (run / "results.json").exists()
        assert not (run.parent / ".victim.replaced").exists()


def test_overwrite_that_fails_before_its_first_checkpoint_puts_the_old_run_back(data, tmp_path, capsys,
                                                                               monkeypatch):
    import xlt.finetune
    from xlt.cli import main

    run, before = _victim(data, tmp_path)

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory (simulated)")

    monkeypatch.setattr(xlt.finetune, "run_loop", broken)
    with pytest.raises(RuntimeError, match="simulated"):
        main(train_argv(data, tmp_path, "name=victim", "--overwrite", "train.max_steps=2", "train.eval_every=2"))
    assert "the earlier run is back" in capsys.readouterr().err
    assert sha(run / "best" / "model.safetensors") == before and not (run.parent / ".victim.replaced").exists()


def test_overwrite_interrupted_after_a_checkpoint_keeps_both_until_the_resumed_run_finishes(tiny_cfg, capsys):
    from xlt.finetune import train

    cfg = tiny_cfg("name=both", "train.max_steps=4", "train.eval_every=2")
    run = train(cfg)
    old = sha(run / "best" / "model.safetensors")
    aside = run.parent / ".both.replaced"
    train(tiny_cfg("name=both", "train.max_steps=4", "train.eval_every=2", "train.seed=2"), overwrite=True,
          stop_after=2)  # as if killed after the first checkpoint
    assert sha(aside / "best" / "model.safetensors") == old and (run / "last").exists()
    assert "kept at" in capsys.readouterr().out
    with pytest.raises(Exception, match="replaced"):  # a second --overwrite would have to drop one of them
        train(cfg, overwrite=True)
    train(tiny_cfg("name=both", "train.max_steps=4", "train.eval_every=2", "train.seed=2"), resume=True)
    assert not aside.exists() and (run / "train_summary.json").exists()
    assert "deleted the replaced run" in capsys.readouterr().out


# -- 2. a streamed body is counted as it arrives ---------------------------------------------------------------------
def test_a_streamed_body_over_the_limit_is_refused_before_the_rest_is_read():
    from xlt.serve.app import BodyLimit

    reached = []

    async def app(scope, receive, send):  # what the server would do with a body it was given
        reached.append(await receive())

    chunks_read, sent = [0], []

    async def receive():
        chunks_read[0] += 1
        return {"type": "http.request", "body": b"x" * 1024, "more_body": chunks_read[0] < 300_000}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "headers": [(b"transfer-encoding", b"chunked")], "path": "/predict"}
    asyncio.run(BodyLimit(app, max_bytes=10_000)(scope, receive, send))
    assert sent[0]["status"] == 413 and not reached
    assert chunks_read[0] == 10, "read past the limit"  # 10 KiB > 10,000 bytes: stopped at the 10th chunk
    body = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    assert body["limit"] == "max_body_bytes" and (b"connection", b"close") in sent[0]["headers"]
    # a body inside the limit reaches the app whole, in one piece
    chunks_read[0] = 299_990
    asyncio.run(BodyLimit(app, max_bytes=20_000)(scope, receive, send))
    assert reached[0]["body"] == b"x" * 10 * 1024 and reached[0]["more_body"] is False


# -- 3. damaged evaluation files ------------------------------------------------------------------------------------
def _conll_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


@pytest.mark.parametrize("which", ["middle", "last"])
def test_a_test_file_missing_a_token_line_is_an_error_naming_it(data, tmp_path, capsys, which):
    test_file = data / "xsid" / "de.test.conll"
    lines = _conll_lines(test_file)
    tokens = [i for i, x in enumerate(lines) if x[:1].isdigit()]
    drop = tokens[1] if which == "middle" else tokens[2]  # "für" of "Wecker für morgen", or "morgen"
    test_file.write_text("".join(lines[:drop] + lines[drop + 1:]), encoding="utf-8")
    line = user_error(capsys, train_argv(data, tmp_path, "name=damaged"))
    assert "de.test.conll:1" in line and ("token index" in line if which == "middle" else "# text" in line)
    assert not (tmp_path / "runs" / "damaged").exists()


def test_an_orphan_tag_repaired_in_a_test_file_is_said_in_the_report(data, tmp_path, capsys):
    from xlt.cli import main

    test_file = data / "xsid" / "de.test.conll"
    test_file.write_text(test_file.read_text(encoding="utf-8").replace("B-datetime", "I-datetime", 1),
                         encoding="utf-8")
    main(train_argv(data, tmp_path, "name=repaired", "train.max_steps=2", "train.eval_every=2"))
    err = capsys.readouterr().err
    assert "de.test.conll: test set repaired" in err and "orphan" in err
    results = json.loads((tmp_path / "runs" / "repaired" / "results.json").read_text())
    assert any("orphan" in kind for kind in results["data_repairs"]["de"])
    assert "Repaired before scoring" in (tmp_path / "runs" / "repaired" / "results.md").read_text()


def test_a_text_file_problem_names_the_text_file(data, tmp_path, capsys):
    text = data / "xsid" / "train" / "en.text"
    raw = text.read_bytes().split(b"\n")
    raw[1] = b"set \xff alarm"
    text.write_bytes(b"\n".join(raw))
    from xlt.data.readers import read_xsid_train

    _, report = read_xsid_train(text, data / "xsid" / "train" / "en.label", "en")
    assert report.first_skipped["bad encoding"].startswith(f"{text}:2:")


# -- 4. numbers finite and in range, choices from their list --------------------------------------------------------
@pytest.mark.parametrize("override, expected", [
    ("train.lr=.inf", "train.lr: inf is not a finite number"),
    ("train.lr=.nan", "train.lr: nan is not a finite number"),
    ("train.weight_decay=-.inf", "train.weight_decay: -inf is not a finite number"),
    ("model.pooling=nope", "model.pooling: 'nope' is not one of mean, cls"),
    ("data.orphan_policy=nope", "data.orphan_policy: 'nope' is not one of to_b, skip"),
    ("translation.aligner=nope", "translation.aligner: 'nope' is not one of similarity, eflomal"),
    ("translation.translator=apertum", "translation.translator: 'apertum' is not one of"),
])
def test_non_finite_numbers_and_unknown_choices_stop_before_anything_is_written(data, tmp_path, capsys, override,
                                                                                expected):
    line = user_error(capsys, train_argv(data, tmp_path, "name=bad", override))
    assert expected in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("argv, expected", [
    (["serve", "x", "--max-wait-ms", "inf"], "--max-wait-ms: inf is not a finite number"),
    (["serve", "x", "--max-wait-ms", "nan"], "--max-wait-ms: nan is not a finite number"),
    (["serve", "x", "--max-wait-ms", "1e9"], "out of range (must be >= 0 and <= 10000)"),
    (["serve", "x", "--port", "70000"], "--port: 70000 is out of range"),
    (["serve", "x", "--max-batch", "0"], "--max-batch: 0 is out of range (must be > 0)"),
    (["predict", "x", "hi", "--batch-size", "-1"], "--batch-size: -1 is out of range"),
    (["export", "x", "--out", "y", "--parity-examples", "many"], "'many' is not an integer"),
])
def test_cli_flags_are_checked_as_settings_are_in_one_line(capsys, argv, expected):
    assert expected in user_error(capsys, argv)


def test_server_limits_made_in_code_are_checked_too():
    from xlt.serve.limits import Limits

    with pytest.raises(ConfigError, match="limits.max_wait_ms: inf is not a finite number"):
        Limits(max_wait_ms=float("inf"))
    with pytest.raises(ConfigError, match="limits.max_texts: 0 is out of range"):
        Limits(max_texts=0)


def test_yaml_words_for_booleans_keep_their_meaning():
    from xlt.config import load_config

    cfg = load_config(None, ["translation.alignment_cache=off", "data.dedup=no", "model.trim_vocab=on"])
    assert cfg.translation.alignment_cache == "off" and cfg.data.dedup is False and cfg.model.trim_vocab is True


# -- 5. one check of lang --------------------------------------------------------------------------------------------
def test_lang_is_checked_alike_by_server_cli_batch_and_api(served, tmp_path, capsys):
    from fastapi.testclient import TestClient

    import xlt
    from xlt.serve.app import create_app
    from xlt.serve.batch_file import predict_file

    with TestClient(create_app(served["onnx"])) as client:
        for lang in ("\ud800", "", "de de", "x" * 40):
            bad = client.post("/predict", content=json.dumps({"texts": ["hi"], "lang": lang}),  # "\ud800" escaped
                              headers={"content-type": "application/json"})
            assert bad.status_code == 422 and "lang must be a language code" in bad.json()["error"], lang
        assert client.post("/predict", json={"texts": ["hi"], "lang": "pt-BR"}).status_code == 200
    line = user_error(capsys, ["predict", str(served["export"]), "--lang", "\udcff", "hi"])
    assert "lang must be a language code" in line and "\\udcff" in line
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "hi", "lang": 5}\n{"text": "hi", "lnag": "de"}\n{"text": "hi", "lang": "de"}\n')
    predict_file(served["onnx"], src, tmp_path / "out.jsonl", progress=False)
    rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert "in.jsonl:1: lang must be a language code" in rows[0]["error"]
    assert "in.jsonl:2: unknown key(s) 'lnag'" in rows[1]["error"] and rows[2]["lang"] == "de"
    with pytest.raises(DataError, match="lang must be a language code"):
        predict_file(served["onnx"], src, tmp_path / "out2.jsonl", lang="\udcff", progress=False)
    with pytest.raises(xlt.DataError, match="lang must be"):
        xlt.load(served["export"]).predict(["hi"], lang=5)


# -- 6. Python API inputs -------------------------------------------------------------------------------------------
def test_api_predict_takes_a_str_as_one_text_and_refuses_what_is_not_text(served):
    import xlt

    model = xlt.load(served["export"])
    one = model.predict("hello")
    assert len(one) == 1 and one[0]["text"] == "hello"
    for bad, what in (([{"a": 1}], "dict"), ([5], "int"), ([None], "NoneType"), ([b"x"], "bytes"), (b"x", "bytes")):
        with pytest.raises(xlt.DataError, match=f"text 1: expected a text \\(str\\).*got {what}"):
            model.predict(bad)
    with pytest.raises(xlt.DataError, match="expected a list of texts"):
        model.predict(5)


def test_api_overrides_of_the_wrong_shape_are_config_errors():
    import xlt

    for bad, match in (("train.lr=1e-4", "wrap it in a list"), ({1: 2}, "key 1 is not a str"),
                       (["train.lr=1e-4", 5], "5 is not a str")):
        with pytest.raises(xlt.ConfigError, match=match):
            xlt.train("tiny", overrides=bad)
    assert {"train", "load", "ConfigError", "DataError"} <= set(dir(xlt))


# -- 7. a run finds its data from any working directory -------------------------------------------------------------
def test_a_run_made_with_a_relative_data_dir_exports_with_parity_from_elsewhere(tiny_data, xlt_home, tmp_path,
                                                                                monkeypatch, capsys):
    from xlt.config import find_config, load_config
    from xlt.finetune import train
    from xlt.serve.export import export_run

    shutil.copytree(tiny_data, tmp_path / "here" / "data")
    monkeypatch.chdir(tmp_path / "here")
    cfg = load_config(find_config("tiny"), ["data.data_dir=data", "output_dir=runs", "name=rel",
                                            "data.eval_langs=[en]", "data.train_subset=0", "train.max_steps=2",
                                            "train.eval_every=2"])
    run = train(cfg).absolute()
    saved = load_config(run / "config.yaml")
    assert saved.data.data_dir == str(tmp_path / "here" / "data")
    monkeypatch.chdir(tmp_path)
    assert "skipped" not in export_run(run, tmp_path / "exp")
    shutil.move(tmp_path / "here" / "data", tmp_path / "moved")
    report = export_run(run, tmp_path / "exp2")
    assert "skipped" in report and "parity against PyTorch NOT checked" in capsys.readouterr().err
    assert "skipped" not in export_run(run, tmp_path / "exp3", data_dir=tmp_path / "moved")


# -- 8. smaller -----------------------------------------------------------------------------------------------------
def test_info_shows_no_absolute_paths(served):
    from fastapi.testclient import TestClient

    from xlt.serve.app import create_app

    for backend in ("torch", "onnx"):
        with TestClient(create_app(served[backend])) as client:
            text = json.dumps(client.get("/info").json())
            assert str(Path(served["run"]).parent) not in text and "/tmp" not in text, backend


def test_graph_for_a_run_folder_and_control_only_texts_are_refused(served, capsys):
    from xlt.serve.predictor import Request
    from xlt.serve.words import InputError

    line = user_error(capsys, ["predict", str(served["run"]), "--graph", "model.int8.onnx", "hi"])
    assert "is a run folder" in line
    for text in ("\x00", "\x01\x02\x03", "\u200b"):
        for backend in ("torch", "int8"):
            with pytest.raises(InputError, match="only control or format characters"):
                served[backend].predict([Request([text])])


def test_an_export_cannot_name_a_file_outside_its_folder(served, tmp_path):
    from xlt.serve.predictor import OnnxPredictor

    export = tmp_path / "export"
    shutil.copytree(served["export"], export)
    shutil.copyfile(export / "model.onnx", tmp_path / "elsewhere.onnx")
    meta = json.loads((export / "xlt_export.json").read_text())
    for graph in ("../elsewhere.onnx", str(tmp_path / "elsewhere.onnx")):
        (export / "xlt_export.json").write_text(json.dumps(dict(meta, graphs=[graph], default_graph=graph)))
        with pytest.raises(ConfigError, match="not a file name inside the export folder"):
            OnnxPredictor(export)


def test_declared_dependency_floors_are_the_versions_setup_installs():
    """pyproject's floors are what CI tests: each package setup.sh pins has its pinned version as its floor."""
    pins = dict(re.findall(r'"([A-Za-z0-9_.-]+)==([0-9][^"]*)"', (ROOT / "scripts" / "setup.sh").read_text()))
    pins["torch"] = re.search(r"torch==([0-9.]+)", (ROOT / "scripts" / "setup.sh").read_text()).group(1)
    floors = dict(re.findall(r'"([A-Za-z0-9_.-]+)>=([0-9][0-9.]*)', (ROOT / "pyproject.toml").read_text()))
    checked = 0
    for name, pin in pins.items():
        if name in floors:
            floor = floors[name]
            assert pin.split(".")[:len(floor.split("."))] == floor.split("."), (name, pin, floor)
            checked += 1
    assert checked >= 12


# -- 9. the deterministic aligner -----------------------------------------------------------------------------------
SRC = [["set", "an", "alarm", "for", "seven"], ["weather", "in", "berlin"], ["play", "music"], []]
TGT = [["stell", "einen", "wecker", "für", "sieben"], ["wetter", "in", "berlin"], ["spiel", "musik"], ["x"]]


def test_the_similarity_aligner_gives_the_same_links_from_fresh_caches(xlt_home, tmp_path):
    from xlt.align.similarity import align_by_similarity

    records = [{}, {}, {}]
    links = [align_by_similarity(SRC, TGT, "tiny-random", 0, tmp_path / f"cache{k}", records[k]) for k in range(2)]
    again = align_by_similarity(SRC, TGT, "tiny-random", 0, tmp_path / "cache0", records[2])
    assert links[0] == links[1] == again and links[0][3] == set()
    assert [r["reused"] for r in records] == [False, False, True]
    assert records[0]["cache_key"] == records[1]["cache_key"] and records[0]["layer"] == 1  # 2/3 of 2 layers
    assert (1, 1) in links[0][1] and (2, 2) in links[0][1]  # identical words ("in", "berlin") align
    assert all(all(i < len(s) and j < len(t) for i, j in x) for x, s, t in zip(links[0], SRC, TGT))
    other = {}
    align_by_similarity(SRC, TGT, "tiny-random", 2, tmp_path / "cache0", other)
    assert other["cache_key"] != records[0]["cache_key"]  # the layer is part of the key
    with pytest.raises(ConfigError, match="align_layer: 3 is not a layer"):
        align_by_similarity(SRC, TGT, "tiny-random", 3)


def test_a_translate_train_run_is_the_same_from_an_empty_cache(tiny_cfg, tmp_path):
    from xlt.finetune import train

    common = ["train.method=translate_train", "translation.translator=identity", "translation.languages=[de]",
              "train.max_steps=2", "train.eval_every=2"]
    runs = [train(tiny_cfg(*common, f"name=fresh-{k}", f"translation.alignment_cache={tmp_path / k}"))
            for k in "ab"]
    reports = [json.loads((r / "data_report.json").read_text())["translation"]["de"]["projection"]["alignment"]
               for r in runs]
    assert not reports[0]["reused"] and not reports[1]["reused"]
    assert reports[0]["cache_key"] == reports[1]["cache_key"] and reports[0]["aligner"].startswith("similarity")
    assert sha(runs[0] / "best" / "model.safetensors") == sha(runs[1] / "best" / "model.safetensors")
    assert os.path.isabs(json.loads(json.dumps(reports[0]))["model"]) is False


def test_trimming_the_vocabulary_draws_nothing_from_the_random_stream():
    """The kept rows are copied, not drawn and overwritten: otherwise the heads' initialisation and every dropout mask
    after the trim would depend on how many ids the evaluation sets add (data.eval_langs, train.select=target_dev)."""
    import torch

    from xlt.core.vocab import VocabTrim

    full = torch.nn.Embedding(50, 8)
    for kept in ([0, 3, 7], list(range(40))):
        torch.manual_seed(0)
        trimmed = VocabTrim(kept).trim_embedding(full)
        after = torch.rand(4)
        torch.manual_seed(0)
        assert torch.equal(after, torch.rand(4))
        assert torch.equal(trimmed.weight, full.weight[kept]) and trimmed.weight.requires_grad
        assert trimmed.weight.data_ptr() != full.weight.data_ptr()  # its own copy
