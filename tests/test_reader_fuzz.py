"""Every reader against damaged files (issue 48): truncation, a dropped column, an extra column, bad UTF-8, mixed
CRLF/LF line ends, an empty file.  Each case ends in a clear error naming the file, or in the clean result, or in
a counted skip that ``load_split``'s check turns into a printed line for a training set and an error naming
``file:line`` for a dev/test set -- never in silently changed data."""
import json

import pytest

from xlt.data.datasets import check_skips
from xlt.data.pair_readers import XNLI_LABELS, read_pair_tsv
from xlt.data.readers import read_massive_jsonl, read_mtod_tsv, read_xsid_conll, read_xsid_train
from xlt.data.records import DataError
from xlt.data.tagged_readers import read_tagged


def conll_block(i: int) -> str:
    words = ["wake", "me", f"at{i}", "seven"]
    tags = ["O", "O", "O", "B-datetime"]
    return (f"# text = {' '.join(words)}\n# intent = alarm/set_alarm\n"
            + "".join(f"{k + 1}\t{w}\talarm/set_alarm\t{t}\n" for k, (w, t) in enumerate(zip(words, tags))) + "\n")


def mtod_line(i: int) -> str:
    text = f"set alarm{i} at seven"
    toks = text.split()
    spans, pos = [], 0
    for t in toks:
        spans.append({"start": text.index(t, pos), "length": len(t)})
        pos = spans[-1]["start"] + len(t)
    token_json = json.dumps({"tokenizations": [{"tokens": toks, "tokenSpans": spans}]})
    return f"alarm/set_alarm\t{text.index('seven')}:{len(text)}:datetime\t{text}\ten_US\t{token_json}\n"


# name -> (files {suffix: text}, read(paths) -> (rows, report), how to drop / add a column in one line)
FORMATS = {
    "xsid_train": ({".text": "".join(f"wake me at{i} seven\n" for i in range(6)),
                    ".label": "".join("O O O B-datetime\talarm/set_alarm\n" for _ in range(6))},
                   lambda p: read_xsid_train(p[".text"], p[".label"], "en"), ".label"),
    "xsid_conll": ({".conll": "".join(conll_block(i) for i in range(6))},
                   lambda p: read_xsid_conll(p[".conll"], "de"), ".conll"),
    "mtod": ({".tsv": "".join(mtod_line(i) for i in range(6))}, lambda p: read_mtod_tsv(p[".tsv"], "en"), ".tsv"),
    "massive": ({".jsonl": "".join(json.dumps({"annot_utt": f"wake me at [time : seven{i}]", "intent": "alarm_set",
                                               "locale": "en-US"}) + "\n" for i in range(6))},
                lambda p: read_massive_jsonl(p[".jsonl"]), ".jsonl"),
    "pair_tsv": ({".tsv": "".join(f"a man plays {i}\tsomeone plays\tentailment\n" for i in range(6))},
                 lambda p: read_pair_tsv(p[".tsv"], "en", XNLI_LABELS), ".tsv"),
    "panx": ({".tsv": "".join(f"Anna{i}\tB-PER\nlives\tO\nin\tO\nParis\tB-LOC\n\n" for i in range(6))},
             lambda p: read_tagged(p[".tsv"], "en", "bio"), ".tsv"),
    "udpos": ({".tsv": "".join(f"Anna{i}\tPROPN\nlives\tVERB\nhere\tADV\n\n" for i in range(6))},
              lambda p: read_tagged(p[".tsv"], "en", "tags"), ".tsv"),
    "corpus": ({".txt": "".join(f"a sentence of plain text {i}\n" for i in range(6))},
               lambda p: _corpus(p[".txt"]), ".txt"),
    "parallel": ({".de": "".join(f"ein Satz {i}\n" for i in range(6)), ".en": "".join(f"a sentence {i}\n" for i in range(6))},
                 lambda p: _parallel(p[".de"], p[".en"]), ".de"),
}
NO_COLUMNS = {"corpus", "parallel"}  # plain text: a tab is part of the sentence


def _tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit

    tok = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()
    return tok


def _corpus(path):
    """The corpus reader of the pre-training stages (its report dict stands in for the rows' skip counts)."""
    from xlt.config import CorpusConfig
    from xlt.data.corpora import _tokenize_file

    train, _, report = _tokenize_file(path, _tokenizer(), CorpusConfig(heldout_lines=0))
    return [str(x) for x in train], None


