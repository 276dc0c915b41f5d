"""Collect the runs of the xeroalign-filter study (benchmarks/studies/xeroalign-filter.yaml; and the 1000-step baselines
of benchmarks/translation.py and the xsid-zero-shot study) into results/xeroalign-filter.json and the generalisation heatmap."""
from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path

import yaml

METRICS = ("intent_acc", "slot_f1", "semantic_acc")
# run-name prefix -> (method, regimes the row belongs to); the 1000-step runs process 32,000 sentences, as the
# 500-step paired runs do; the 500-step zero-shot runs take as many steps as the paired runs
SOURCES = {
    "xsid-zero-shot": ("zero_shot", ["equal_sentences"]),
    "mtod-zero-shot": ("zero_shot", ["equal_sentences"]),
    "xsid-zero-shot-500": ("zero_shot", ["equal_steps"]),
    "mtod-zero-shot-500": ("zero_shot", ["equal_steps"]),
    "xsid-translate-train-da": ("translate_train_da", ["equal_sentences"]),
    "xsid-translate-train-sr": ("translate_train_sr", ["equal_sentences"]),
    "mtod-translate-train-es": ("translate_train", ["equal_sentences"]),
    "xsid-xeroalign-da": ("xeroalign", ["equal_steps", "equal_sentences"]),
    "xsid-xeroalign-sr": ("xeroalign_align_sr", ["equal_steps", "equal_sentences"]),
    "xsid-xeroalign-es": ("xeroalign_align_es", ["equal_steps", "equal_sentences"]),
    "xsid-xeroalign-da-sum": ("xeroalign_reduction_sum", ["equal_steps", "equal_sentences"]),
    "mtod-xeroalign-es": ("xeroalign", ["equal_steps", "equal_sentences"]),
    "mtod-filter-es": ("filter", ["equal_steps", "equal_sentences"]),
    "xsid-filter-sr": ("filter", ["equal_steps", "equal_sentences"]),
    "mtod-filter-self-teaching-es": ("filter_self_teaching", ["equal_steps", "equal_sentences"]),
    "xsid-filter-self-teaching-sr": ("filter_self_teaching", ["equal_steps", "equal_sentences"]),
}
NOTES = (
    "multilingual-e5-small, frozen embeddings, lr 3e-4, batch 32 (pairs for xeroalign/filter*), checkpoint chosen "
    "on the ENGLISH dev set (paired FILTER models: English dev + its MT). Paired methods: 500 steps x 32 pairs = "
    "32,000 sentences. regime equal_steps: zero_shot at 500 steps x 32 (16,000 sentences); regime "
    "equal_sentences: zero_shot and translate_train at 1000 steps x 32 (32,000 sentences; translate_train mixes "
    "source and translated examples). Each paired row appears in both regimes. Method names: xeroalign = aligned "
    "with xSID's shipped Danish MT (xSID) or Apertium eng->spa (MTOD); xeroalign_align_sr / xeroalign_align_es = "
    "aligned with Apertium eng->hbs_SR / eng->spa instead (generalisation study); translate_train_da / "
    "translate_train_sr = xSID translate-train into that language; filter = FILTER m=1, k=5 (teacher); "
    "filter_self_teaching = student with KL to that seed's teacher (its cost excludes the teacher's). FILTER's "
    "test input is the target utterance + its Apertium translation into English. gap_closed = (method - "
    "zero_shot) / (zero_shot en - zero_shot target), zero_shot of the same regime and seed set. Not run for "
    "lack of time: zero_shot 500-step seed 3 (equal_steps rows have 2 seeds), XeroAlign aligned on es, the "
    "XeroAlign reduction=sum ablation (job xsid-xeroalign-da-sum), FILTER at 1000 steps. peak_rss_mb is the "
    "maximum RSS of the benchmark process, which ran several jobs in turn for "
    "most rows: values after a process's first job are upper bounds (the runner now starts one process per job; "
    "xSID XeroAlign seed 3, every seed-3 MTOD FILTER row, MTOD XeroAlign, xSID FILTER sr and zero_shot 500-step "
    "seed 2 ran that way).")


