"""Collect the runs of the tall study (benchmarks/studies/tall.yaml) into results/tall.json (+ .md), in the format of ../shared/RESULTS_FORMAT.md.

Rows: ``tall_pretrain`` (one per pre-training and translation direction: reference BLEU on Tatoeba, round-trip BLEU
on held-out lines, copy rate, cost), ``tall`` (NLU fine-tuning; variants none / dae_only / bt_only / encoder_only,
``pair`` = the pre-trained language pair) and ``zero_shot`` (the baseline: rows of results/xsid-zero-shot.json).
"""
from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

from jobqueue import IDENTITY, committed_results, git_commit, mean_std, merge_rows

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


def _mean(rows: list[dict], metric: str) -> float | None:
    return statistics.mean(r[metric] for r in rows) if rows else None


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
    (results_dir / "tall.md").write_text(markdown(out))


def markdown(out: dict) -> str:
    rows = out["rows"]
    lines = ["# tall", "", out["notes"], ""]
    pre = [r for r in rows if r["method"] == "tall_pretrain"]
    if pre:
        lines += ["## Pre-training: translation quality (last step) and cost", "",
                  "| pair | variant | direction | BLEU vs Tatoeba | round-trip BLEU | output = input | steps | "
                  "sentences | wall-clock s | tokens/s | peak RSS MB |", "|---" * 11 + "|"]
        for r in pre:
            pair = "-".join(sorted(r["lang"].split("-"), key=lambda x: x != "en"))
            lines.append(f"| {pair} | {r['variant']} | {r['lang']} | {r['bleu']:.2f} | {r['roundtrip_bleu']:.2f} | "
                         f"{100 * r['identical_rate']:.0f} % | {r['steps']} | {r['train_sentences']} | "
                         f"{r['train_seconds']:.0f} | {r['tokens_per_second']} | {r['peak_rss_mb']} |")
    trans = [r for r in rows if r["method"] == "translator"]
    if trans:
        lines += ["", "## As a translator: xSID test, English originals vs their human translations", "",
                  "| translator | direction | sentences | BLEU | output = input | sentences/s |", "|---" * 6 + "|"]
        lines += [f"| {r['translator']} | {r['lang']} | {r['sentences']} | {r['bleu']:.2f} | "
                  f"{100 * r['identical_rate']:.0f} % | {r['sentences_per_second']} |" for r in trans]
        lines += ["", "Apertium has no en-ja or en-de here: its en-sr row (another language) shows the throughput of "
                  "a rule-based system on the same kind of sentences, not comparable quality."]
    probes = [r for r in rows if r["method"] == "probe"]
    if probes:
        lines += ["", "## Probe: are the states of an xSID test utterance and its translation alike?", "",
                  "Mean-pooled states; retrieval top-1 among all test utterances (both directions averaged), mean "
                  "cosine of true pairs vs other pairs (benchmarks/probes/tall_probe.py).", "",
                  "| pair | model | states | sentences | retrieval top-1 | pair cosine | other cosine |",
                  "|---" * 7 + "|"]
        lines += [f"| {r['pair']} | {r['model']} | {r['states']} | {r['sentences']} | "
                  f"{100 * r['retrieval_top1']:.1f} % | {r['pair_cosine']:.3f} | {r['random_cosine']:.3f} |"
                  for r in probes]
    nlu = [r for r in rows if r["method"] in ("tall", "zero_shot")]
    for pair, target in (("en-ja", "ja"), ("en-de", "de")):
        base = [r for r in nlu if r["method"] == "zero_shot" and r["lang"] == target]
        tall = [r for r in nlu if r["method"] == "tall" and r.get("pair") == pair and r["lang"] == target]
        if not tall:
            continue
        lines += ["", f"## {pair}: xSID {target} test (mean ± std over seeds; relative gain of the means)", "",
                  "| model | seeds | " + " | ".join(METRICS) + " |", "|---|---|" + "---|" * len(METRICS)]
        for variant in VARIANTS:
            got = [r for r in tall if r["variant"] == variant]
            if got:
                lines.append(f"| tall {variant} | {len(got)} | "
                             + " | ".join(mean_std([r[m] for r in got]) for m in METRICS) + " |")
        lines.append(f"| baseline (zero_shot) | {len(base)} | "
                     + " | ".join(mean_std([r[m] for r in base]) for m in METRICS) + " |")
        main = [r for r in tall if r["variant"] == "none"]
        if main and base:
            gains = [100 * (_mean(main, m) - _mean(base, m)) / _mean(base, m) for m in METRICS]
            lines.append("| relative gain of tall (%) | | " + " | ".join(f"{g:+.1f}" for g in gains) + " |")
    langs = sorted({r["lang"] for r in nlu}, key=lambda x: (x != "en", x))
    cols = [("zero_shot", "none", None)] + [("tall", "none", p) for p in ("en-ja", "en-de")]
    lines += ["", "## All xSID test languages (for information), semantic accuracy / intent accuracy", "",
              "| lang | baseline | tall en-ja | tall en-de |", "|---|---|---|---|"]
    for lang in langs:
        cells = []
        for method, variant, pair in cols:
            got = [r for r in nlu if r["method"] == method and r["lang"] == lang and r["variant"] == variant
                   and (pair is None or r.get("pair") == pair)]
            cells.append(f"{mean_std([r['semantic_acc'] for r in got])} / {mean_std([r['intent_acc'] for r in got])}")
        lines.append(f"| {lang} | " + " | ".join(cells) + " |")
    if out.get("learning_curves"):
        lines += ["", "## Learning curves (evaluations during pre-training)", "",
                  "| pair | variant | phase | step | BLEU en→x | BLEU x→en | round-trip en | round-trip x | DAE loss "
                  "| BT loss |", "|---|---|---|---|---|---|---|---|---|---|"]
        for c in out["learning_curves"]:
            x = c["pair"].split("-")[1]
            cell = [c.get(k) for k in (f"bleu_en_{x}", f"bleu_{x}_en", "roundtrip_bleu_en", f"roundtrip_bleu_{x}",
                                       "dae_loss", "bt_loss")]
            lines.append(f"| {c['pair']} | {c['variant']} | {c['phase']} | {c['step']} | "
                         + " | ".join("–" if v is None else f"{v}" for v in cell) + " |")
        lines += ["", "## Sample translations (last evaluation of each run)", ""]
        last: dict = {}
        for c in out["learning_curves"]:
            last[(c["pair"], c["variant"])] = c
        for (pair, variant), c in last.items():
            lines += [f"- {pair} {variant}, step {c['step']}:"] + [f"  - `{s}`" for s in c["samples"]]
    return "\n".join(lines) + "\n"
