"""``xlt data prepare table``: a user's own labelled CSV / TSV / JSONL file, its task read from its columns, converted
into the layout xlt reads; the run's readers then read it back as written."""
import json

import pytest

from xlt.cli import main
from xlt.data.datasets import load_split


def prepare(tmp_path, name, text, *flags):
    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    main(["data", "prepare", "table", "--from", str(source), "--out", str(tmp_path / "out"), *flags])
    return tmp_path / "out"


def test_intents_and_bio_slots_become_massive_files(tmp_path):
    out = prepare(tmp_path, "mine.csv", "text,intent,slots,lang,split\n"
                  "wake me at five am,set_alarm,O O O B-time I-time,en,train\n"
                  '"weck mich, bitte",set_alarm,O O O,de,test\n'
                  "play jazz,play_music,B-genre O,en,train\n")
    assert sorted(p.name for p in (out / "massive").iterdir()) == ["de.test.jsonl", "en.train.jsonl"]
    train = load_split(out, "massive", "en", "train").examples
    assert [e.words for e in train] == [["wake", "me", "at", "five", "am"], ["play", "jazz"]]
    assert train[0].slots == ["O", "O", "O", "B-time", "I-time"] and train[1].slots == ["B-genre", "O"]
    assert [e.intent for e in load_split(out, "massive", "de", "test").examples] == ["set_alarm"]


def test_binary_pairs_become_pawsx_and_nli_labels_xnli(tmp_path):
    rows = [{"sentence1": "a cat", "sentence2": "one cat", "label": 1, "lang": "en", "split": "train"},
            {"sentence1": "ein Hund", "sentence2": "eine Katze", "label": 0, "lang": "de", "split": "dev"}]
    out = prepare(tmp_path, "pairs.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert [e.label for e in load_split(out, "pawsx", "de", "valid").examples] == ["0"]
    assert (out / "pawsx" / "train-en.tsv").read_text() == "a cat\tone cat\t1\n"
    out = prepare(tmp_path, "nli.tsv", "sentence1\tsentence2\tlabel\nes llueve\thace sol\tContradiction\n",
                  "--lang", "es", "--split", "test")
    assert [e.label for e in load_split(out, "xnli", "es", "test").examples] == ["contradiction"]


def test_bio_tags_become_panx_tested_on_dev_and_other_tags_udpos(tmp_path):
    out = prepare(tmp_path, "ner.jsonl", json.dumps({"tokens": ["Anna", "lebt", "hier"], "tags": ["B-PER", "O", "O"],
                                                     "lang": "de", "split": "test"}) + "\n")
    assert (out / "panx" / "dev-de.tsv").read_text() == "Anna\tB-PER\nlebt\tO\nhier\tO\n"
    out = prepare(tmp_path, "pos.tsv", "tokens\ttags\nI run\tPRON VERB\nyou sit\tPRON VERB\n", "--lang", "en",
                  "--split", "train")
    assert (out / "udpos" / "train-en.tsv").read_text() == "I\tPRON\nrun\tVERB\n\nyou\tPRON\nsit\tVERB\n"


@pytest.mark.parametrize("name,text,problem", [
    ("a.csv", "text,intent,slots,lang,split\nwake me,alarm,O,en,train\n", "a.csv:2: 1 slot tags for 2 words"),
    ("b.csv", "text,intent,slots,lang,split\nwake me,alarm,O X,en,train\n", "b.csv:2: slot tag 'X'"),
    ("c.csv", "text,intent\nwake me,alarm\n", "c.csv:2: no language or split"),
    ("d.csv", "words,label\nx,y\n", "d.csv:1: columns"),
    ("e.jsonl", '{"sentence1": "a", "sentence2": "b", "label": "maybe", "lang": "en", "split": "dev"}\n',
     "pair labels ['maybe']"),
    ("f.jsonl", '{"sentence1": "a", "sentence2": "b", "label": 1, "lang": "de", "split": "train"}\n',
     "f.jsonl:1: PAWS-X-style training is English"),
    ("g.jsonl", '{"text": "a b"\n', "g.jsonl:1: not JSON"),
])
def test_a_bad_row_is_one_line_naming_file_and_line(tmp_path, capsys, name, text, problem):
    with pytest.raises(SystemExit):
        prepare(tmp_path, name, text)
    err = capsys.readouterr().err
    assert err.startswith("xlt: error:") and err.count("\n") == 1 and problem in err
