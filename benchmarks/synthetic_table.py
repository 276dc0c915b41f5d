"""The synthetic benchmark's summary: ``gap_closed`` on each target row and the Markdown table of means over seeds
(``benchmarks/synthetic.py`` writes both into ``benchmarks/results/synthetic.{json,md}``)."""
from __future__ import annotations

import statistics

# each dataset's main metrics, and the gap_closed field each one gives
MAIN = {"xsid": ("intent_acc", "slot_f1"), "pawsx": ("accuracy",)}
GAP = {"intent_acc": "gap_closed_intent", "slot_f1": "gap_closed_slot", "accuracy": "gap_closed_accuracy"}


def machine(rows: list[dict]) -> str:
    devices = sorted({str(r["device"]) for r in rows if r.get("device")})  # pre-training rows name no device
    if all(d.startswith("cpu") for d in devices):
        return "2 CPU cores, no GPU"
    import torch

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "a GPU"
    return f"{name}, devices {', '.join(devices)}"


def add_gap_closed(rows: list[dict]) -> None:
    """gap_closed_<metric> on target rows: (method - zero-shot) / (English - zero-shot), same dataset and seed."""
    zs = {(r["dataset"], r["seed"], r["lang"]): r for r in rows if r["method"] == "zero_shot"}
    for r in rows:
        if r["lang"] == "en" or r["dataset"] not in MAIN:
            continue
        if r["method"].startswith("trelm_"):  # trained on the target (TreLM's setting): no zero-shot gap to close
            continue
        base, english = zs.get((r["dataset"], r["seed"], r["lang"])), zs.get((r["dataset"], r["seed"], "en"))
        for metric in MAIN[r["dataset"]]:
            key = GAP[metric]
            if base is None or english is None or english[metric] == base[metric]:
                r[key] = None
                continue
            r[key] = round((r[metric] - base[metric]) / (english[metric] - base[metric]), 4)


def table(rows: list[dict]) -> str:
    lines = ["# Synthetic-language checks (English -> syn-en / syn-en-perm)", "",
             "Mean over seeds; target-language metrics; gap closed = (method - zero-shot) / (English - zero-shot).",
             "", "| dataset | variant | method | seeds | target | English | gap closed |",
             "|---|---|---|---|---|---|---|"]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["lang"] != "en" and r["dataset"] in MAIN:
            groups.setdefault((r["dataset"], r["variant"], r["method"]), []).append(r)
    for (dataset, variant, method), mine in sorted(groups.items()):
        metrics = MAIN[dataset]
        english = [e for e in rows if e["dataset"] == dataset and e["method"] == method and e["lang"] == "en"
                   and e["variant"] in (variant, None) and e["seed"] in {m["seed"] for m in mine}]

        def fmt(rs: list[dict], key: str) -> str:
            values = [x[key] for x in rs if x.get(key) is not None]
            return f"{100 * statistics.mean(values):.1f}" if values else "-"
        gaps = [GAP[m] for m in metrics]
        no_english = "(trained on the target)" if method.startswith("trelm_") else "(zero-shot run)"
        lines.append(f"| {dataset} | {variant} | {method} | {len(mine)} | "
                     f"{' / '.join(fmt(mine, m) for m in metrics)} | "
                     f"{' / '.join(fmt(english, m) for m in metrics) if english else no_english} | "
                     f"{' / '.join(fmt(mine, g) + ' %' for g in gaps)} |")
    return "\n".join(lines) + "\n"
