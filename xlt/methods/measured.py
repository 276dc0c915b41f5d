"""Choosing a method: what each one needs and what it measured against zero-shot (``xlt methods``; the docs page
"Choosing a method" shows the same).  The numbers are ``measured.json`` beside this file, written by
``scripts/method_gains.py`` from the committed benchmark results (a test keeps the two equal): per task and target
language, the method's test score minus zero-shot's in points, mean over the seeds both ran, checkpoints chosen on
the English dev set; training cost = its training time over zero-shot's."""
from __future__ import annotations

import json
from pathlib import Path

MEASURED = Path(__file__).with_name("measured.json")


def measured() -> dict:
    return json.loads(MEASURED.read_text())


def gain_text(row: dict | None) -> str:
    """``+3.2 / +1.3`` (intent / slot F1) or ``-2.2`` (one metric); ``-`` when not measured."""
    if row is None:
        return "-"
    seeds = "" if row["seeds"] >= 3 else f" ({row['seeds']} seed{'s' if row['seeds'] > 1 else ''})"
    return " / ".join(f"{v:+.1f}" for v in row["gain"].values()) + seeds


def cost_text(data: dict, method: str) -> str:
    """The range of its training time over zero-shot's across the tasks measured (``-``: none)."""
    costs = sorted(r["training_cost"] for r in data["rows"] if r["method"] == method and r["training_cost"])
    if not costs:
        return "-"
    return f"{costs[0]:.1f}x" if f"{costs[0]:.1f}" == f"{costs[-1]:.1f}" else f"{costs[0]:.1f}-{costs[-1]:.1f}x"


def methods_table() -> str:
    """The terminal table of ``xlt methods``: a block per method (its needs, training cost, gains per task)."""
    from xlt.methods import METHODS

    data = measured()
    by = {(r["method"], r["task"]): r for r in data["rows"]}
    lines = ["Gain over zero-shot on the target test set, in points (intent_slot tasks: intent acc / slot F1; "
             "mean over seeds;", "checkpoints chosen on English dev); training cost = training time / zero-shot's.", ""]
    for name, cls in sorted(METHODS.items(), key=lambda item: item[0] != "zero_shot"):
        lines += [f"{name}: {cls.description}", f"  needs: {cls.needs}"]
        if name != "zero_shot":
            lines.append(f"  training cost: {cost_text(data, name)} zero-shot's")
        if name != "zero_shot":
            gains = [f"{task} {gain_text(by.get((name, task)))}" for task in data["tasks"]]
            lines.append("  gain: " + ", ".join(gains) if any((name, t) in by for t in data["tasks"])
                         else "  gain: not measured on these tasks")
        lines.append("")
    return "\n".join(lines)