def _rows(res: dict, method: str, regime: str, batch: int, paired: bool, translation: dict) -> list[dict]:
    ts = res["train_summary"]
    steps = ts.get("step") or res.get("steps")
    sentences = ts.get("train_sentences") or steps * batch * (2 if paired else 1)
    return [{"method": method, "dataset": res["dataset"], "lang": lang, "seed": res["seed"], "regime": regime,
             **{k: round(m[k], 4) for k in METRICS}, "n_test": m["n"], "steps": steps, "batch_size": batch,
             "train_sentences": sentences, "best_step": res["best_step"],
             "train_seconds": round(ts.get("train_seconds", 0), 1),
             "seconds_per_step": round(ts.get("train_seconds", 0) / max(steps, 1), 3),
             "tokens_per_second": round(ts.get("tokens_per_second", 0), 1),
             "peak_rss_mb": round(ts.get("peak_rss_mb", 0)), "selection": "source-dev",
             "translation": translation}
            for lang, m in res["per_language"].items()]


def gather(runs: Path) -> list[dict]:
    rows = []
    for prefix, (method, regimes) in SOURCES.items():
        for path in sorted(runs.glob(f"{prefix}-seed*/results.json")):
            if path.parent.name.rsplit("-seed", 1)[0] != prefix:
                continue
            res = json.loads(path.read_text())
            cfg = yaml.safe_load((path.parent / "config.yaml").read_text())
            paired = cfg["train"]["method"] in ("xeroalign", "filter", "filter_self_teaching")
            tr = cfg.get("translation", {})
            translation = ({"languages": tr.get("languages"), "translator": tr.get("translator"),
                            "per_language": tr.get("per_language")} if cfg["train"]["method"] != "zero_shot"
                           else None)
            for regime in regimes:
                rows += _rows(res, method, regime, cfg["train"]["batch_size"], paired, translation)
    return rows


def heatmap(rows: list[dict], path: Path) -> dict:
    """Align-language x test-language intent accuracy (mean over seeds) of XeroAlign on xSID, with zero-shot at
    equal sentences as the first row; the right panel shows the difference to zero-shot."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wanted = {"zero_shot": "none (zero-shot)", "xeroalign": "da (shipped MT)", "xeroalign_align_sr": "sr (Apertium)",
              "xeroalign_align_es": "es (Apertium)"}
    sel = [r for r in rows if r["dataset"] == "xsid" and r["regime"] == "equal_sentences" and r["method"] in wanted]
    langs = sorted({r["lang"] for r in sel if r["method"] == "zero_shot"}, key=lambda x: (x != "en", x))
    table, seeds = {}, {}
    for method in wanted:
        vals = {lang: [r["intent_acc"] for r in sel if r["method"] == method and r["lang"] == lang] for lang in langs}
        if all(vals.values()):
            table[method] = {lang: statistics.mean(v) for lang, v in vals.items()}
            seeds[method] = min(len(v) for v in vals.values())
    if "zero_shot" not in table or len(table) < 2:
        return {}
    names = list(table)
    grid = [[100 * table[m][lang] for lang in langs] for m in names]
    delta = [[g - z for g, z in zip(row, grid[0])] for row in grid]
    fig, axes = plt.subplots(1, 2, figsize=(19, 1.4 + 0.7 * len(names)))
    for ax, data, title, cmap in [(axes[0], grid, "intent accuracy (%)", "viridis"),
                                  (axes[1], delta, "change vs zero-shot (points)", "RdBu")]:
        lim = max(abs(v) for row in data for v in row) if cmap == "RdBu" else None
        im = ax.imshow(data, cmap=cmap, aspect="auto", vmin=-lim if lim else None, vmax=lim)
        ax.set_xticks(range(len(langs)), langs, rotation=60)
        ax.set_yticks(range(len(names)), [f"{wanted[n]}, {seeds[n]} seed{'s' * (seeds[n] > 1)}" for n in names])
        for i, row in enumerate(data):
            for j, v in enumerate(row):
                ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7)
        ax.set_title(f"XeroAlign on xSID, aligned on (rows): {title}")
        ax.set_xlabel("test language")
        fig.colorbar(im, ax=ax, fraction=0.02)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {m: {lang: round(v, 4) for lang, v in table[m].items()} for m in names}


def collect(runs: Path, results: Path) -> dict:
    rows = gather(runs)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    out = {"benchmark": "xeroalign-filter", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": commit or "unknown", "machine": "2 CPU cores, no GPU", "model": "multilingual-e5-small",
           "selection": "source-dev", "notes": NOTES}
    results.mkdir(exist_ok=True)
    out["generalisation_intent_acc"] = heatmap(rows, results / "xeroalign-generalisation.png")
    out["rows"] = rows
    (results / "xeroalign-filter.json").write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return out
