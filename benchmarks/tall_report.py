"""Collect the runs of the tall study (benchmarks/studies/tall.yaml) into results/tall.json, in the format of ../shared/RESULTS_FORMAT.md.

Rows: ``tall_pretrain`` (one per pre-training and translation direction: reference BLEU on Tatoeba, round-trip BLEU
on held-out lines, copy rate, cost), ``tall`` (NLU fine-tuning; variants none / dae_only / bt_only / encoder_only,
``pair`` = the pre-trained language pair) and ``zero_shot`` (the baseline: rows of results/xsid-zero-shot.json).
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from jobqueue import IDENTITY, committed_results, git_commit, merge_rows

from xlt.stages.translation_eval import tokenize_of

METRICS = ["intent_acc", "slot_f1", "semantic_acc"]
VARIANTS = ["none", "dae_only", "bt_only", "encoder_only"]
PAIRS = ("en-ja", "en-de")


def _pretrain_rows(run: Path, pair: str, variant: str) -> tuple[list[dict], list[dict]]:
    """(result rows, learning-curve points) of one pre-training run."""
    res = json.loads((run / "results.json").read_text())
    src, tgt = pair.split("-", 1)  # en-syn-en: en, syn-en
    last = res["phases"][-1]["final_eval"]
    seconds = sum(p["summary"]["train_seconds"] for p in res["phases"])
    tokens = sum(p["summary"]["train_tokens"] for p in res["phases"])
    cost = {"steps": sum(p["summary"]["step"] for p in res["phases"]),
            "train_sentences": sum(p["summary"]["train_sentences"] for p in res["phases"]),
            "train_tokens": tokens, "train_seconds": round(seconds, 1),
            "tokens_per_second": round(tokens / seconds, 1) if seconds else None,
            "peak_rss_mb": round(max(p["summary"]["peak_rss_mb"] for p in res["phases"])),
            "phases": "; ".join(f"{p['name']} {p['summary']['step']} steps {p['objectives']}" for p in res["phases"]),
            "vocab_kept": res.get("vocab_kept"), "corpus_train_sentences": res["corpus"]["train_sequences"],
            "cpu": res["phases"][-1]["summary"].get("cpu")}
    rows = []
    for a, b in ((src, tgt), (tgt, src)):
        char = {"char_bleu": round(last[f"char_bleu_{a}_{b}"], 2)} if f"char_bleu_{a}_{b}" in last else {}
        rows.append({"method": "tall_pretrain", "dataset": "mono+tatoeba", "lang": f"{a}-{b}", "seed": 1,
                     "variant": variant, "bleu": round(last.get(f"bleu_{a}_{b}", float("nan")), 2),
                     "bleu_tokenize": tokenize_of(b), **char,
                     "roundtrip_bleu": round(last[f"roundtrip_bleu_{a}"], 2),
                     "identical_rate": round(last[f"identical_{a}_{b}"], 3), **cost})
    curve = []
    for i, phase in enumerate(res["phases"]):
        log = run / f"phase{i + 1}-{phase['name']}" / "metrics.jsonl"
        offset = sum(p["summary"]["step"] for p in res["phases"][:i])
        for line in log.read_text().splitlines():
            ev = json.loads(line)
            curve.append({"pair": pair, "variant": variant, "phase": phase["name"], "step": offset + ev["step"],
                          **{k: round(v, 2) for k, v in ev.items() if "bleu" in k or k.endswith("_loss")},
                          "samples": ev.get("samples", [])[:4]})
    return rows, curve


def _nlu_rows(run: Path, pair: str, variant: str) -> list[dict]:
    res = json.loads((run / "results.json").read_text())
    ts = res["train_summary"]
    # readout: the decoder state each token is read from (shifted: the one before it, TALL section 2; rows made
    # before that fix read the token's own position and are kept, labelled own_position); encoder: no decoder
    return [{"method": "tall", "task": "intent_slot", "dataset": "xsid", "lang": lang, "seed": res["seed"],
             "regime": "equal_steps", "variant": variant, "pair": pair,
             "readout": "encoder" if variant == "encoder_only" else "shifted", "cpu": ts.get("cpu"),
             **{k: round(m[k], 4) for k in METRICS},
             "n_test": m["n"], "steps": ts["step"], "best_step": res.get("best_step"),
             "train_seconds": round(ts["train_seconds"], 1), "tokens_per_second": round(ts["tokens_per_second"], 1),
             "peak_rss_mb": round(ts["peak_rss_mb"])} for lang, m in res["per_language"].items()]


def collect(runs: Path, results_dir: Path) -> None:
    rows, curves = [], []
    for pair in PAIRS:
        for variant in ("none", "dae_only", "bt_only"):
            run = runs / (f"tall-{pair}" + ("" if variant == "none" else f"-{variant}"))
            if (run / "results.json").exists():
                got, curve = _pretrain_rows(run, pair, variant)
                rows += got
                curves += curve
            for extra in ("xsid_translation.json", "probe.json"):
                if (run / extra).exists():
                    rows += json.loads((run / extra).read_text())
        for variant in VARIANTS:
            for run in sorted(runs.glob(f"xsid-tall-{pair}-{variant}-seed*")):
                if (run / "results.json").exists():
                    rows += _nlu_rows(run, pair, variant)
    seeds = sorted({r["seed"] for r in rows if r["method"] == "tall"}) or [1, 2, 3]
    baseline = json.loads((results_dir / "xsid-zero-shot.json").read_text())
    rows += [{**r, "task": "intent_slot", "variant": "none", "source": "benchmarks/results/xsid-zero-shot.json"}
             for r in baseline["rows"] if r["seed"] in seeds]
    committed = committed_results(results_dir, "tall")
    # a run made again on another CPU, or with another read-out, is a new row beside the committed one
    rows = merge_rows(committed.get("rows", []), rows, (*IDENTITY, "readout", "cpu"))
    curves = merge_rows(committed.get("learning_curves", []), curves, ("pair", "variant", "phase", "step"))
    commit = git_commit()
    notes = ("TALL pre-training (shipped configs pretrain-tall-en-ja / -en-de): multilingual-e5-small + a 2-layer "
             "decoder (6 heads, FFN 1536, hidden 384) sharing and tied to the encoder's embeddings, language tokens "
             "on the decoder side, randomly initialised; phase dae (600 steps, DAE only, encoder frozen, lr 1e-3) "
             "then dae-bt (1600 steps, a DAE and a BT batch in turn, everything trains, lr 1e-4) at batch 32; "
             "corpora: mono/{lang} (man pages, gettext, fortunes) + xSID English train "
             "TEXT (labels unused); generation restricted to the output language's corpus tokens. BLEU: sacreBLEU "
             "(char tokenization for ja), reference BLEU on the first 200 Tatoeba pairs, round-trip BLEU on 100 "
             "held-out corpus lines per language; the exported model is the last step. Ablations (en-ja, same "
             "steps): dae_only (no BT), bt_only (no DAE in either phase). NLU: xsid-zero-shot config (1000 steps x "
             "32, lr 3e-4, frozen embeddings, checkpoint chosen on the ENGLISH dev set), method tall = encoder + "
             "decoder BART-style (decoder states but the last feed the heads; language token of the test language "
             "for the pair's languages, the source's otherwise); variant encoder_only = method zero_shot on the "
             "TALL-pre-trained encoder; zero_shot rows = the shipped encoder, same config and seeds "
             "(results/xsid-zero-shot.json).")
    out = {"benchmark": "tall", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "git_commit": commit,
           "machine": f"{platform.machine()}, 2 CPU threads, device cpu", "model": "multilingual-e5-small",
           "selection": "source-dev", "notes": notes, "rows": rows, "learning_curves": curves}
    (results_dir / "tall.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
