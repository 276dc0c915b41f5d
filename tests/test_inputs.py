"""Inputs a user can get wrong, and what they get back (issue 48): lone surrogates, out-of-range settings, a run that
died before its first checkpoint, a missing graph, options after texts, a batch output from another input, and one
error shape from the server."""
import json

import pytest

from tests.test_cli import data, train_argv, user_error  # noqa: F401 (data is a fixture)
from xlt.serve.predictor import Request
from xlt.serve.words import InputError

SURROGATE = "abc \ud800 def"  # what JSON "\ud800" decodes to
UNDECODABLE = b"abc \xed\xa0\x80 def".decode("utf-8", "surrogateescape")  # what argv holds for those bytes


# -- lone surrogates ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [SURROGATE, UNDECODABLE])
def test_a_lone_surrogate_is_an_input_error_not_a_crash(served, text):
    for backend in ("torch", "int8"):
        with pytest.raises(InputError, match="not valid Unicode: a lone surrogate U\\+D"):
            served[backend].predict([Request([text])])
        with pytest.raises(InputError, match="word 2 is not valid Unicode"):
            served[backend].predict([Request(words=["set", "\udc80", "alarm"])])
        answers = served[backend].predict([Request([text]), Request(["set an alarm"])], on_error="record")
        assert "not valid Unicode" in answers[0]["error"] and "intent" in answers[1]


def test_cli_names_the_text_with_a_surrogate(served, capsys):
    line = user_error(capsys, ["predict", str(served["run"]), "set an alarm", UNDECODABLE])
    assert line.startswith("xlt: error: text 2: text is not valid Unicode")


def test_batch_file_answers_a_surrogate_line_with_an_error_and_predicts_the_rest(served, tmp_path):
    from xlt.serve.batch_file import predict_file

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "set an alarm"}\n{"text": "a \\ud800"}\n{"id": "\\udc80", "text": "weather"}\n')
    out = tmp_path / "out.jsonl"
    stats = predict_file(served["onnx"], src, out, progress=False)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert stats["errors"] == 1 and stats["predicted"] == 2 and [r["line"] for r in rows] == [1, 2, 3]
    assert rows[1]["error"].startswith(f"{src}:2: text is not valid Unicode") and "intent" in rows[2]


# -- the server's one error shape -----------------------------------------------------------------------------------
def test_server_errors_are_422_json_with_one_shape(served):
    from fastapi.testclient import TestClient

    from xlt.serve.app import create_app

    with TestClient(create_app(served["int8"])) as client:
        def post(body: bytes):
            return client.post("/predict", content=body, headers={"content-type": "application/json"})

        cases = {"surrogate": post(b'{"texts": ["set an alarm", "a \\ud800"]}'),
                 "invalid utf-8": post(b'{"text": "a \xff\xfe b"}'),
                 "5000 deep": post(b"[" * 5000 + b"]" * 5000),
                 "unknown key": post(b'{"texts": ["set an alarm"], "foo": 1}')}
        for name, response in cases.items():
            assert response.status_code == 422, (name, response.status_code, response.text)
            assert set(response.json()) == {"error"}, (name, response.text)
        assert "texts[1]: text is not valid Unicode" in cases["surrogate"].json()["error"]
        assert "foo" in cases["unknown key"].json()["error"]
        missing = client.get("/nothing")
        assert missing.status_code == 404 and set(missing.json()) == {"error"}
        assert client.post("/predict", json={"text": "set an alarm"}).status_code == 200  # still serving


# -- options, graphs, batch outputs ---------------------------------------------------------------------------------
def test_options_may_come_before_the_texts(served, capsys):
    from xlt.cli import main

    main(["predict", str(served["export"]), "--lang", "de", "Wecker für morgen", "--batch-size", "4", "Wetter"])
    answers = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [a["text"] for a in answers] == ["Wecker für morgen", "Wetter"] and answers[0]["lang"] == "de"


def test_thread_settings_change_no_answer(served, capsys):
    """--threads / --no-spinning (for a machine shared with other work) reach both backends and change no answer."""
    from xlt.cli import main
    from xlt.serve.loader import load_predictor

    import torch

    texts, threads = ["set an alarm for 7 am", "Wecker für morgen"], torch.get_num_threads()
    try:
        for folder in (served["export"], served["run"]):
            main(["predict", str(folder), *texts])
            default = capsys.readouterr().out
            main(["predict", str(folder), *texts, "--threads", "1", "--no-spinning"])
            assert capsys.readouterr().out == default
        assert torch.get_num_threads() == 1  # the PyTorch backend took --threads
    finally:
        torch.set_num_threads(threads)  # the process's other tests keep theirs
    onnx = load_predictor(served["export"], threads=1, spinning=False)
    assert onnx.info["threads"] == 1 and onnx.info["spinning"] is False


