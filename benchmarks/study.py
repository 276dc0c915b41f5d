"""Run a declared study: ``benchmarks/studies/<name>.yaml`` lists its rows as data (a shipped config or stage +
overrides, the seeds, what the row measures), this runner trains them one at a time (each in its own process,
resumable, ``touch benchmarks/runs/PAUSE`` holds the queue) and writes ``benchmarks/results/<results>.json`` in the
format of ``../shared/RESULTS_FORMAT.md``.

    python benchmarks/study.py fidelity [--only ROW ...] [--seeds 1 2 3] [--data-dir ../shared/data]
    python benchmarks/study.py fidelity --collect          # only rewrite the results from the finished runs
    python benchmarks/study.py fidelity --list             # the rows and the command of each

A row (every key but ``name`` optional):
  name       the run folder under benchmarks/runs (``{seed}`` is replaced by the seed)
  stage      a pre-training config (``xlt pretrain``), or ``config`` a fine-tuning config (``xlt train``)
  overrides  dotted overrides; ``{run:NAME}`` is the folder of another row's run (e.g. its pre-trained model;
             NAME may hold ``{seed}``: the run of the same seed)
  seeds      the seeds it runs (default: the command line's); a pre-training row runs seed 1 unless it says
  labels     fields copied into each result row (method, deviation, variant, ...): what the row is in the table
  langs      the test languages kept in the results (default: all)
  train_metrics  logged training quantities (metrics.jsonl) reported as their first and last window's means
  fields     results.json values copied into each row by dotted path (``train_summary.selected_steps``)
  each       copy the row for every entry of the study's ``expand: {KEY: {value: {field: text}}}`` ({KEY} and the
             entry's fields filled into its texts; a list of keys: every combination); ``extends: NAME``: that
             row's config/stage and overrides first
  then       ``{translate_test: {langs, overrides, name}}``: the run also scored through a translator
  base_only  a TreLM stage's base folder alone (vocabulary, fastText, alignment); ``manual``: run only when named
  evaluate   false: no test sets (a hyper-parameter probe on the English dev set)
  call       ``MODULE:FUNCTION`` instead of a config: a probe over the study's runs, called with (data_dir, runs,
             **args)
  results    the results file of this row's rows, when not the study's (e.g. a bf16 or GPU variant's own file)
  requires   ``cuda``: the row runs only where a GPU is; ``native_bf16``: only where the CPU or GPU multiplies bf16
             natively (it is skipped, with a word, elsewhere)
``imports`` take rows from another benchmark's committed results (``results``, ``where``, ``labels``); ``identity``
names the fields that make a fresh row replace a committed one (default: the shared ones, deviation and run).
``gap_closed``, ``lang_sets`` and ``lang_labels`` add fields derived from the rows (``study_results``).
"""
from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path


import study_results
from study_rows import by_name, can_run, chosen_rows, load_study, row_seeds
from jobqueue import IDENTITY, RESULTS, RUNS, committed_results, git_commit, merge_rows, pretrain, train_evaluate, \
    trelm_base, wait_while_paused

def run_dir(name: str, seed: int) -> Path:
    return RUNS / name.format(seed=seed)


def resolved_overrides(row: dict, seed: int, data_dir: str) -> list[str]:
    def other_run(match: re.Match) -> str:
        return str(run_dir(match.group(1), seed))

    data_key = "corpus.data_dir" if "stage" in row else "data.data_dir"
    # a fine-tuning row trains in fp32 unless it says otherwise: the precision of a committed row must not follow
    # train.mixed_precision's hardware-dependent default
    return [f"{data_key}={data_dir}", f"output_dir={RUNS}", f"name={row['name'].format(seed=seed)}",
            *([] if "stage" in row else [f"train.seed={seed}", "train.mixed_precision=fp32"]),
            *(re.sub(r"\{run:((?:[^{}]|\{seed\})+)\}", other_run, o) for o in row.get("overrides", []))]


# appended to every row's overrides (the tests' tiny model and budgets)
EXTRA: dict[str, list[str]] = {"config": [], "stage": []}


