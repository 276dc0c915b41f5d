"""Choosing a method: xlt/methods/measured.json is what scripts/method_gains.py derives from today's committed results
(it cannot drift from them), every method says what it needs, and ``xlt methods`` shows each method and task."""
import importlib.util
import json

from tests.conftest import ROOT


def test_measured_gains_are_the_committed_results():
    spec = importlib.util.spec_from_file_location("method_gains", ROOT / "scripts" / "method_gains.py")
    gains = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gains)
    committed = json.loads((ROOT / "xlt" / "methods" / "measured.json").read_text())
    assert committed == gains.measured(), "run: python scripts/method_gains.py"


def test_every_method_says_what_it_needs_and_xlt_methods_lists_them(capsys):
    from xlt.cli import main
    from xlt.methods import METHODS
    from xlt.methods.measured import measured

    assert all(cls.needs for _, cls in METHODS.items())
    main(["methods"])
    out = capsys.readouterr().out
    assert all(f"{name}: " in out for name in METHODS.names())
    assert all(task in out for task in measured()["tasks"])
    row = next(r for r in measured()["rows"] if r["method"] == "translate_train" and r["task"] == "MTOD es")
    assert f"MTOD es {row['gain']['intent_acc']:+.1f} / {row['gain']['slot_f1']:+.1f}" in out
