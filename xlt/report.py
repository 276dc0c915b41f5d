"""Human-readable reports: a markdown/console table and one PNG bar chart per metric across languages."""
from __future__ import annotations

import json
from pathlib import Path


def markdown_table(results: dict, metrics: tuple[str, ...]) -> str:
    header = (f"model {results['model']} | method {results['method']} | data {results['dataset']} "
              f"({results['split']}) | seed {results['seed']} | steps {results['steps']} "
              f"(best at {results['best_step']}) | train examples {results['train_examples']} | "
              f"selection: {results['selection']} ({results['selection_detail']})")
    lines = [header, ""]
    if results.get("target_shots"):  # labelled target examples in training: few-shot, not zero-shot
        lines += ["NOT zero-shot: labelled target examples in training (data.target_shots): " + ", ".join(
            f"{lang} {s['examples']} from its {s['split']} set" for lang, s in results["target_shots"].items()), ""]
    if results.get("dataset_notes"):
        lines += [f"Note: {results['dataset_notes']}.", ""]
    lines += ["| lang | " + " | ".join(metrics) + " | n |", "|---" * (len(metrics) + 2) + "|"]
    for lang, m in results["per_language"].items():
        mark = " (source)" if lang == results["source_lang"] else ""
        lines.append(f"| {lang}{mark} | " + " | ".join(f"{100 * m[k]:.1f}" for k in metrics) + f" | {m['n']} |")
    for key, label in (("target_avg", "target avg"), ("transfer_gap", "transfer gap (src - tgt)")):
        if key in results:
            lines.append(f"| {label} | " + " | ".join(f"{100 * results[key][k]:.1f}" for k in metrics) + " | |")
    if results.get("data_repairs"):  # the scored data was repaired (orphan I- tags, empty tokens): never silent
        lines += ["", "Repaired before scoring (xlt's stated rules): " + "; ".join(
            f"{lang}: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
            for lang, kinds in results["data_repairs"].items())]
    return "\n".join(lines) + "\n"


def bar_charts(results: dict, metrics: tuple[str, ...], folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    langs = list(results["per_language"])
    paths = []
    for metric in metrics:
        values = [100 * results["per_language"][lang][metric] for lang in langs]
        fig, ax = plt.subplots(figsize=(max(4, 0.5 * len(langs) + 2), 3.2))
        colors = ["tab:orange" if lang == results["source_lang"] else "tab:blue" for lang in langs]
        ax.bar(langs, values, color=colors)
        ax.set_ylim(0, 100)
        ax.set_ylabel(metric + " (%)")
        ax.set_title(f"{results['method']} {results['model']} seed {results['seed']}: {metric}", fontsize=9)
        ax.tick_params(axis="x", rotation=60)
        fig.tight_layout()
        path = folder / f"{metric}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def write_report(run_dir: Path, results: dict, metrics: tuple[str, ...], tag: str = "") -> str:
    """Write ``results{-tag}.json``/``.md`` and the charts (in ``charts{-tag}/`` when tagged)."""
    stem = f"results-{tag}" if tag else "results"
    (run_dir / f"{stem}.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    table = markdown_table(results, metrics)
    (run_dir / f"{stem}.md").write_text(table)
    charts = run_dir / f"charts-{tag}" if tag else run_dir
    charts.mkdir(exist_ok=True)
    bar_charts(results, metrics, charts)
    return table
