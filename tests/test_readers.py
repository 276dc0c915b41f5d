import pytest

from tests.conftest import SHARED_DATA, needs_shared_data
from xlt.data.bio import orphan_positions, repair_tags
from xlt.data.datasets import deduplicate, load_split
from xlt.data.readers import read_massive_jsonl, read_mtod_tsv, read_xsid_conll, read_xsid_train
from xlt.errors import DataError


def test_xsid_train_tab_and_space_separated_intents(tmp_path):
    (tmp_path / "a.text").write_text("set alarm now\nshow weather\n")
    (tmp_path / "a.label").write_text("O O B-datetime\talarm/set_alarm\nO O weather/find\n")
    rows, rep = read_xsid_train(tmp_path / "a.text", tmp_path / "a.label", "en")
    assert [u.intent for u in rows] == ["alarm/set_alarm", "weather/find"]
    assert rows[0].slots == ["O", "O", "B-datetime"] and rep.kept == 2


def test_xsid_train_repairs_and_skips_are_counted(tmp_path):
    (tmp_path / "a.text").write_text("a b c\nevery hour reminding me\nd e\nf g h\n")
    (tmp_path / "a.label").write_text(
        "O I-x I-x\tk\n"                                   # orphan I- -> B-
        "B-recurring_datetime I-recurring_datetime Orecurring_datetime O\tk\n"
        "O O O\tk\n"                                        # 2 tokens, 3 tags: skipped
        "O X-bad O\tk\n")                                   # invalid tag: skipped
    rows, rep = read_xsid_train(tmp_path / "a.text", tmp_path / "a.label", "en")
    assert rows[0].slots == ["O", "B-x", "I-x"]
    assert rows[1].slots[2] == "O"
    assert rep.skipped == {"tag count != token count": 1, "bad BIO": 1}
    assert rep.repaired["orphan I->B (lines)"] == 1
    assert rep.repaired["Orecurring_datetime->O (tags)"] == 1
    assert any("a.label:3" in e for e in rep.examples)


def test_orphan_policy_skip(tmp_path):
    assert repair_tags(["O", "I-x"], "skip")[0] is None
    assert orphan_positions(["B-x", "I-x", "I-y", "O", "I-x"]) == [2, 4]


def test_unusable_file_fails_fast(tmp_path):
    (tmp_path / "a.text").write_text("a b\nc d\ne f\n")
    (tmp_path / "a.label").write_text("O\tk\nO\tk\nO O\tk\n")
    with pytest.raises(DataError, match="2 of 3 examples invalid"):
        read_xsid_train(tmp_path / "a.text", tmp_path / "a.label", "en")
    with pytest.raises(DataError, match="file not found"):
        read_xsid_conll(tmp_path / "missing.conll", "en")


def test_conll_empty_token_bad_line_and_encoding(tmp_path):
    p = tmp_path / "x.conll"
    p.write_bytes("# text = a b\n# intent = k\n1\ta\tk\tO\n2\t\tk\tO\n3\tb\tk\tB-s\n\n"
                  "# intent = k\n1\ta\tk\n\n"
                  "# intent = k\n1\t\xff\tk\tO\n\n".encode("utf-8").replace(b"\xc3\xbf", b"\xff")
                  + "# intent = j\n1\tc\tj\tO\n".encode())
    rows, rep = read_xsid_conll(p, "xx")
    assert [u.words for u in rows] == [["a", "b"], ["c"]]
    assert rep.repaired["empty token (tag O) dropped"] == 1
    assert rep.skipped == {"malformed line": 1, "bad encoding": 1}


def test_mtod_reader_maps_labels(tmp_path):
    p = tmp_path / "test-es.tsv"
    tokens = '{"tokenizations":[{"tokens":["recordar","comprar","pan","mañana"],"tokenSpans":[{"start":0,' \
             '"length":8},{"start":9,"length":7},{"start":17,"length":3},{"start":21,"length":7}]}]}'
    p.write_text(f"reminder/set_reminder\t9:20:reminder/todo,21:28:datetime,0:8:reminder/noun\t"
                 f"Recordar comprar pan mañana\tes_XX\t{tokens}\n", encoding="utf-8")
    rows, _ = read_mtod_tsv(p, "es")
    assert rows[0].slots == ["O", "B-reminder/todo", "I-reminder/todo", "B-datetime"]


def test_massive_reader(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"utt": "wake me at five am", "annot_utt": "wake me at [time : five am]", "intent": '
                 '"alarm_set", "locale": "en-US"}\n{"annot_utt": "broken [x : y", "intent": "a"}\n'
                 '{"annot_utt": "ok", "intent": "a", "locale": "en-US"}\n')
    rows, rep = read_massive_jsonl(p)
    assert rows[0].words == ["wake", "me", "at", "five", "am"]
    assert rows[0].slots == ["O", "O", "O", "B-time", "I-time"] and rows[0].lang == "en"
    assert rep.skipped == {"malformed annotation": 1}


def test_deduplicate():
    from xlt.data.records import Utterance
    u = Utterance(["a"], ["O"], "k", "en", "f:1")
    rows, removed = deduplicate([u, Utterance(["a"], ["O"], "k", "en", "f:2"), Utterance(["a"], ["O"], "j", "en", "")])
    assert removed == 1 and len(rows) == 2


@needs_shared_data
def test_real_xsid_known_problems_are_counted():
    en = load_split(SHARED_DATA, "xsid", "en", "train")
    rep = en.reports[0]
    assert rep.read == rep.kept == 43605
    assert rep.repaired["Orecurring_datetime->O (lines)"] == 357
    assert rep.repaired["intent GetWeather->weather/find (lines)"] == 1900
    assert not any(u.intent == "GetWeather" for u in en.examples)
    da = load_split(SHARED_DATA, "xsid", "da", "train").reports[0]
    assert da.repaired["orphan I->B (lines)"] == 7397 and da.repaired["Orecurring_datetime->O (lines)"] == 312
    zh = load_split(SHARED_DATA, "xsid", "zh", "test").reports[0]
    assert zh.kept == 500 and zh.repaired["empty token (tag O) dropped"] == 6
    mtod_en = load_split(SHARED_DATA, "mtod", "en", "train").examples
    assert len(mtod_en) == 30521  # MTOD half: intents alarm/*, reminder/*, weather/* (not SNIPS GetWeather)
    assert all(u.intent.split("/")[0] in ("alarm", "reminder", "weather") for u in mtod_en)
    es = load_split(SHARED_DATA, "mtod", "es", "test")
    assert es.reports[0].kept == 3043
    assert not any("noun" in t for u in es.examples for t in u.slots)
