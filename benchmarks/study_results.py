"""The result rows of a declared study's finished runs (``benchmarks/study.py`` collects them into
``benchmarks/results/<name>.json``): what a row of the study YAML says about its results, read from its run folders.

Keys of a study row used here:
  labels        fields copied into each result row; ``{phase}`` in a label is the pre-training phase's name; a list
                gives the row once per value (a paired run in two compute regimes)
  langs         the test languages kept (default: all)
  train_metrics logged training quantities reported as their first and last window's means
  phases        ``each``: a pre-training gives one row per phase; ``directions``: one per translation direction of
                its last evaluation (TALL: BLEU, round-trip BLEU, copy rate); default: one row, its last evaluation
  extract       the name of an ``EXTRACTORS`` entry: more rows read from the run folder (a TreLM base's alignment)
  rows_from     a ``call`` row's output, a JSON list of rows under benchmarks/runs
  fields        values of results.json copied into each fine-tuning row, by dotted path (e.g.
                ``train_summary.selected_steps`` -> ``selected_steps``)
  then          ``{translate_test: {name, labels}}``: the run scored through a translator, as rows of its own
  evaluate      false (a hyper-parameter probe: no test sets): one row, its best source-dev selection value
Keys of the study: ``labels`` (every row's, a row's own win), ``lang_sets: {FIELD: [langs]}`` (FIELD = whether the
row's language is in the list, e.g. the languages a pre-training read), ``lang_labels: {FIELD: {lang: value}}``,
``imports`` (rows of another results file), ``gap_closed`` (``add_gap_closed``).
"""
from __future__ import annotations

import json
import platform
from fnmatch import fnmatch
from pathlib import Path

import yaml

from jobqueue import committed_results

FINE_TUNE_METRICS = ("intent_acc", "slot_f1", "semantic_acc", "accuracy", "f1", "precision", "recall")


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _rounded(values: dict) -> dict:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in values.items() if _number(v)}


def _train_config(folder: Path) -> dict:
    config = folder / "config.yaml"
    return (yaml.safe_load(config.read_text()) or {}) if config.exists() else {}


def _at(values: dict, dotted: str):
    for key in dotted.split("."):
        values = values.get(key) if isinstance(values, dict) else None
    return values


def probe_row(folder: Path, labels: dict) -> list[dict]:
    """A run without test sets (``evaluate: false``): its best selection value on the source-language dev set."""
    path = folder / "metrics.jsonl"
    if not (folder / "train_summary.json").exists() or not path.exists():
        return []
    records = [r for r in map(json.loads, path.read_text().splitlines()) if "selection_value" in r]
    best = max(records, key=lambda r: r["selection_value"])
    cfg = _train_config(folder)
    return [{"dataset": cfg.get("data", {}).get("dataset"), **labels, "lang": cfg.get("data", {}).get("source_lang"),
             "split": "dev", "steps": records[-1]["step"], "best_step": best["step"],
             "selection_value": round(best["selection_value"], 4), "lr": str(cfg.get("train", {}).get("lr"))}]


def fine_tune_rows(row: dict, folder: Path, res: dict, labels: dict) -> list[dict]:
    """One row per test language of a fine-tuning's results (``res``: results.json or a translate-test's)."""
    ts, keep = res["train_summary"], row.get("langs")
    labels = {"method": res["method"], "task": res["task"], "dataset": res["dataset"], **labels}
    train = _train_config(folder).get("train", {})
    batch = train.get("batch_size")
    logged = logged_windows(folder, row.get("train_metrics", []))
    return [{**labels, "lang": lang,
             **{k: round(m[k], 4) for k in FINE_TUNE_METRICS if k in m}, "n_test": m.get("n"), **logged,
             "train_sentences": res.get("train_examples"), "steps": ts["step"], "best_step": res.get("best_step"),
             **({"sentences_processed": ts["step"] * batch} if batch else {}),
             "train_seconds": round(ts["train_seconds"], 1),
             "tokens_per_second": round(ts["tokens_per_second"], 1) if ts.get("tokens_per_second") else None,
             "peak_rss_mb": round(ts["peak_rss_mb"]) if ts.get("peak_rss_mb") else None, "cpu": ts.get("cpu"),
             **({"lr": str(train["lr"])} if "lr" in train else {}),
             **{path.rsplit(".", 1)[-1]: _at(res, path) for path in row.get("fields", [])}}
            for lang, m in res["per_language"].items() if keep is None or lang in keep]