def test_a_missing_graph_is_one_line(served, capsys):
    line = user_error(capsys, ["predict", str(served["export"]), "hi", "--graph", "nope.onnx"])
    assert "nope.onnx" in line and "model.onnx" in line


def test_batch_resume_refuses_an_output_written_from_another_input(served, tmp_path):
    from xlt.errors import DataError
    from xlt.serve.batch_file import predict_file

    first, second, out = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "out.jsonl"
    first.write_text("set an alarm\nweather in berlin\n")
    second.write_text("play some music\nwake me up at 7\nrain tomorrow\n")
    predict_file(served["onnx"], first, out, progress=False)
    with pytest.raises(DataError, match="written from another input"):
        predict_file(served["onnx"], second, out, progress=False)
    first.write_text("set an alarm\nweather in berlin\nmore lines appended\n")  # the same input, grown: resumes
    stats = predict_file(served["onnx"], first, out, progress=False)
    assert stats["skipped_done"] == 2 and len(out.read_text().splitlines()) == 3
    out.with_name("out.jsonl.input.json").unlink()
    with pytest.raises(DataError, match="no record of the input"):
        predict_file(served["onnx"], first, out, progress=False)


# -- settings out of range ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("override, expected", [
    ("train.batch_size=0", "train.batch_size: 0 is out of range (must be > 0)"),
    ("train.batch_size=-4", "train.batch_size: -4 is out of range"),
    ("train.eval_every=0", "train.eval_every: 0 is out of range"),
    ("train.max_steps=-5", "train.max_steps: -5 is out of range"),
    ("train.warmup_ratio=2", "train.warmup_ratio: 2.0 is out of range (must be >= 0 and <= 1)"),
    ("model.dropout=1.0", "model.dropout: 1.0 is out of range (must be >= 0 and < 1)"),
    ("train.patience=-1", "train.patience: -1 is out of range (must be >= 0)"),
    ("options.weight=-1", "options.weight: -1.0 is out of range"),
])
def test_out_of_range_settings_stop_before_anything_is_written(data, tmp_path, capsys, override, expected):
    extra = ["train.method=xeroalign", "translation.translator=identity", "translation.languages=[de]"] \
        if override.startswith("options.") else []
    line = user_error(capsys, train_argv(data, tmp_path, "name=ranged", *extra, override))
    assert expected in line
    assert not (tmp_path / "runs" / "ranged").exists()


def test_every_numeric_setting_has_a_range():
    """Each int/float field of every config dataclass (run, stage, method and stage options) is checked: its own
    range, or DEFAULT_RANGE (>= 0)."""
    import dataclasses
    import typing

    from xlt.config import DEFAULT_RANGE, RunConfig, StageConfig, from_dict
    from xlt.methods import METHODS
    from xlt.stages import STAGES

    seen, todo = set(), [RunConfig, StageConfig] + [c.Options for _, c in [*METHODS.items(), *STAGES.items()]
                                                    if getattr(c, "Options", None)]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            inner = typing.get_args(hint)
            if dataclasses.is_dataclass(hint) or any(dataclasses.is_dataclass(a) for a in inner):
                todo += [hint] if dataclasses.is_dataclass(hint) else [a for a in inner if dataclasses.is_dataclass(a)]
            elif hint in (int, float):
                rng = f.metadata.get("range", DEFAULT_RANGE)
                assert rng.allows(f.default), (cls.__name__, f.name, f.default, rng)
                if rng.low is not None:  # below the range is refused by from_dict
                    with pytest.raises(Exception, match="out of range"):
                        from_dict(cls, {f.name: hint(rng.low - 1)})
    assert len(seen) >= 10


# -- a run that died before its first checkpoint --------------------------------------------------------------------
def test_a_run_dead_before_its_first_checkpoint_resumes_afresh(data, tmp_path, capsys):
    from xlt.cli import main

    run = tmp_path / "runs" / "dead"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("name: dead\n")  # what a kill -9 during data preparation leaves
    line = user_error(capsys, train_argv(data, tmp_path, "name=dead", "train.max_steps=2", "train.eval_every=2"))
    assert "--resume" in line and "--overwrite" in line
    main(train_argv(data, tmp_path, "name=dead", "train.max_steps=2", "train.eval_every=2", "--resume"))
    assert "starting it afresh" in capsys.readouterr().out and (run / "train_summary.json").exists()
    import shutil

    shutil.rmtree(run / "last")  # a finished run whose resumable checkpoint was deleted
    line = user_error(capsys, train_argv(data, tmp_path, "name=dead", "train.max_steps=2", "--resume"))
    assert "nothing to resume (the run finished)" in line and "--overwrite" in line
    main(train_argv(data, tmp_path, "name=dead", "train.max_steps=2", "train.eval_every=2", "--overwrite"))
    out = capsys.readouterr().out
    assert "deleted the replaced run" in out and (run / "train_summary.json").exists()
    assert not (run.parent / ".dead.replaced").exists()
