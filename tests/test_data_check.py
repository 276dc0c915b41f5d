"""``xlt data check``: a data folder read as a run reads it, without training -- counts per language and split, the
repairs, and a damaged evaluation file as the same one-line error a run gives (file:line), exit status 2."""
import shutil

import pytest

from xlt.cli import main
from xlt.data.check import check_folder, languages


def test_a_sound_folder_is_counted_per_language_and_split(tiny_data, capsys):
    assert languages(tiny_data / "xsid") == ["en", "de", "ja"]
    checks = {(c.lang, c.split): c for c in check_folder(tiny_data, "xsid")}
    assert checks[("en", "train")].kept == 40 and checks[("de", "test")].kept > 0
    assert ("de", "train") not in checks  # xSID has no German training set
    main(["data", "check", str(tiny_data), "--dataset", "xsid"])
    out = capsys.readouterr().out
    assert "en train: 40 of 40 examples kept" in out and "ja valid:" in out


def test_a_damaged_test_file_is_an_error_naming_its_line(tiny_data, tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(tiny_data / "xsid", data / "xsid")
    path = data / "xsid" / "de.test.conll"
    lines = path.read_text().splitlines(keepends=True)
    token_lines = [i for i, line in enumerate(lines) if line[:1].isdigit()]
    del lines[token_lines[0]]  # the first token line of the first utterance
    path.write_text("".join(lines))
    with pytest.raises(SystemExit) as stop:
        main(["data", "check", str(data), "--langs", "en", "de"])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert f"de test: ERROR {path}:" in captured.out and "xlt: error:" in captured.err
    assert "en test: " in captured.out and "ERROR" not in captured.out.split("de test")[0]


def test_an_unknown_dataset_or_folder_is_one_line(tmp_path, capsys):
    for argv in (["data", "check", str(tmp_path), "--dataset", "nope"], ["data", "check", str(tmp_path)]):
        with pytest.raises(SystemExit):
            main(argv)
        err = capsys.readouterr().err
        assert err.startswith("xlt: error:") and err.count("\n") == 1
