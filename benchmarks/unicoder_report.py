"""Collect the runs of the unicoder study (benchmarks/studies/unicoder.yaml) into results/unicoder.json (+ .md), format ../shared/RESULTS_FORMAT.md.

Rows: ``unicoder_pretrain`` (one per variant and phase: held-out loss / accuracy of each trained task, cost, data),
fine-tuning rows (``zero_shot`` or ``multi_language``; ``variant`` = the pre-training; ``seen`` = whether the
pre-training had text in that language), and ``variant: none`` rows (the shipped encoder, same configs and seeds).
"""
from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

from jobqueue import committed_results, git_commit, mean_std, merge_rows

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
    (results_dir / "unicoder.md").write_text(markdown(out))


def _data_lines(pre: list[dict]) -> list[str]:
    """What the pre-training read (the same corpora for every variant) and the paraphrase task's negatives."""
    import re

    with_data = [r for r in pre if r.get("data")]
    if not with_data:
        return []
    data = with_data[0]["data"]
    mono: dict[str, list[int]] = {}
    for f in data["monolingual_files"]:
        lang = m.group(1) if (m := re.search(r"/mono/([^/]+)/", f["file"])) else "?"
        mono.setdefault(lang, [0, 0])
        mono[lang][0] += f["train_sequences"]
        mono[lang][1] += f["train_tokens"]
    pairs: dict[str, list[int]] = {}
    for f in data.get("parallel_files") or []:
        pairs.setdefault(f["lang"], [0, 0])
        pairs[f["lang"]][0] += f["train_pairs"]
        pairs[f["lang"]][1] += f["train_tokens"]
    if not pairs:
        pairs = {k: [v, None] for k, v in (data.get("pairs_per_language") or {}).items()}
    lines = ["## Data available to the pre-training (training split; held-out lines excluded)", "",
             "| lang | monolingual sentences | monolingual sub-tokens | translation pairs with en | pair sub-tokens |",
             "|---|---|---|---|---|"]
    for lang in sorted(set(mono) | set(pairs), key=lambda x: (x != "en", x)):
        m, p = mono.get(lang, [0, 0]), pairs.get(lang, [0, 0])
        lines.append(f"| {lang} | {m[0]:,} | {m[1]:,} | {p[0]:,} | " + (f"{p[1]:,}" if p[1] is not None else "–")
                     + " |")
    lines += ["", f"Code-switched documents (Bible chapters' verses alternating languages): {data.get('documents')}."
              " Sentences each variant actually trained on: `train_sentences` of its pretrain rows "
              "(1800 batches of 32 shared by its tasks in turn).", ""]
    negatives = [(r["variant"], r["data"]["paraphrase_negatives"]) for r in with_data
                 if r["data"].get("paraphrase_negatives")]
    if negatives:
        lines += ["Paraphrase negatives (mined once per variant by a DAN trained with in-batch random negatives):", "",
                  "| variant | split | pairs | hard negatives | random negatives | DAN retrieval top-1 | "
                  "cosine positive / hard negative |", "|---|---|---|---|---|---|---|"]
        for variant, rep in negatives:
            for split in ("train", "heldout"):
                r = rep.get(f"{split}_report")
                if r:
                    lines.append(f"| {variant} | {split} | {r['pairs']:,} | {100 * r['hard_share']:.1f} % | "
                                 f"{r['random_negatives']:,} | {100 * r.get('dan_retrieval_accuracy', 0):.1f} % | "
                                 f"{r.get('mean_cosine_positive', 0):.3f} / "
                                 f"{r.get('mean_cosine_hard_negative', 0):.3f} |")
        lines.append("")
    return lines


def _probe_lines(probes: list[dict]) -> list[str]:
    """Retrieval top-1 of a translation by mean-pooled encoder states (benchmarks/probes/unicoder_probe.py), per language."""
    lines = []
    for dataset in ("xnli", "xsid"):
        got = [r for r in probes if r["dataset"] == dataset]
        if not got:
            continue
        variants = [v for v in ORDER if any(r["variant"] == v for r in got)]
        lines += ["", f"## Probe, {dataset} dev: translation retrieval top-1 by mean-pooled encoder states "
                      "(* = seen in pre-training)", "", "| lang | " + " | ".join(variants) + " |",
                  "|---" * (len(variants) + 1) + "|"]
        cell = {(r["variant"], r["lang"]): r["retrieval_top1"] for r in got}
        langs = sorted({r["lang"] for r in got})
        seen = {r["lang"] for r in got if r["seen"]}
        for lang in langs:
            lines.append(f"| {lang}{'*' if lang in seen else ''} | " + " | ".join(
                f"{100 * cell[v, lang]:.1f}" if (v, lang) in cell else "–" for v in variants) + " |")
        for label, keep in (("avg seen", True), ("avg unseen", False)):
            vals = [[cell[v, x] for x in langs if (x in seen) == keep and (v, x) in cell] for v in variants]
            lines.append(f"| {label} | " + " | ".join(f"{100 * statistics.mean(x):.1f}" if x else "–" for x in vals)
                         + " |")
    return lines + [""] if lines else []


