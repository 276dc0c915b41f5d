"""The Python API (xlt/api.py): the docs' example (docs/python-api.md, also in README) runs as written (on the tiny model and data: only the config name,
the data folder and the step count are swapped), answers equal the CLI's, and errors are typed."""
import json
import re
from pathlib import Path

import pytest

import xlt
from tests.conftest import ROOT
from xlt.cli import main as cli

SWAPS = {'"xsid-zero-shot"': '"tiny"', '"train.max_steps": 300': '"train.max_steps": 4, "train.eval_every": 2, '
         '"data.train_subset": 0, "data.dedup": False'}


def api_example(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    match = re.search(r"<!-- api-example -->\n```python\n(.*?)```", text, re.S)
    assert match, f"{path.name} has no api-example block"
    return match.group(1)


def readme_example() -> str:
    """The example of the Python API page; README shows the same block (checked here, run once)."""
    code = api_example(ROOT / "docs" / "python-api.md")
    assert api_example(ROOT / "README.md") == code, "README's api-example differs from docs/python-api.md's"
    return code


def test_the_readme_example_runs(tiny_data, xlt_home, tmp_path, monkeypatch, capsys):
    code = readme_example()
    for old, new in {**SWAPS, '"../shared/data"': repr(str(tiny_data))}.items():
        assert old in code, f"README's example no longer has {old}"
        code = code.replace(old, new)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md api-example", "exec"), {})
    out = capsys.readouterr().out
    assert "text 1:" in out and (tmp_path / "runs" / "api-run" / "results.json").exists()
    assert (tmp_path / "api-export" / "model.onnx").exists()
    # the API's answers are the CLI's
    run = xlt.Run(tmp_path / "runs" / "api-run")
    texts = ["set an alarm for 7 am", "Wecker für morgen um 7"]
    cli(["predict", str(run.path), *texts])
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert xlt.load(run).predict(texts) == printed
    assert run.config["train"]["max_steps"] == 4 and "de" in run.results["per_language"]


def test_errors_are_typed(tiny_data, xlt_home, tmp_path):
    with pytest.raises(xlt.ConfigError, match="no-such-config"):
        xlt.train("no-such-config")
    with pytest.raises(xlt.ConfigError, match="train.batch_size"):
        xlt.train("tiny", data_dir=tiny_data, overrides={"train.batch_size": 0, "output_dir": str(tmp_path)})
    with pytest.raises(xlt.XltError):
        xlt.load(tmp_path / "not-a-run")
    assert issubclass(xlt.DataError, xlt.XltError) and issubclass(xlt.ConfigError, xlt.XltError)


def test_overrides_as_strings_or_a_dict_are_the_same(tiny_data):
    from xlt.api import _overrides

    as_dict = _overrides({"data.eval_langs": ["en", "de"], "train.lr": 1e-4, "name": "a b"}, tiny_data, "data.data_dir")
    assert as_dict == [f"data.data_dir={tiny_data}", 'data.eval_langs=["en", "de"]', "train.lr=0.0001",
                       'name="a b"']
    assert _overrides(["train.lr=1e-4"], None, "") == ["train.lr=1e-4"]
    assert isinstance(Path(xlt.Run(Path("x"))), Path)