def pretrain_rows(row: dict, res: dict, labels: dict) -> list[dict]:
    """The last evaluation of a pre-training (BLEU / loss / accuracy; steps and time summed over the phases), or with
    ``phases: each`` one row per phase: its evaluation, cost and trainable parameters."""
    phases = res["phases"]
    base = {"dataset": "pretraining", "lang": "-"}
    if row.get("phases") == "directions":
        return direction_rows(res, labels)
    if row.get("phases") != "each":
        last = phases[-1]["final_eval"]
        return [{**base, **labels, **{k: round(v, 4) for k, v in last.items() if isinstance(v, float)},
                 "steps": sum(p["summary"]["step"] for p in phases),
                 "train_seconds": round(sum(p["summary"]["train_seconds"] for p in phases), 1),
                 "cpu": phases[-1]["summary"].get("cpu"),
                 # the budget of each phase and its held-out metrics (TreLM: bits per word per language)
                 "phases": [{"name": p["name"], "steps": p["summary"]["step"],
                             "train_seconds": round(p["summary"]["train_seconds"]),
                             "heldout": {k: round(v, 4) for k, v in p["final_eval"].items()
                                         if k.startswith("heldout_") and _number(v)}} for p in phases]}]
    out = []
    for phase in phases:
        s = phase["summary"]
        named = {k: v.replace("{phase}", phase["name"]) if isinstance(v, str) else v for k, v in labels.items()}
        out.append({**base, **named, "phase": phase["name"], "steps": s["step"], **_rounded(phase["final_eval"]),
                    "trainable_parameters": phase.get("parameters", {}).get("trainable"),
                    **{k: s.get(k) for k in ("train_sentences", "train_tokens")},
                    "train_seconds": round(s["train_seconds"], 1),
                    "tokens_per_second": round(s["tokens_per_second"], 1) if s.get("tokens_per_second") else None,
                    "peak_rss_mb": round(s["peak_rss_mb"]) if s.get("peak_rss_mb") else None,
                    "device": s.get("device", "cpu"), "threads": s.get("threads")})
    return out


def direction_rows(res: dict, labels: dict) -> list[dict]:
    """One row per direction a -> b of a translation pre-training's last evaluation (``bleu_{a}_{b}`` against a
    reference, ``roundtrip_bleu_{a}`` a -> b -> a on held-out lines, ``identical_{a}_{b}`` the copy rate), with the
    run's cost summed over its phases."""
    from xlt.stages.translation_eval import tokenize_of

    phases, last = res["phases"], res["phases"][-1]["final_eval"]
    total = lambda key: sum(p["summary"][key] for p in phases)  # noqa: E731
    seconds = total("train_seconds")
    cost = {"steps": total("step"), "train_sentences": total("train_sentences"), "train_tokens": total("train_tokens"),
            "train_seconds": round(seconds, 1),
            "tokens_per_second": round(total("train_tokens") / seconds, 1) if seconds else None,
            "peak_rss_mb": round(max(p["summary"]["peak_rss_mb"] for p in phases)),
            "phases": "; ".join(f"{p['name']} {p['summary']['step']} steps {p['objectives']}" for p in phases),
            "vocab_kept": res.get("vocab_kept"), "corpus_train_sentences": res["corpus"]["train_sequences"],
            "cpu": phases[-1]["summary"].get("cpu")}
    for r in ((res.get("export") or {}).get("row_init") or {}).values():  # options.row_init=bridge: the rows' score
        cost["true_row_nearest"] = r["true_row_nearest"]
    rows = []
    for key in sorted(k for k in last if k.startswith("identical_")):
        a, b = key.split("_")[1:]
        rows.append({"dataset": "mono+reference", **labels, "lang": f"{a}-{b}",
                     "bleu": round(last.get(f"bleu_{a}_{b}", float("nan")), 2), "bleu_tokenize": tokenize_of(b),
                     **({"char_bleu": round(last[f"char_bleu_{a}_{b}"], 2)} if f"char_bleu_{a}_{b}" in last else {}),
                     "roundtrip_bleu": round(last[f"roundtrip_bleu_{a}"], 2),
                     "identical_rate": round(last[key], 3), **cost})
    return rows