def _seed_averages(rows: list[dict], variant: str, metric: str, seen: bool) -> dict[int, float]:
    """seed -> the mean of ``metric`` over the target languages (not en) that the pre-training saw / did not see."""
    per_seed: dict[int, list[float]] = {}
    for r in rows:
        if r["variant"] == variant and r["lang"] != "en" and r["seen"] == seen:
            per_seed.setdefault(r["seed"], []).append(r[metric])
    return {s: statistics.mean(x) for s, x in sorted(per_seed.items())}


def markdown(out: dict) -> str:
    rows = out["rows"]
    lines = ["# unicoder", "", out["notes"], ""]
    pre = [r for r in rows if r["method"] == "unicoder_pretrain"]
    lines += _data_lines(pre)
    if pre:
        tasks = ["mlm", "tlm", "word_recovery", "paraphrase", "cs_mlm"]
        lines += ["## Pre-training: held-out accuracy of each trained task (after each phase)", "",
                  "| variant | phase | steps | " + " | ".join(tasks) + " | sentences | wall-clock s |",
                  "|---" * 10 + "|"]
        for r in pre:
            cells = [f"{100 * r[f'heldout_{t}_accuracy']:.1f}" if f"heldout_{t}_accuracy" in r else "–" for t in tasks]
            lines.append(f"| {r['variant']} | {r['phase']} | {r['steps']} | " + " | ".join(cells)
                         + f" | {r['train_sentences']:,} | {r['train_seconds']:.0f} |")
    lines += _probe_lines([r for r in rows if r["method"] == "probe"])
    fine = [r for r in rows if r["method"] not in ("unicoder_pretrain", "probe")]
    for dataset, metrics in MAIN.items():
        got = [r for r in fine if r["dataset"] == dataset]
        if not got:
            continue
        variants = [v for v in ORDER if any(r["variant"] == v for r in got)]
        for metric in reversed(metrics):  # accuracy (XNLI); semantic accuracy, slot F1, intent accuracy (xSID)
            lines += ["", f"## {dataset}: {metric} (test, mean ± std over seeds; * = language seen in pre-training)",
                      "", "| lang | " + " | ".join(variants) + " |", "|---" * (len(variants) + 1) + "|"]
            langs = sorted({r["lang"] for r in got}, key=lambda x: (x != "en", x))
            for lang in langs:
                mark = "*" if any(r["seen"] for r in got if r["lang"] == lang) else ""
                lines.append(f"| {lang}{mark} | " + " | ".join(
                    mean_std([r[metric] for r in got if r["lang"] == lang and r["variant"] == v]) for v in variants)
                    + " |")
            for label, keep in (("avg seen targets", True), ("avg unseen targets", False)):
                avg = {v: _seed_averages(got, v, metric, keep) for v in variants}
                lines.append(f"| {label} | " + " | ".join(mean_std(list(avg[v].values())) for v in variants) + " |")
                # the same seed fine-tunes with the same data order and head initialisation whatever the encoder:
                # differences paired by seed remove that part of the spread.  Over none: does pre-training help at
                # all; over the variant's XLM (XLM_BASE; the paper's baseline): do the added task or text help on top of it
                for base in ("none", "mlm+tlm", "mlm+tlm_reset"):
                    over = set(variants) - {"none"} if base == "none" else {
                        v for v, b in XLM_BASE.items() if b == base}
                    if base in avg and over & set(variants):
                        lines.append(f"| {label}, paired gain over {base} | " + " | ".join(
                            mean_std([avg[v][s] - avg[base][s] for s in avg[v] if s in avg[base]])
                            if v in over else "" for v in variants) + " |")
            lines.append("| seeds | " + " | ".join(str(len({r["seed"] for r in got if r["variant"] == v}))
                                                   for v in variants) + " |")
    return "\n".join(lines) + "\n"
