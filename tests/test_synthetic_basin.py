"""benchmarks/synthetic_basin.py on tiny-random: rows started alpha of the way to their English originals are
exactly there, and the row metrics read alignment and the direction of a move correctly."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import synthetic_basin as sb  # noqa: E402


def test_started_near_moves_only_the_synthetic_rows_alpha_of_the_way(xlt_home, tmp_path):
    from safetensors.torch import load_file

    from xlt import zoo
    from xlt.synthetic.vocab import id_pairs

    grown = zoo.resolve("tiny-random+syn-en")
    moved = sb.started_near(grown, tmp_path / "a0.25", 0.25)
    before = load_file(str(grown / "model.safetensors"))
    after = load_file(str(moved / "model.safetensors"))
    en, syn = (torch.tensor(ids) for ids in zip(*id_pairs(grown, "en")))
    old, new = before[sb.WORDS], after[sb.WORDS]
    assert torch.allclose(new[syn], 0.75 * old[syn] + 0.25 * old[en])
    others = torch.ones(len(old), dtype=torch.bool)
    others[syn] = False
    assert torch.equal(new[others], old[others])
    assert all(torch.equal(before[k], after[k]) for k in before if k != sb.WORDS)
    assert (moved / "tokenizer.json").read_text() == (grown / "tokenizer.json").read_text()


def test_row_metrics_see_alignment_and_the_way_a_row_moved():
    torch.manual_seed(0)
    start = torch.randn(8, 16)  # rows 0-3 "English", 4-7 their "synthetic" images
    pairs = [(i, i + 4) for i in range(4)]
    m = sb.row_metrics(start, start, pairs)
    assert m["moved"] == 0 and m["english_moved"] == 0
    toward = start.clone()
    toward[4:] = start[4:] + 0.5 * (start[:4] - start[4:])  # half way, straight at the originals
    m = sb.row_metrics(start, toward, pairs)
    assert m["toward"] == 1.0 and abs(m["distance"] * 2 - sb.row_metrics(start, start, pairs)["distance"]) < 1e-3
    aligned = start.clone()
    aligned[4:] = start[:4]
    assert sb.row_metrics(start, aligned, pairs)["precision_at_1"] == 1.0
    away = start.clone()
    away[4:] = start[4:] - (start[:4] - start[4:])
    assert sb.row_metrics(start, away, pairs)["toward"] == -1.0