def run_row(row: dict, seed: int, data_dir: str) -> Path:
    """Train one row (resuming), then ``then: {translate_test: {langs, overrides, name}}`` (or a list of them): the
    run also scored through a translator at test time, into results-{name}.json."""
    from xlt.config import find_config, load_config, load_stage_config
    from xlt.evaluation import evaluate_run

    if "call" in row:  # a probe over the study's runs: MODULE:FUNCTION(data_dir, runs)
        module, function = row["call"].split(":")
        getattr(importlib.import_module(module), function)(data_dir, RUNS, **row.get("args", {}))
        return RUNS
    overrides = resolved_overrides(row, seed, data_dir)
    if "stage" in row:
        cfg = load_stage_config(find_config(row["stage"]), overrides + EXTRA["stage"])
        return trelm_base(cfg) if row.get("base_only") else pretrain(cfg)
    folder = train_evaluate(load_config(find_config(row["config"]), overrides + EXTRA["config"]),
                            evaluate=row.get("evaluate", True))
    for tt in study_results.translate_tests(row):
        if not (folder / f"results-{tt['name']}.json").exists():
            evaluate_run(folder, tt["langs"], "test", "translate_test", tt.get("overrides", []), tt["name"])
    return folder


def result_rows(row: dict, seed: int, study: dict | None = None) -> list[dict]:
    """The result rows of one finished run of ``row`` (``study_results.result_rows``)."""
    return study_results.result_rows(row, run_dir(row["name"], seed), seed, study)


def notes_of(study: dict, results: str) -> str:
    """The study's ``notes``, or with one per results file (``{"*": shared, NAME: its own}``) the shared + its own."""
    notes = study.get("notes", "")
    return notes if isinstance(notes, str) else " ".join(filter(None, (notes.get("*"), notes.get(results))))


def collect(study: dict, seeds: list[int]) -> list[Path]:
    """Rewrite the study's results file(s) from its finished runs, keeping committed rows no run replaces."""
    default = study.get("results", study["name"])
    files = list(dict.fromkeys([default, *(r["results"] for r in study["rows"] if "results" in r)]))
    written = []
    for name in files:
        mine = [r for r in study["rows"] if r.get("results", default) == name]
        fresh = [x for row in mine for s in row_seeds(row, seeds) for x in result_rows(row, s, study)]
        fresh += [x for row in mine for x in study_results.file_rows(row, RUNS)]
        fresh += study_results.imported_rows(study, RESULTS) if fresh and name == default else []
        committed = committed_results(RESULTS, name)
        if not fresh:  # no run of its rows here: the committed file stays as it is
            continue
        identity = tuple(study.get("identity", (*IDENTITY, "deviation", "run")))
        rows = merge_rows(committed.get("rows", []), fresh, identity)
        if study.get("gap_closed"):
            study_results.add_gap_closed(rows, study["gap_closed"])
        out = {"benchmark": name, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "git_commit": git_commit(),
               "machine": study_results.machine([run_dir(r["name"], s) for r in mine if "config" in r
                                                 for s in row_seeds(r, seeds)])
               or committed.get("machine", "not recorded"),
               "model": study.get("model", "multilingual-e5-small"), "selection": study.get("selection", "source-dev"),
               "notes": notes_of(study, name), "rows": rows}
        # what the results file holds besides rows (learning curves, a selection table) stays as committed
        out = {**out, **{k: v for k, v in committed.items() if k not in out}, "rows": rows}
        path = RESULTS / f"{name}.json"
        path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
        written.append(path)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("study")
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--only", nargs="+", help="row names (their run folders, without -seed{seed})")
    ap.add_argument("--collect", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--job", nargs=2, metavar=("ROW", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    study = load_study(args.study)
    if args.job:
        wait_while_paused()
        run_row(by_name(study)[args.job[0]], int(args.job[1]), args.data_dir)
        return
    chosen = chosen_rows(study, args.only)
    jobs = [(r, s) for r in chosen for s in row_seeds(r, args.seeds)]
    if args.list:
        for r, s in jobs:
            if "call" in r:
                print(f"{r['name']}: {r['call']}")
                continue
            kind = f"xlt pretrain {r['stage']}" if "stage" in r else f"xlt train {r['config']}"
            print(f"{r['name'].format(seed=s)}: {kind} {' '.join(resolved_overrides(r, s, args.data_dir))}")
        return
    for r, s in [] if args.collect else jobs:
        if not can_run(r):
            print(f"-- {r['name'].format(seed=s)}: skipped (needs {r['requires']})", flush=True)
            continue
        print(f"== {r['name'].format(seed=s)}", flush=True)
        done = subprocess.run([sys.executable, __file__, args.study, "--data-dir", args.data_dir, "--job", r["name"],
                               str(s)])
        if done.returncode != 0:
            print(f"!! {r['name']} seed {s} failed (exit {done.returncode}); going on", flush=True)
        collect(study, args.seeds)
    print("wrote " + (", ".join(map(str, collect(study, args.seeds))) or "nothing: no finished run of its rows here"))


if __name__ == "__main__":
    main()
