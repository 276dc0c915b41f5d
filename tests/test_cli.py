"""The command line as a new user meets it: every user error is one line ``xlt: error: ...`` on stderr and exit
status 2, raised before any training; ``--help`` lists what there is to choose from."""
import shutil

import pytest

from xlt import zoo
from xlt.cli import main
from xlt.methods import METHODS
from xlt.stages import STAGES
from xlt.tasks import TASKS


@pytest.fixture
def data(tiny_data, tmp_path, xlt_home):
    """A private copy of the tiny data folder that a test may break (tiny-random prepared beforehand: its progress
    bar is not part of what the error tests read)."""
    zoo.resolve("tiny-random")
    return shutil.copytree(tiny_data, tmp_path / "data")


def user_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlt: error: "), err
    assert "Traceback" not in err
    return lines[0]


def train_argv(data, tmp_path, *overrides: str) -> list[str]:
    return ["train", "tiny", f"data.data_dir={data}", f"output_dir={tmp_path / 'runs'}", "data.train_subset=0",
            "data.eval_langs=[en,de,ja]", *overrides]


def test_label_file_shorter_than_text_file(data, tmp_path, xlt_home, capsys):
    label = data / "xsid" / "train" / "en.label"
    label.write_text("".join(label.read_text().splitlines(keepends=True)[:-3]))
    line = user_error(capsys, train_argv(data, tmp_path))
    assert "en.label" in line and "line" in line
    assert not (tmp_path / "runs" / "tiny" / "last").exists()  # nothing trained


def test_empty_and_missing_test_files_stop_before_training(data, tmp_path, xlt_home, capsys):
    test_file = data / "xsid" / "ja.test.conll"
    test_file.write_text("")
    line = user_error(capsys, train_argv(data, tmp_path, "name=empty"))
    assert "ja.test.conll" in line and "empty" in line
    assert not (tmp_path / "runs" / "empty").exists()
    test_file.unlink()
    line = user_error(capsys, train_argv(data, tmp_path, "name=missing"))
    assert "ja.test.conll" in line
    assert not (tmp_path / "runs" / "missing").exists()


@pytest.mark.parametrize("override, expected", [
    ("train.lrr=1e-3", "train.lrr"),  # unknown key
    ("train.max_steps=many", "train.max_steps"),  # wrong type
    ("train.method=zero_shoot", "zero_shoot"),  # unknown method
    ("data.dataset=xnlii", "xnlii"),  # unknown dataset
    ("translation.labels=shipped", "ships no labelled"),  # a combination that makes no sense (with translate_train)
])
def test_config_errors_are_one_line(data, tmp_path, xlt_home, capsys, override, expected):
    extra = ["train.method=translate_train", "translation.languages=[es]", "data.dataset=xnli",
             "data.eval_langs=[en,es]"] if override.startswith("translation.labels") else []
    line = user_error(capsys, train_argv(data, tmp_path, *extra, override))
    assert expected in line


def test_unknown_config_and_missing_run_dir(tmp_path, capsys):
    assert "no-such-config" in user_error(capsys, ["train", "no-such-config"])
    assert "no-such-config" in user_error(capsys, ["pretrain", "no-such-config"])
    assert str(tmp_path / "nothing") in user_error(capsys, ["eval", str(tmp_path / "nothing")])
    assert str(tmp_path / "nothing") in user_error(capsys, ["predict", str(tmp_path / "nothing"), "hello"])


def test_help_lists_tasks_methods_stages_and_configs(capsys):
    for argv in (["--help"], ["train", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
        out = capsys.readouterr().out
        for name in [*TASKS.names(), *METHODS.names(), *STAGES.names(), "xnli", "panx", "udpos", "pawsx",
                     "xsid-zero-shot", "pretrain-mlm-ja"]:
            assert name in out, (argv, name)
