"""Benchmark tables and charts for the docs, generated from ``benchmarks/results/*.json`` at build time.

A page asks for a table with a marker (an HTML comment, so the source still reads as Markdown):

    <!-- xlt:pivot file=xnli metric=accuracy where=method:zero_shot|filter langs=summary chart=1 -->
    <!-- xlt:rows file=training-speed columns=variant,tokens_per_second,fraction_of_peak -->
    <!-- xlt:rows file=serving key=summary -->

``pivot``: one row per group of result rows (``by``: default the fields among method / variant / regime / dataset
that differ), one column per language (``langs=all``) or the source language + the target average
(``langs=summary``, the default) or the languages listed (``langs=en,es``); a cell is mean ± std over seeds (the
seed count in brackets where seeds differ), fractions shown as percentages.  ``where=key:v1|v2,key2:v``
filters rows (``-`` matches a missing field, ``v*`` any value starting with v).  ``avg=seen:de|es;other:fr``: extra columns averaging named language groups.  ``chart=1`` adds a per-language
bar chart.
``rows``: the rows as they are, the columns named (``a.b``: a nested field); ``key=NAME``: the file's
top-level summary object NAME instead, or, when NAME is a list, its rows.  Every table says the file, its commit, machine, model,
selection protocol, seeds and the command that reproduces it.  Nothing here is typed by hand.
"""
from __future__ import annotations

import io
import json
import re
import shlex
import statistics
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
MARKER = re.compile(r"<!--\s*xlt:(pivot|rows|headline)\s*(.*?)\s*-->")
# metrics stored as fractions in [0, 1] (RESULTS_FORMAT.md): shown as percentages
FRACTIONS = {"accuracy", "f1", "precision", "recall", "intent_acc", "slot_f1", "semantic_acc", "intent_slot_mean",
             "fraction_of_peak", "identical_rate", "retrieval_top1",
             "gap_closed_intent", "gap_closed_slot", "gap_closed_accuracy", "span_f1",
             *(f"{m}_{s}" for m in ("intent_acc", "slot_f1", "semantic_acc") for s in ("mean", "std"))}
