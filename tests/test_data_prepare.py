"""``xlt data prepare``: small copies of each official release format (tests/fixtures/releases/, written as the
releases lay their files out) converted into the layout xlt reads, which a run's readers then read."""
import pytest

from tests.conftest import ROOT
from xlt.cli import main
from xlt.data.datasets import load_split

RELEASES = ROOT / "tests" / "fixtures" / "releases"


def test_massive_locales_become_languages_and_partitions_splits(tmp_path):
    main(["data", "prepare", "massive", "--from", str(RELEASES / "massive"), "--out", str(tmp_path)])
    names = sorted(p.name for p in (tmp_path / "massive").iterdir())
    assert names == ["de.test.jsonl", "de.train.jsonl", "de.valid.jsonl", "en.test.jsonl", "en.train.jsonl",
                     "en.valid.jsonl", "zh-cn.test.jsonl", "zh-tw.test.jsonl"]  # two locales of zh keep theirs
    test = load_split(tmp_path, "massive", "de", "test").examples
    assert [e.words for e in test] == [["regnet", "es", "morgen"]] and test[0].intent == "weather_query"
    assert load_split(tmp_path, "massive", "en", "train").examples[0].slots == ["O", "O", "O", "O", "B-time", "I-time"]


def test_xnli_and_pawsx_split_by_language_in_their_order(tmp_path):
    main(["data", "prepare", "xnli", "--from", str(RELEASES / "xnli"), "--out", str(tmp_path)])
    main(["data", "prepare", "pawsx", "--from", str(RELEASES / "pawsx"), "--out", str(tmp_path)])
    assert (tmp_path / "xnli" / "dev-de.tsv").read_text() == \
        "Ein Mann schläft.\tJemand ruht.\tentailment\nDie Katze ist schwarz.\tDie Katze ist weiß.\tcontradiction\n"
    dev = load_split(tmp_path, "xnli", "de", "valid").examples
    assert [e.label for e in dev] == ["entailment", "contradiction"]
    assert dev[0].reference  # the English row of the same line: the files stay parallel
    assert sorted(p.name for p in (tmp_path / "pawsx").iterdir()) == [
        "dev-de.tsv", "dev-en.tsv", "test-de.tsv", "test-en.tsv", "train-en.tsv"]  # translated train sets left out
    assert [e.label for e in load_split(tmp_path, "pawsx", "en", "train").examples] == ["1", "0"]


def test_xsid_takes_the_newest_version_and_the_english_training_set(tmp_path):
    main(["data", "prepare", "xsid", "--from", str(RELEASES / "xsid"), "--out", str(tmp_path)])
    test = load_split(tmp_path, "xsid", "de", "test").examples
    assert [e.words for e in test] == [["weck", "mich", "um", "sieben"]]  # xSID-0.7's, not 0.4's
    assert test[0].intent == "alarm/set_alarm" and test[0].slots[2:] == ["B-datetime", "I-datetime"]
    train = load_split(tmp_path, "xsid", "en", "train").examples
    assert [e.intent for e in train] == ["alarm/set_alarm", "weather/find"]
    assert train[1].slots == ["O", "O", "B-weather/attribute", "B-datetime"]


def test_panx_loses_its_language_prefixes(tmp_path):
    main(["data", "prepare", "panx", "--from", str(RELEASES / "panx"), "--out", str(tmp_path)])
    assert (tmp_path / "panx" / "dev-de.tsv").read_text() == "Berlin\tB-LOC\nist\tO\ngroß\tO\n"
    train = load_split(tmp_path, "panx", "en", "train").examples
    assert [e.words for e in train] == [["Paris", "is", "big"], ["John", "Smith"]]
    assert train[1].tags == ["B-PER", "I-PER"]


def test_a_wrong_release_is_one_line_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "xnli"
    bad.mkdir()
    (bad / "xnli.dev.tsv").write_text("lang\tlabel\n")
    for argv in (["data", "prepare", "xnli", "--from", str(bad), "--out", str(tmp_path / "o")],
                 ["data", "prepare", "nope", "--from", str(bad), "--out", str(tmp_path / "o")],
                 ["data", "prepare", "massive", "--from", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]):
        with pytest.raises(SystemExit):
            main(argv)
        err = capsys.readouterr().err
        assert err.startswith("xlt: error:") and err.count("\n") == 1
    (bad / "xnli.test.tsv").write_text("x")
    with pytest.raises(SystemExit):
        main(["data", "prepare", "xnli", "--from", str(bad), "--out", str(tmp_path / "o")])
    assert "xnli.dev.tsv:1: no column" in capsys.readouterr().err