def trelm_alignment(folder: Path, labels: dict) -> list[dict]:
    """A TreLM base's word-translation P@1 after each alignment step (base/migration.json; MUSE test split, CSLS)."""
    path = folder / "base" / "migration.json"
    if not path.exists():
        return []
    m = json.loads(path.read_text())
    initialising = m.get("initialising_step", f"{m.get('initialised_by')}+procrustes")
    return [{**labels, "method": "trelm_alignment", "dataset": m["test_dictionary"], "step": step,
             "precision_at_1": round(p["all"], 4),
             "precision_at_1_different_strings": None if p["different_strings"] is None
             else round(p["different_strings"], 4),
             "initialises_embeddings": step == initialising, "map_into": m.get("map_into", "english_model"),
             "vocabulary": m["vocabulary"], "fasttext": m.get("fasttext", m.get("bridge", {}).get("fasttext_target")),
             "seconds": round(m["seconds"], 1),
             # the identical-strings step's diagnostic: maps fitted on half its anchors, retrieving the other half
             **({"heldout_anchors": m["heldout_anchors"]} if step == "identical_strings" and "heldout_anchors" in m
                else {})}
            for step, p in m["precision_at_1"].items()]


EXTRACTORS = {"trelm_alignment": trelm_alignment}


def result_rows(row: dict, folder: Path, seed: int, study: dict | None = None) -> list[dict]:
    """The result rows of one finished run: one per test language (fine-tuning; ``then`` a translate-test's too),
    or its pre-training's evaluation(s); ``extract`` rows as soon as the run folder holds what they read."""
    study = study or {}
    for key, value in row.get("labels", {}).items():
        if isinstance(value, list):  # the run's rows once per value (a paired run in two compute regimes)
            return [x for v in value for x in result_rows({**row, "labels": {**row["labels"], key: v}}, folder, seed,
                                                          study)]
    labels = {**study.get("labels", {}), **row.get("labels", {}), "run": folder.name, "seed": seed}
    if row.get("evaluate") is False:
        return probe_row(folder, labels)
    rows = []
    finished = (folder / "results.json").exists()
    # a finished stage's own base, or a base_only row's: a base rebuilt (for a baseline that reuses it) beside a
    # stage that never finished here is not the base a committed stage row came from
    if row.get("extract") and (finished or row.get("base_only")):
        rows += EXTRACTORS[row["extract"]](folder, {k: v for k, v in labels.items() if k != "method"})
    if not finished:
        return rows
    res = json.loads((folder / "results.json").read_text())
    if "stage" in row:
        return rows + pretrain_rows(row, res, labels)
    tuned = fine_tune_rows(row, folder, res, labels)
    for tt in translate_tests(row):
        tt_file = folder / f"results-{tt['name']}.json"
        if tt.get("labels") and tt_file.exists():
            tt_res = {**json.loads(tt_file.read_text()), "train_summary": res["train_summary"]}
            tuned += fine_tune_rows({**row, "langs": tt["langs"]}, folder, tt_res, {**labels, **tt["labels"]})
    return rows + with_lang_fields(tuned, study)


def translate_tests(row: dict) -> list[dict]:
    """A row's ``then: {translate_test: ...}``, one or a list: the run scored through a translator at test time."""
    tt = row.get("then", {}).get("translate_test", [])
    return tt if isinstance(tt, list) else [tt]