# which script writes which results file, and how to run it (the scripts' own usage lines)
SCRIPTS = {
    "architectures": "python benchmarks/architectures.py",
    "continued-mlm-ja": "python benchmarks/study.py continued-mlm --data-dir ../shared/data",
    "filter-equal-steps": "python benchmarks/study.py tasks --data-dir ../shared/data --only mtod-filter-es-1000 "
                          "mtod-filter-self-teaching-es-1000",
    "mtod-zero-shot-newcore": "python benchmarks/study.py tasks --data-dir ../shared/data --only mtod-zero-shot-newcore",
    "xsid-zero-shot-newcore": "python benchmarks/study.py tasks --data-dir ../shared/data --only xsid-zero-shot-newcore",
    "panx": "python benchmarks/study.py tasks --data-dir ../shared/data",
    "panx-bf16": "python benchmarks/study.py tasks --data-dir ../shared/data --only panx-zero-shot-bf16",
    "pawsx": "python benchmarks/study.py tasks --data-dir ../shared/data",
    "udpos": "python benchmarks/study.py tasks --data-dir ../shared/data",
    "xnli": "python benchmarks/study.py tasks --data-dir ../shared/data",
    "projection": "python benchmarks/projection.py --data-dir ../shared/data (at commit 9c5d80d; removed since: git keeps it)",
    "reproducibility": "python benchmarks/study.py reproducibility --data-dir ../shared/data",
    "selection": "python benchmarks/study.py selection --data-dir ../shared/data",
    "serving": "python benchmarks/serving.py --data-dir ../shared/data",
    "synthetic": "python benchmarks/study.py synthetic --data-dir ../shared/data",
    "tall": "python benchmarks/study.py tall --data-dir ../shared/data",
    "fidelity": "python benchmarks/study.py fidelity --data-dir ../shared/data [--only ROW]",
    "few-shot": "python benchmarks/study.py few-shot --data-dir ../shared/data [--seeds 1 2 3] [--only ROW]",
    "tall-copy-probe": "python benchmarks/probes/tall_copy_probe.py --data-dir ../shared/data --steps 300 --eval-every 100 "
                       "[--variants NAME ...] (at commit 3d3baa3; removed since: git keeps it)",
    "gemm-ceiling": "python benchmarks/gemm_ceiling.py (at commit 3d3baa3; removed since: git keeps it)",
    "training-speed": "python benchmarks/training_speed.py --data-dir ../shared/data",
    "training-speed-bf16": "python benchmarks/training_speed.py --data-dir ../shared/data --precision bf16",
    "training-speed-cuda": "bash benchmarks/gpu_run.sh COMMIT speed (on a GPU, inputs from benchmarks/gpu_pack.py)",
    "training-speed-cuda-b512-bf16": "bash benchmarks/gpu_run.sh COMMIT speed (on a GPU, inputs from "
                                     "benchmarks/gpu_pack.py)",
    "trelm-synthetic-alignment": "python benchmarks/trelm_alignment_probe.py --data-dir ../shared/data (at commit 1389b2d; removed since: git keeps it)",
    "trelm-row-geometry": "python benchmarks/trelm_row_geometry.py --data-dir ../shared/data --rescaled (at commit 1389b2d; removed since: git keeps it)",
    "tall-scale": "BUDGET=170 BATCH=1024 bash benchmarks/gpu_run.sh COMMIT tall 330 (on a GPU: "
                  "benchmarks/tall_scale.py, at commit 65b0327; removed since: git keeps it)",
    "synthetic-basin": "python benchmarks/synthetic_basin.py --data-dir ../shared/data (at commit 1389b2d; removed since: git keeps it)",
    "translation": "python benchmarks/study.py translation --data-dir ../shared/data",
    "translation-throughput": "python benchmarks/study.py translation --only translation-throughput",
    "trelm": "python benchmarks/study.py trelm --data-dir ../shared/data",
    "unicoder": "python benchmarks/study.py unicoder --data-dir ../shared/data",
    "xeroalign-filter": "python benchmarks/study.py xeroalign-filter --data-dir ../shared/data",
    "xsid-zero-shot": "python benchmarks/study.py xsid-zero-shot --data-dir ../shared/data --only xsid-zero-shot",
    "xsid-zero-shot-cuda": "python benchmarks/study.py xsid-zero-shot --data-dir ../shared/data --only "
                           "xsid-zero-shot-cuda (on a GPU)",
    "xsid-zero-shot-cuda-bf16": "python benchmarks/study.py xsid-zero-shot --data-dir ../shared/data --only "
                                "xsid-zero-shot-cuda-bf16 (on a GPU)",
    "xsid-zero-shot-bf16": "python benchmarks/study.py xsid-zero-shot --data-dir ../shared/data --only "
                           "xsid-zero-shot-bf16",
    "xsid-zero-shot-no-attention-dropout": "python benchmarks/study.py xsid-zero-shot --data-dir ../shared/data "
                                           "--only xsid-zero-shot-no-attention-dropout",
    "xsid-zero-shot-control": "python benchmarks/study.py xsid-zero-shot --data-dir ../shared/data --only "
                              "xsid-zero-shot-control",
}
# the shipped configs behind each results file (files whose rows name their config say it themselves)
CONFIGS = {
    "architectures": "the tiny random model of each family with the test configs",
    "continued-mlm-ja": "pretrain-mlm-ja, then xsid-zero-shot on its model",
    "filter-equal-steps": "mtod-filter-es, mtod-filter-self-teaching-es with train.max_steps=1000",
    "mtod-zero-shot-newcore": "mtod-zero-shot", "xsid-zero-shot-newcore": "xsid-zero-shot",
    "xsid-zero-shot": "xsid-zero-shot", "xsid-zero-shot-cuda": "xsid-zero-shot",
    "xsid-zero-shot-cuda-bf16": "xsid-zero-shot train.mixed_precision=bf16",
    "xsid-zero-shot-bf16": "xsid-zero-shot train.mixed_precision=bf16",
    "xsid-zero-shot-no-attention-dropout": "xsid-zero-shot model.attention_dropout=0",
    "xsid-zero-shot-control": "xsid-zero-shot (re-run beside xsid-zero-shot-no-attention-dropout, same CPU)",
    "panx": "panx-zero-shot (+ train.method and translation.* for the es rows)",
    "panx-bf16": "panx-zero-shot train.lr=1e-4 train.mixed_precision=bf16",
    "pawsx": "pawsx-zero-shot (+ train.method and translation.* for the es rows)",
    "udpos": "udpos-zero-shot (+ train.method and translation.* for the es rows)",
    "xnli": "xnli-zero-shot (+ train.method and translation.* for the es rows)",
    "serving": "xsid-zero-shot (seed 1), exported with xlt export --int8",
    "synthetic": "xsid-zero-shot / pawsx-zero-shot and the stage configs, with the synthetic settings of "
                 "benchmarks/studies/synthetic.yaml",
    "tall": "pretrain-tall-en-ja, pretrain-tall-en-de, then xsid-zero-shot train.method=tall",
    "few-shot": "xsid-zero-shot / mtod-zero-shot with data.target_shots (xSID: shots from the target dev "
                "sets; MTOD: from the Spanish training set; NOT zero-shot where > 0)",
    "fidelity": "the rows of benchmarks/studies/fidelity.yaml (each: a shipped config or stage + overrides)",
    "tall-copy-probe": "pretrain-tall-*'s phase 1 (decoder only, lr 1e-3, batch 32, its noise), on English text",
    "gemm-ceiling": "no config: multilingual-e5-small's layer shapes (its config.json), batch 32",
    "training-speed": "xsid-zero-shot (batch 32; model.attention_dropout=0 in the *_no_attention_dropout rows); "
                      "pretrain-mlm-ja's text for MLM",
    "training-speed-bf16": "xsid-zero-shot (batch 32) train.mixed_precision=bf16; pretrain-mlm-ja's text for MLM",
    "training-speed-cuda": "xsid-zero-shot (batch 32); pretrain-mlm-ja's text for MLM",
    "training-speed-cuda-b512-bf16": "xsid-zero-shot train.batch_size=512 train.mixed_precision=bf16",
    "trelm-synthetic-alignment": "no model: a 30k WordPiece and two 300-d fastText spaces (the TreLM bridge's), "
                                 "VecMap similarity seed + 5 MUSE refinement rounds",
    "trelm-row-geometry": "pretrain-trelm-es's base (direct map; bridged: the trelm study's trelm-bridged row), then its "
                          "commonality phase alone on the rescaled bridged rows",
    "synthetic-basin": "pretrain-mlm-ja with the synthetic study's mlm_embeddings overrides, from synthetic "
                       "rows moved alpha of the way to their English originals",
    "tall-scale": "pretrain-tall-en-ja (batch 1024, bf16, steps fitted to the budget), then xsid-zero-shot "
                  "train.method=tall",
    "translation": "mtod-translate-train-es, mtod-translate-test-es, xsid-translate-train-sr, xsid-translate-train-da, "
                   "xsid-multi-language, xsid-translate-test (+ the zero-shot configs)",
    "translation-throughput": "none (the translators alone)",
    "projection": "mtod-translate-train-es, xsid-translate-train-sr, xsid-translate-train-da (gold_projection: none, "
                  "xSID's test + dev files aligned directly)",
    "trelm": "pretrain-trelm-es (variants by options), then mtod-target-trained-es",
    "unicoder": "pretrain-unicoder (phases.*.objectives per variant), then xnli-zero-shot / xsid-zero-shot",
    "xeroalign-filter": "xsid-zero-shot, xsid-xeroalign, mtod-xeroalign-es, xsid-filter-sr, mtod-filter-es and their "
                        "self-teaching configs, mtod-translate-train-es, xsid-translate-train-sr / -da",
}
GROUP_FIELDS = ("dataset", "method", "variant", "regime")


