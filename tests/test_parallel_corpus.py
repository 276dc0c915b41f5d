"""Parallel corpora for pre-training stages: line alignment checked, unusable pairs skipped and counted (never
truncated), held-out pairs at the end of each file, document order kept, cache round trip."""
import pytest

from xlt import zoo
from xlt.config import CorpusConfig
from xlt.core.vocab import prepare_tokenizer
from xlt.data.parallel import load_parallel
from xlt.errors import DataError


@pytest.fixture
def parallel_dir(tmp_path):
    root = tmp_path / "data"
    (root / "parallel" / "en-de").mkdir(parents=True)
    en = ["the house is small", "", "play music", "set an alarm " * 30, "good morning", "see you", "thanks"]
    de = ["das haus ist klein", "leer", "musik spielen", "wecker", "guten morgen", "bis bald", "danke"]
    (root / "parallel" / "en-de" / "a.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    (root / "parallel" / "en-de" / "a.de").write_text("\n".join(de) + "\n", encoding="utf-8")
    (root / "other").mkdir()
    (root / "other" / "x.txt").write_text("eins\nzwei\n", encoding="utf-8")
    (root / "other" / "y.txt").write_text("one\n", encoding="utf-8")
    return root


def _load(root, tmp_path, **kw):
    folder = zoo.resolve("tiny-random")
    tok = prepare_tokenizer(zoo.load_tokenizer(folder))
    cfg = CorpusConfig(data_dir=str(root), heldout_lines=2, max_length=24, **kw)
    return load_parallel(cfg, tok, folder / "tokenizer.json", tmp_path / "cache"), tok


def test_pairs_are_aligned_skipped_and_held_out(parallel_dir, tmp_path, xlt_home):
    corpus, tok = _load(parallel_dir, tmp_path, parallel={"de": ["parallel/en-de/*.de"]})
    report = corpus.report["files"][0]
    assert report["skipped"] == {"empty": 1, "over_max_length": 1}
    assert len(corpus.train) == 3 and len(corpus.heldout) == 2
    assert corpus.train.line == [1, 3, 5] and corpus.heldout.line == [6, 7]  # file order kept: documents
    assert "play music" in tok.decode(corpus.train.english[1])
    assert "musik" in tok.decode(corpus.train.other[1])
    assert set(corpus.train.lang) == {"de"} and corpus.report["pairs_per_language"] == {"de": 3}
    again, _ = _load(parallel_dir, tmp_path, parallel={"de": ["parallel/en-de/*.de"]})  # from the cache
    assert again.train.english == corpus.train.english and again.heldout.other == corpus.heldout.other


def test_misaligned_or_missing_files_are_errors(parallel_dir, tmp_path, xlt_home):
    with pytest.raises(DataError, match="line-aligned"):
        _load(parallel_dir, tmp_path, parallel={"de": ["other/x.txt|other/y.txt"]})
    with pytest.raises(DataError, match="English side"):
        _load(parallel_dir, tmp_path, parallel={"de": ["other/x.txt"]})
    with pytest.raises(DataError, match="no file matches"):
        _load(parallel_dir, tmp_path, parallel={"de": ["parallel/en-fr/*.fr"]})
