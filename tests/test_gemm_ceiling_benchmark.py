"""benchmarks/gemm_ceiling.py: the products it times are the FLOPs it claims (counted by PyTorch's FLOP counter),
and the file has a row per length (the rates themselves come from the real machine)."""
import json
import sys
from pathlib import Path

from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gemm_ceiling  # noqa: E402


def test_flops_are_the_products_run():
    run, flops = gemm_ceiling.step_products(layers=2, hidden=16, intermediate=64, heads=4, batch=3, length=5,
                                            device="cpu")
    with FlopCounterMode(display=False) as counter:
        run()
    assert counter.get_total_flops() == flops > 0


def test_rows(xlt_home, tmp_path):
    out = gemm_ceiling.main(["--model", "tiny-random", "--batch-size", "2", "--lengths", "4", "8", "--repeats", "1"],
                            results=tmp_path)
    rows = json.loads((tmp_path / "gemm-ceiling.json").read_text())["rows"]
    assert [r["seq_len"] for r in rows] == [4, 8] and out["fp32_gemm_peak_flops"] > 0
    assert all(r["tokens"] == 2 * r["seq_len"] and r["fraction_of_peak"] > 0 for r in rows)


def test_rates_keep_significant_figures_not_decimal_places():
    # a tiny model on a loaded machine reaches ~1e-4 of peak: three decimal places made that 0 (a failed CI run)
    assert gemm_ceiling.significant(0.000123456, 3) == 0.000123
    assert gemm_ceiling.significant(0.61234, 3) == 0.612 and gemm_ceiling.significant(106.349, 4) == 106.3