class MarkerError(ValueError):
    """A marker that cannot be rendered (unknown file, no rows): the docs build fails, naming the page."""


def load(name: str) -> dict:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        raise MarkerError(f"no results file benchmarks/results/{name}.json")
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else {"rows": data}


def parse(params: str) -> dict[str, str]:
    out = {}
    for token in shlex.split(params):
        key, _, value = token.partition("=")
        out[key] = value
    return out


def _matches(row: dict, where: str) -> bool:
    for clause in filter(None, where.split(",")):
        key, _, values = clause.partition(":")
        allowed = values.split("|")
        value = row.get(key)
        if not (("-" in allowed and value is None) or (value is not None and any(
                str(value) == a or (a.endswith("*") and str(value).startswith(a[:-1])) for a in allowed))):
            return False
    return True


def _fmt(values: list[float], metric: str, seeds_expected: int) -> str:
    if not values:
        return "–"
    scale = 100 if metric in FRACTIONS else 1
    digits = 1 if metric in FRACTIONS else 2
    mean = statistics.mean(values) * scale
    text = f"{mean:.{digits}f}"
    if len(values) > 1:
        text += f" ± {statistics.stdev(values) * scale:.{digits}f}"
    if len(values) != seeds_expected:
        text += f" ({len(values)})"
    return text


