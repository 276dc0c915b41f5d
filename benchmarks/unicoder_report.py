"""Collect the runs of the unicoder study (benchmarks/studies/unicoder.yaml) into results/unicoder.json, format ../shared/RESULTS_FORMAT.md.

Rows: ``unicoder_pretrain`` (one per variant and phase: held-out loss / accuracy of each trained task, cost, data),
fine-tuning rows (``zero_shot`` or ``multi_language``; ``variant`` = the pre-training; ``seen`` = whether the
pre-training had text in that language), and ``variant: none`` rows (the shipped encoder, same configs and seeds).
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from jobqueue import committed_results, git_commit, merge_rows

MAIN = {"xnli": ["accuracy"], "xsid": ["intent_acc", "slot_f1", "semantic_acc"]}
ORDER = ["none", "mlm", "mlm+tlm", "mlm+tlm_reset", "mlm+tlm_reset_libreoffice", "word_recovery_reset", "word_recovery",
         "paraphrase", "cs_mlm", "all5", "all5_reset", "all5+multi_language"]
# the XLM each variant is paired against: XLM + more tasks with XLM's running positions against mlm+tlm (which ran so)
# and XLM with the reset too; the reset runs with more tasks or more text against XLM with the reset
XLM_BASE = {"word_recovery": "mlm+tlm", "paraphrase": "mlm+tlm", "cs_mlm": "mlm+tlm", "all5": "mlm+tlm",
            "mlm+tlm_reset": "mlm+tlm", "all5_reset": "mlm+tlm_reset", "mlm+tlm_reset_libreoffice": "mlm+tlm_reset",
            "word_recovery_reset": "mlm+tlm_reset"}


def _pretrain_rows(run: Path, variant: str) -> list[dict]:
    res = json.loads((run / "results.json").read_text())
    data = res.get("export", {}).get("data", {})
    rows = []
    for phase in res["phases"]:
        ev, s = phase["final_eval"], phase["summary"]
        rows.append({"method": "unicoder_pretrain", "dataset": "mono+parallel", "lang": "multi", "seed": 1,
                     "variant": variant, "phase": phase["name"], "steps": s["step"],
                     **{k: round(v, 4) for k, v in ev.items() if k.startswith("heldout_")},
                     "train_sentences": s["train_sentences"], "train_tokens": s["train_tokens"],
                     "train_seconds": round(s["train_seconds"], 1),
                     "tokens_per_second": round(s["tokens_per_second"], 1),
                     "peak_rss_mb": round(s["peak_rss_mb"])})
    rows[-1]["data"] = {"monolingual_files": [{k: f[k] for k in ("file", "train_sequences", "train_tokens")}
                                              for f in res["corpus"]["files"]],
                        "pairs_per_language": data.get("parallel", {}).get("pairs_per_language"),
                        "parallel_files": [{k: f.get(k) for k in ("file", "lang", "train_pairs", "heldout_pairs",
                                                                   "train_tokens")}
                                           for f in data.get("parallel", {}).get("files", [])],
                        "documents": data.get("documents"),
                        "paraphrase_negatives": data.get("paraphrase_negatives")}
    return rows


def _fine_tune_rows(res: dict, variant: str, seen: set[str], method: str) -> list[dict]:
    ts = res.get("train_summary", {})
    return [{"method": method, "task": "pair_classification" if res["dataset"] == "xnli" else "intent_slot",
             "dataset": res["dataset"], "lang": lang, "seed": res["seed"], "regime": "equal_steps",
             "variant": variant, "seen": lang in seen, **{k: round(m[k], 4) for k in MAIN[res["dataset"]]},
             "n_test": m["n"], "steps": ts.get("step"), "best_step": res.get("best_step"),
             "train_seconds": round(ts.get("train_seconds", 0), 1)} for lang, m in res["per_language"].items()]


def seen_languages(runs: Path) -> set[str]:
    """The languages a pre-training read: English, those of its translation pairs and of its mono/{lang}/ files."""
    import re

    for run in sorted(runs.glob("unicoder-*/results.json")):
        res = json.loads(run.read_text())
        mono = {m.group(1) for f in res["corpus"]["files"] if (m := re.search(r"/mono/([^/]+)/", f["file"]))}
        return {"en", *mono, *(res["export"]["data"]["parallel"].get("pairs_per_language") or {})}
    return set()


def collect(runs: Path, results_dir: Path) -> None:
    from study import load_study

    study = load_study("unicoder")
    variants = [r["labels"]["variant"] for r in study["rows"] if "stage" in r]

    committed = committed_results(results_dir, "unicoder").get("rows", [])
    # no pre-training run here (a fresh checkout): the languages the committed rows were marked as seen in
    seen = seen_languages(runs) or {r["lang"] for r in committed if r.get("seen")}
    rows = []
    for row in study["rows"]:
        if "stage" in row and (runs / row["name"] / "results.json").exists():
            rows += _pretrain_rows(runs / row["name"], row["labels"]["variant"])
    for run in sorted(runs.glob("*-unicoder-*-seed*")):
        if (run / "results.json").exists():
            res = json.loads((run / "results.json").read_text())
            variant = run.name.split("-unicoder-", 1)[1].rsplit("-seed", 1)[0]
            variant = {v.replace("+", "-"): v for v in (*variants, "all5+multi_language")}.get(variant, variant)
            rows += _fine_tune_rows(res, variant, seen, "multi_language" if "multi" in variant else "zero_shot")
    if (runs / "unicoder-probe.json").exists():
        rows += json.loads((runs / "unicoder-probe.json").read_text())
    seeds = sorted({r["seed"] for r in rows if r["method"] not in ("unicoder_pretrain", "probe")}) or [1, 2, 3]
    # the shipped encoder: the zero-shot XNLI rows of the tasks study (results/xnli.json), same config and seeds
    xnli = committed_results(results_dir, "xnli")
    rows += [{**r, "regime": "equal_steps", "variant": "none", "seen": r["lang"] in seen,
              "source": "benchmarks/results/xnli.json"}
             for r in xnli.get("rows", []) if r["method"] == "zero_shot" and r["seed"] in seeds]
    xsid = json.loads((results_dir / "xsid-zero-shot.json").read_text())
    rows += [{**r, "task": "intent_slot", "variant": "none", "seen": r["lang"] in seen,
              "source": "benchmarks/results/xsid-zero-shot.json"} for r in xsid["rows"] if r["seed"] in seeds]
    rows = merge_rows(committed, rows)
    commit = git_commit()
    notes = ("Unicoder pre-training of multilingual-e5-small (config pretrain-unicoder: 200 steps of the new heads "
             "on the frozen encoder at lr 1e-3, then 1600 steps of everything at lr 5e-5, batch 32, a batch of each "
             "task in turn; monolingual text mono/{en,de,es,ja,zh,tr}; translation pairs: Bibles en-de, en-es (also "
             "the code-switched documents), gettext catalogs en-{de,es,ja,zh,tr}; amounts in the pretrain rows' "
             "data). Variants: mlm; mlm+tlm (XLM); word_recovery / paraphrase / cs_mlm = XLM + that task; all5. "
             "Fine-tuning: xnli-zero-shot (lr chosen on English dev by the tasks study) and xsid-zero-shot "
             "(1000 steps x 32, lr 3e-4), checkpoint chosen on the ENGLISH dev set, seeds " + str(seeds) + "; "
             "all5+multi_language: multi-language fine-tuning (XNLI: + es by Apertium; xSID: + sr by Apertium, da "
             "shipped MT). seen = the pre-training read text in that language. none = the shipped encoder.")
    out = {"benchmark": "unicoder", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": commit, "machine": f"{platform.machine()}, 2 CPU threads, device cpu",
           "model": "multilingual-e5-small", "selection": "source-dev", "notes": notes, "rows": rows}
    (results_dir / "unicoder.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
