"""Question: how well does a TALL pre-training translate in-domain text, and how fast?  The pre-trained model as xlt's
``tall`` translation backend on the English originals (``# text-en``) of the xSID test set of the pair's target
language and its human translations (``# text``), both directions: BLEU (sacreBLEU's standard tokenizer; character
BLEU too for ja / zh) and sentences/s.  Apertium has neither pair here; for scale, Apertium eng->hbs (Serbian) on the
xSID sr test set, same measures (another language: throughput, not quality, compares).  A call row of the tall study.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/


def measure_translator(translator, name: str, en: list[str], tgt: list[str], lang: str) -> list[dict]:
    """BLEU against the human side and sentences/s, en->lang and lang->en (no cache: the timing is the backend's)."""
    import time

    from xlt.stages.translation_eval import CHARACTER_BLEU, bleu, tokenize_of

    rows = []
    for src, dst, texts, refs in (("en", lang, en, tgt), (lang, "en", tgt, en)):
        start = time.perf_counter()
        out = translator.translate(texts, src, dst)
        seconds = time.perf_counter() - start
        rows.append({"method": "translator", "translator": name, "dataset": "xsid-test", "lang": f"{src}-{dst}",
                     "seed": 1, "bleu": round(bleu(out, refs, dst), 2), "tokenize": tokenize_of(dst),
                     **({"char_bleu": round(bleu(out, refs, dst, "char"), 2)} if dst in CHARACTER_BLEU else {}),
                     "sentences": len(texts),
                     "seconds": round(seconds, 2), "sentences_per_second": round(len(texts) / seconds, 1),
                     "identical_rate": round(sum(o == t for o, t in zip(out, texts)) / len(texts), 3),
                     "samples": [f"{t} → {o} (ref: {r})" for t, o, r in list(zip(texts, out, refs))[:4]]})
    return rows


def run(data_dir: str, runs: Path, pair: str) -> None:
    """The pair's TALL pre-training (runs/tall-PAIR) as a translator -> runs/tall-PAIR/xsid_translation.json."""
    import torch

    from probes.tall_probe import xsid_pairs
    from xlt.translate import get_translator

    torch.set_num_threads(2)
    stage = runs / f"tall-{pair}"
    if not (stage / "results.json").exists():
        raise SystemExit(f"{stage}: pre-train first (row tall-{pair})")
    lang = pair.split("-")[1]
    rows = measure_translator(get_translator("tall", model=str(stage)), f"tall {pair}", *xsid_pairs(data_dir, lang),
                              lang)
    if pair == "en-ja":  # Apertium for scale, once
        try:
            rows += measure_translator(get_translator("apertium"), "apertium", *xsid_pairs(data_dir, "sr"), "sr")
        except Exception as err:  # noqa: BLE001 - Apertium is only the point of comparison
            print(f"apertium en-sr not measured: {err}")
    (stage / "xsid_translation.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    for r in rows:
        print(f"{r['translator']:14} {r['lang']:6} BLEU {r['bleu']:6.2f}  {r['sentences_per_second']:7.1f} sent/s")