def header(name: str, data: dict, rows: list[dict]) -> str:
    seeds = sorted({r["seed"] for r in rows if r.get("seed") is not None}, key=str)
    bits = [f"`benchmarks/results/{name}.json`"]
    for key in ("git_commit", "created", "machine", "model"):
        own = {str(r[key]) for r in rows if r.get(key)}  # rows made apart from the file's run say so themselves
        value = own.pop() if len(own) == 1 and all(r.get(key) for r in rows) else data.get(key)
        if value:
            bits.append(f"{key.replace('_', ' ')}: {value}")
    configs = sorted({str(r["config"]) for r in rows if r.get("config")})
    config = ", ".join(configs) or CONFIGS.get(name)
    if config is None:
        raise MarkerError(f"results file {name}.json names no config: add it to docgen CONFIGS")
    bits.append(f"config: {config}")
    bits.append(f"selection: {data.get('selection') or 'n/a'}")
    if seeds:
        bits.append(f"seeds: {', '.join(str(s) for s in seeds)}")
    commands = {str(r["command"]) for r in rows if r.get("command")}
    command = commands.pop() if len(commands) == 1 and all(r.get("command") for r in rows) else SCRIPTS.get(name)
    if command is None:
        raise MarkerError(f"results file {name}.json has no command in docgen SCRIPTS: say which script writes it")
    return "<small>From " + " · ".join(bits) + f". Reproduce: `{command}`.</small>\n"