def with_lang_fields(rows: list[dict], study: dict) -> list[dict]:
    """The study's ``lang_sets`` (FIELD: whether the row's language is listed) and ``lang_labels`` (FIELD: a value
    by language, where the row's labels give none: a zero-shot run's target rows take their language's variant)."""
    for field, langs in study.get("lang_sets", {}).items():
        for r in rows:
            r[field] = r["lang"] in langs
    for field, by_lang in study.get("lang_labels", {}).items():
        for r in rows:
            if r.get(field) is None and r["lang"] in by_lang:
                r[field] = by_lang[r["lang"]]
    return rows


def add_gap_closed(rows: list[dict], spec: dict) -> None:
    """The study's ``gap_closed: {baseline, metrics: {METRIC: FIELD}, skip}``: FIELD = (row - baseline) / (source -
    baseline) on each target row, the baseline method's rows of the same dataset, seed and language (source: its
    source-language row); None where a side is missing or the baseline already equals the source. Methods matching
    ``skip`` (trained on the target: no zero-shot gap to close) and source rows get none."""
    source = spec.get("source", "en")
    key = lambda r, lang: (r.get("dataset"), r.get("seed"), lang)  # noqa: E731
    base = {key(r, r.get("lang")): r for r in rows
            if r.get("method") == spec["baseline"] and r.get("dataset") != "pretraining"}
    datasets = {k[0] for k in base}
    for r in rows:
        skipped = any(fnmatch(str(r.get("method")), p) for p in spec.get("skip", []))
        if r.get("dataset") not in datasets or r.get("lang") == source or skipped:
            continue
        zs, src = base.get(key(r, r["lang"])), base.get(key(r, source))
        for metric, field in spec["metrics"].items():
            if metric in r:
                ok = zs is not None and src is not None and src[metric] != zs[metric]
                r[field] = round((r[metric] - zs[metric]) / (src[metric] - zs[metric]), 4) if ok else None


def logged_windows(folder: Path, keys: list[str]) -> dict:
    """A row's ``train_metrics``: each logged training quantity's mean over the first and the last evaluation
    window of the run (metrics.jsonl keeps one mean per window), e.g. XeroAlign's align_task_grad_ratio."""
    path = folder / "metrics.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()] if keys and path.exists() else []
    out = {}
    for key in keys:
        values = [r[key] for r in records if key in r]
        if values:
            out |= {f"{key}_first_window": round(values[0], 4), f"{key}_last_window": round(values[-1], 4)}
    return out


def machine(folders: list[Path]) -> str | None:
    """Where the runs ran, from their own records (CPU model, threads, device; a GPU's name); None: no fine-tuning
    run here says (the committed file's word stands)."""
    for folder in folders:
        summary = folder / "train_summary.json"
        if summary.exists():
            ts = json.loads(summary.read_text())
            where = f"{ts.get('cpu') or platform.processor() or platform.machine()}, {ts.get('threads')} CPU threads"
            device = str(ts.get("device", "cpu"))
            if device.startswith("cuda"):
                import torch

                where += f", GPU {torch.cuda.get_device_name(torch.device(device))}"
            return f"{where}, device {device}"
    return None


def imported_rows(study: dict, results: Path) -> list[dict]:
    """Rows a study takes from another benchmark's committed results (``imports``: ``results`` its name, ``where``
    field values to match, ``labels`` set on each), e.g. the shipped encoder's rows beside a pre-trained one's."""
    out = []
    for imp in study.get("imports", []):
        for r in committed_results(results, imp["results"]).get("rows", []):
            if all(r.get(k) == v for k, v in imp.get("where", {}).items()):
                out.append({**r, **imp.get("labels", {}), "source": f"benchmarks/results/{imp['results']}.json"})
    return with_lang_fields(out, study)


def file_rows(row: dict, runs: Path) -> list[dict]:
    """A ``call`` row's ``rows_from``: the JSON list of rows its probe wrote under benchmarks/runs (with the row's
    labels)."""
    path = runs / row["rows_from"] if row.get("rows_from") else None
    rows = json.loads(path.read_text()) if path and path.exists() else []
    return [{**r, **row.get("labels", {})} for r in rows]
