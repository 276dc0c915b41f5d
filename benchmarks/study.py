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
  overrides  dotted overrides; ``{run:NAME}`` is the folder of another row's run (e.g. its pre-trained model)
  seeds      the seeds it runs (default: the command line's); a pre-training row runs seed 1 unless it says
  labels     fields copied into each result row (method, deviation, variant, ...): what the row is in the table
  langs      the test languages kept in the results (default: all)
``imports`` take rows from another benchmark's committed results (``results``, ``where``, ``labels``).
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

from jobqueue import IDENTITY, RESULTS, RUNS, committed_results, git_commit, merge_rows, pretrain, train_evaluate, \
    wait_while_paused

STUDIES = Path(__file__).parent / "studies"
FINE_TUNE_METRICS = ("intent_acc", "slot_f1", "semantic_acc", "accuracy", "f1")


def load_study(name: str) -> dict:
    path = STUDIES / f"{name}.yaml"
    if not path.exists():
        raise SystemExit(f"no study {name!r}: {path} does not exist (studies: "
                         f"{', '.join(sorted(p.stem for p in STUDIES.glob('*.yaml')))})")
    study = yaml.safe_load(path.read_text())
    names = [r["name"] for r in study["rows"]]
    if len(set(names)) != len(names):
        raise SystemExit(f"{path}: row names repeat")
    return study


def row_seeds(row: dict, seeds: list[int]) -> list[int]:
    return row.get("seeds", [1] if "stage" in row else seeds)


def run_dir(name: str, seed: int) -> Path:
    return RUNS / name.format(seed=seed)


def resolved_overrides(row: dict, seed: int, data_dir: str) -> list[str]:
    def other_run(match: re.Match) -> str:
        return str(run_dir(match.group(1), seed))

    data_key = "corpus.data_dir" if "stage" in row else "data.data_dir"
    return [f"{data_key}={data_dir}", f"output_dir={RUNS}", f"name={row['name'].format(seed=seed)}",
            *([] if "stage" in row else [f"train.seed={seed}"]),
            *(re.sub(r"\{run:([^}]+)\}", other_run, o) for o in row.get("overrides", []))]


def run_row(row: dict, seed: int, data_dir: str) -> Path:
    from xlt.config import find_config, load_config, load_stage_config

    overrides = resolved_overrides(row, seed, data_dir)
    if "stage" in row:
        return pretrain(load_stage_config(find_config(row["stage"]), overrides))
    return train_evaluate(load_config(find_config(row["config"]), overrides))


def result_rows(row: dict, seed: int) -> list[dict]:
    """The result rows of one finished run: one per test language (fine-tuning), or the last evaluation of a
    pre-training (its BLEU / loss / accuracy numbers)."""
    folder = run_dir(row["name"], seed)
    if not (folder / "results.json").exists():
        return []
    res = json.loads((folder / "results.json").read_text())
    labels = {**row.get("labels", {}), "run": folder.name, "seed": seed}
    if "stage" in row:
        last = res["phases"][-1]["final_eval"]
        phases = res["phases"]
        return [{**labels, "dataset": "pretraining", "lang": "-",
                 **{k: round(v, 4) for k, v in last.items() if isinstance(v, float)},
                 "steps": sum(p["summary"]["step"] for p in phases),
                 "train_seconds": round(sum(p["summary"]["train_seconds"] for p in phases), 1),
                 "cpu": phases[-1]["summary"].get("cpu")}]
    ts, keep = res["train_summary"], row.get("langs")
    labels = {"method": res["method"], "task": res["task"], "dataset": res["dataset"], **labels}
    return [{**labels, "lang": lang,
             **{k: round(m[k], 4) for k in FINE_TUNE_METRICS if k in m}, "n_test": m.get("n"),
             "steps": ts["step"], "best_step": res.get("best_step"), "train_seconds": round(ts["train_seconds"], 1),
             "cpu": ts.get("cpu")}
            for lang, m in res["per_language"].items() if keep is None or lang in keep]


def imported_rows(study: dict) -> list[dict]:
    """Rows a study takes from another benchmark's committed results (``imports``: ``results`` its name, ``where``
    field values to match, ``labels`` set on each), e.g. the rows made before a fix."""
    out = []
    for imp in study.get("imports", []):
        for r in committed_results(RESULTS, imp["results"]).get("rows", []):
            if all(r.get(k) == v for k, v in imp.get("where", {}).items()):
                out.append({**r, **imp.get("labels", {}), "source": f"benchmarks/results/{imp['results']}.json"})
    return out


def collect(study: dict, seeds: list[int]) -> Path:
    fresh = [r for row in study["rows"] for s in row_seeds(row, seeds) for r in result_rows(row, s)]
    fresh += imported_rows(study)
    name = study.get("results", study["name"])
    committed = committed_results(RESULTS, name)
    identity = (*IDENTITY, "deviation", "run")
    rows = merge_rows(committed.get("rows", []), fresh, identity)
    out = {"benchmark": name, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": f"{platform.machine()}, 2 CPU threads, device cpu",
           "model": study.get("model", "multilingual-e5-small"), "selection": study.get("selection", "source-dev"),
           "notes": study.get("notes", ""), "rows": rows}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return path


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
    # a row by its name, or by its name without "-seed{seed}" (what --only takes)
    rows = {r["name"].replace("-seed{seed}", ""): r for r in study["rows"]}
    rows.update({r["name"]: r for r in study["rows"]})
    if args.job:
        wait_while_paused()
        run_row(rows[args.job[0]], int(args.job[1]), args.data_dir)
        return
    unknown = set(args.only or []) - set(rows)
    if unknown:
        raise SystemExit(f"no row {sorted(unknown)} in study {args.study} (rows: "
                         f"{', '.join(r['name'].replace('-seed{seed}', '') for r in study['rows'])})")
    chosen = list({id(rows[n]): rows[n] for n in args.only}.values()) if args.only else study["rows"]
    jobs = [(r, s) for r in chosen for s in row_seeds(r, args.seeds)]
    if args.list:
        for r, s in jobs:
            kind = f"xlt pretrain {r['stage']}" if "stage" in r else f"xlt train {r['config']}"
            print(f"{r['name'].format(seed=s)}: {kind} {' '.join(resolved_overrides(r, s, args.data_dir))}")
        return
    for r, s in [] if args.collect else jobs:
        print(f"== {r['name'].format(seed=s)}", flush=True)
        done = subprocess.run([sys.executable, __file__, args.study, "--data-dir", args.data_dir, "--job", r["name"],
                               str(s)])
        if done.returncode != 0:
            print(f"!! {r['name']} seed {s} failed (exit {done.returncode}); going on", flush=True)
        collect(study, args.seeds)
    print(f"wrote {collect(study, args.seeds)}")


if __name__ == "__main__":
    main()