def pivot(params: dict[str, str]) -> tuple[str, dict[str, list[float]], list[str], str]:
    """The pivot table's Markdown (``metric=a,b``: a block of columns per metric), and for the chart: the first
    metric's per-group means by language."""
    name, metrics = params["file"], params.get("metric", "accuracy").split(",")
    data = load(name)
    rows = [r for r in data["rows"] if _matches(r, params.get("where", ""))
            and all(isinstance(r.get(m), (int, float)) for m in metrics)]
    if not rows:
        raise MarkerError(f"{name}.json: no rows with {', '.join(metrics)} where {params.get('where', '')!r}")
    source = params.get("source", "en")
    by = params["by"].split(",") if params.get("by") else [
        f for f in GROUP_FIELDS if len({r.get(f) for r in rows}) > 1] or ["method"]
    # group -> lang -> seed -> row
    groups: dict[tuple, dict[str, dict]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        groups[tuple(r.get(f) for f in by)][str(r.get("lang"))][r.get("seed")] = r
    all_langs = sorted({lang for g in groups.values() for lang in g}, key=lambda x: (x != source, x))
    mode = params.get("langs", "summary")
    exclude = set(params.get("exclude", "").split(",")) - {""}
    targets = [x for x in all_langs if x != source and x not in exclude]
    columns = all_langs if mode == "all" else [x for x in (mode.split(",") if mode != "summary" else [source])
                                               if x in all_langs]
    with_avg = mode in ("summary", "all") and bool(targets)
    # avg=seen:de|es|tr|zh;other:...: extra averages over named language groups
    subsets = [(label, langs.split("|")) for label, _, langs in
               (item.partition(":") for item in params.get("avg", "").split(";") if item)]
    seeds_expected = max(len(s) for g in groups.values() for s in g.values())
    head = [f.replace("_", " ") for f in by]
    for m in metrics:
        label = f" {m.replace('_', ' ')}" if len(metrics) > 1 else ""
        head += [f"{c}{label}" for c in columns] + [f"{name} avg ({len(ls)}){label}" for name, ls in subsets]
        head += [f"target avg ({len(targets)}){label}"] if with_avg else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    chart: dict[str, list[float]] = {}
    for key, by_lang in groups.items():
        cells = [str(k) if k is not None else "–" for k in key]
        for m in metrics:
            cells += [_fmt([r[m] for r in by_lang[c].values()], m, seeds_expected) if c in by_lang else "–"
                      for c in columns]
            for langs in [ls for _, ls in subsets] + ([targets] if with_avg else []):
                seeds = sorted({s for x in langs for s in by_lang.get(x, {})}, key=str)
                per_seed = [statistics.mean(by_lang[x][s][m] for x in langs if s in by_lang.get(x, {}))
                            for s in seeds]
                missing = "" if all(x in by_lang for x in langs) else " (some languages missing)"
                cells.append(_fmt(per_seed, m, seeds_expected) + missing if per_seed else "–")
        lines.append("| " + " | ".join(cells) + " |")
        chart[" / ".join(str(k) for k in key if k is not None) or "all"] = [
            statistics.mean(r[metrics[0]] for r in by_lang[x].values()) if x in by_lang else float("nan")
            for x in all_langs]
    pct = any(m in FRACTIONS for m in metrics)
    caption = (f"\n<small>{', '.join(m.replace('_', ' ') for m in metrics)} on the {params.get('split', 'test')} sets"
               + (", in %" if pct else "") + "; mean ± std over seeds (a count in brackets: fewer seeds than the "
               "table's others)." + (" `target avg`: each seed's mean over the target languages, then mean ± std."
                                     if with_avg else "") + "</small>\n")
    return header(name, data, rows) + "\n" + "\n".join(lines) + "\n" + caption, chart, all_langs, metrics[0]


def rows_table(params: dict[str, str]) -> str:
    name = params["file"]
    data = load(name)
    block = data.get(params["key"]) if params.get("key") else None
    if params.get("key") and not isinstance(block, list):  # a top-level summary object: one line per entry
        if not isinstance(block, dict):
            raise MarkerError(f"{name}.json has no object or list {params['key']!r}")
        lines = ["| " + params["key"].replace("_", " ") + " | value |", "|---|---|"]
        lines += [f"| {k.replace('_', ' ')} | {v} |" for k, v in block.items()]
        return header(name, data, data["rows"]) + "\n" + "\n".join(lines) + "\n"
    # key=NAME naming a list: those rows (a second table of the file) instead of "rows"
    rows = [r for r in (block if block is not None else data["rows"]) if _matches(r, params.get("where", ""))]
    if not rows:
        raise MarkerError(f"{name}.json: no rows where {params.get('where', '')!r}")
    columns = params["columns"].split(",")
    lines = ["| " + " | ".join(c.replace("_", " ") for c in columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = []
        for c in columns:
            value = r
            for part in c.split("."):  # nested fields: final_eval.bleu
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, float):
                last = c.split(".")[-1]
                value = (f"{value * 100:.1f}" if last in FRACTIONS or last.startswith("heldout_") and
                         last.endswith("_accuracy") else f"{value:.4g}")
            cells.append("–" if value is None else str(value).replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return header(name, data, rows) + "\n" + "\n".join(lines) + "\n"


# the README's and the docs' headline table: zero-shot, English -> every target language, per task
HEADLINE = [("intent + slots", "xsid-zero-shot-newcore", "xSID", "intent_acc", "xsid-zero-shot"),
            ("intent + slots", "xsid-zero-shot-newcore", "xSID", "slot_f1", "xsid-zero-shot"),
            ("sentence pairs", "xnli", "XNLI", "accuracy", "tasks"), ("sentence pairs", "pawsx", "PAWS-X", "accuracy", "tasks"),
            ("NER", "panx", "PAN-X", "f1", "tasks"), ("POS", "udpos", "UD POS", "accuracy", "tasks")]


def headline(link_prefix: str = "docs/benchmarks/") -> str:
    """Zero-shot from English with multilingual-e5-small (English-dev selection), mean ± std over seeds; links
    to the benchmark pages under ``link_prefix``."""
    lines = ["| task | data | metric | English | target average | languages | seeds |", "|---|---|---|---|---|---|---|"]
    for task, name, label, metric, page in HEADLINE:
        rows = [r for r in load(name)["rows"] if r.get("method") == "zero_shot" and metric in r]
        seeds = sorted({r["seed"] for r in rows})
        targets = sorted({r["lang"] for r in rows} - {"en"})
        en = [next(r[metric] for r in rows if r["seed"] == s and r["lang"] == "en") for s in seeds]
        avg = [statistics.mean(r[metric] for r in rows if r["seed"] == s and r["lang"] != "en") for s in seeds]
        lines.append(f"| {task} | [{label}]({link_prefix}{page}.md) | {metric.replace('_', ' ')} | {_fmt(en, metric, len(seeds))} "
                     f"| {_fmt(avg, metric, len(seeds))} | {len(targets)} | {len(seeds)} |")
    return "\n".join(lines) + "\n"


def chart_png(series: dict[str, list[float]], langs: list[str], metric: str) -> bytes:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scale = 100 if metric in FRACTIONS else 1
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(langs) * max(1, len(series)) ** 0.5 + 2), 3.2))
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        ax.bar([j + i * width for j in range(len(langs))], [v * scale for v in values], width, label=label)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(langs))], langs, rotation=60, fontsize=8)
    ax.set_ylabel(metric.replace("_", " "))
    ax.legend(fontsize=7, ncols=2)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def expand(markdown: str, depth: int) -> tuple[str, dict[str, bytes]]:
    """Replace every marker of a page; ``depth``: the page's folder depth under docs/ (for the chart links).
    Returns the page's Markdown and the chart files it links to (path under docs/ -> PNG bytes)."""
    charts: dict[str, bytes] = {}

    def render(match: re.Match) -> str:
        kind, params = match.group(1), parse(match.group(2))
        if kind == "headline":
            return headline(link_prefix="")
        if kind == "rows":
            return rows_table(params)
        text, series, langs, metric = pivot(params)
        if params.get("chart"):
            slug = re.sub(r"[^a-z0-9]+", "-", match.group(2).lower()).strip("-")[:90]
            path = f"charts/{slug}.png"
            charts[path] = chart_png(series, langs, metric)
            text += f"\n![{params['file']}: {metric} per language]({'../' * depth}{path})\n"
        return text

    # markers inside fenced code blocks are examples, not requests
    parts = re.split(r"(^```.*?^```)", markdown, flags=re.M | re.S)
    return "".join(part if part.startswith("```") else MARKER.sub(render, part) for part in parts), charts