def _parallel(other, english):
    from xlt.config import CorpusConfig
    from xlt.data.parallel import _read_pairs

    rows, _ = _read_pairs(other, english, _tokenizer(), CorpusConfig(heldout_lines=0))
    return [str(r) for r in rows["train"]], None


def _damage_line(text: str, kind: str, suffix: str) -> str:
    """Apply a column change to the fourth non-comment data line of ``text``."""
    lines = text.splitlines(keepends=True)
    data = [i for i, x in enumerate(lines) if x.strip() and not x.startswith("#")]
    i = data[3]
    body = lines[i].rstrip("\n")
    if suffix == ".jsonl":
        obj = json.loads(body)
        obj.pop("intent") if kind == "drop_column" else obj.update(extra=1)
        body = json.dumps(obj)
    elif suffix == ".text":  # xSID .text has no columns: the label file gets them
        pass
    elif kind == "drop_column":
        body = "\t".join(body.split("\t")[:-1]) if "\t" in body else body[:len(body) // 2]
    else:
        body += "\textra"
    lines[i] = body + "\n"
    return "".join(lines)


def damage(text: str, kind: str, suffix: str) -> bytes:
    if kind == "truncate_mid_line":
        cut = text.rstrip("\n")
        return cut[:len(cut) - 3].encode()
    if kind in ("drop_column", "extra_column"):
        return _damage_line(text, kind, suffix).encode()
    if kind == "bad_utf8":
        lines = text.encode().splitlines(keepends=True)
        data = [i for i, x in enumerate(lines) if x.strip() and not x.startswith(b"#")]
        lines[data[2]] = lines[data[2]].replace(b" ", b" \xff", 1).replace(b"\t", b"\xfe\t", 1)
        return b"".join(lines)
    if kind == "crlf_mix":
        return "".join(x.replace("\n", "\r\n") if k % 2 else x
                       for k, x in enumerate(text.splitlines(keepends=True))).encode()
    if kind == "empty":
        return b""
    raise ValueError(kind)


def rows_of(result) -> list:
    rows = result[0]
    return [json.dumps(r if isinstance(r, str) else {k: v for k, v in vars(r).items() if k != "origin"},
                       default=str) for r in rows]


@pytest.mark.parametrize("kind", ["truncate_mid_line", "drop_column", "extra_column", "bad_utf8", "crlf_mix", "empty"])
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_damaged_files_never_change_data_silently(name, kind, tmp_path, capsys):
    files, read, damaged_suffix = FORMATS[name]
    if name in NO_COLUMNS and kind.endswith("_column"):
        pytest.skip("plain text has no columns")
    clean_paths = {}
    for suffix, text in files.items():
        clean_paths[suffix] = tmp_path / f"clean{suffix}"
        clean_paths[suffix].write_text(text, encoding="utf-8")
    clean = rows_of(read(clean_paths))
    paths = {}
    for suffix, text in files.items():
        paths[suffix] = tmp_path / f"damaged{suffix}"
        paths[suffix].write_bytes(damage(text, kind, suffix) if suffix == damaged_suffix else text.encode())
    target = paths[damaged_suffix]
    try:
        result = read(paths)
    except DataError as err:
        assert target.name in str(err), str(err)  # a clear error, naming the file
        return
    rows, report = rows_of(result), result[1]
    if rows == clean:
        return  # read exactly as the clean file (CRLF, an extra JSON key)
    if report is None:  # plain text (a corpus, parallel text): what was left out is counted and printed
        assert len(rows) < len(clean) and "skipped" in capsys.readouterr().err
        return
    assert sum(report.skipped.values()) >= len(clean) - len(rows) > 0 or report.skipped, (name, kind)
    assert not set(rows) - set(clean), (name, kind, "a damaged example was kept")
    check_skips(report, "train")  # a training set: announced on the console
    assert f"{target}: skipped" in capsys.readouterr().err
    with pytest.raises(DataError, match=f"{target}:[0-9]+: skipped"):
        check_skips(report, "test")  # an evaluation set: an error naming file:line


def test_a_conll_file_cut_between_token_lines_is_caught(tmp_path):
    """Truncated exactly after a newline: the last utterance's tokens stop before its ``# text`` does."""
    path = tmp_path / "de.test.conll"
    text = "".join(conll_block(i) for i in range(4))
    path.write_text(text[:text.rindex("4\tseven")], encoding="utf-8")
    rows, report = read_xsid_conll(path, "de")
    assert len(rows) == 3 and report.skipped["utterance cut short"] == 1
    with pytest.raises(DataError, match="de.test.conll:[0-9]+: skipped \\(utterance cut short\\)"):
        check_skips(report, "test")
