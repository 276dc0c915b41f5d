"""Benchmark: label projection statistics, no training.  Translates the English training set into each language
(MTOD es and xSID sr with Apertium, xSID da with the shipped MT text), aligns it (the config's
``translation.aligner``, default similarity), projects the slot spans
and counts projected / partial / dropped spans and utterances and BIO violations; compares xlt's Danish projection
with the shipped ``da.mt.label``.  Writes benchmarks/results/projection.json.

    python benchmarks/projection.py --data-dir ../shared/data [--gold-only]

``gold_projection`` rows: each aligner's projection of xSID's English gold slots onto the human translations (the
test + dev files are parallel), scored against their gold slots: how good a projection is, before any MT or
training.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from xlt.config import find_config, load_config
from xlt.data.datasets import deduplicate, load_split
from xlt.tasks import get_task
from xlt.translate.train_data import translated_training_set

HERE = Path(__file__).parent
GOLD_NOTES = ("gold_projection: span F1 (seqeval) of the English gold slots of xSID test+dev projected through each "
              "aligner onto the human translation, against that translation's gold slots; languages whose files are "
              "parallel to English. eflomal: mean of 3 fits on the pairs + Tatoeba; similarity: multilingual-e5-small "
              "layer 8, argmax both ways + grow-diag-final-and.")
CASES = [("mtod-translate-train-es", "es"), ("xsid-translate-train-sr", "sr"), ("xsid-translate-train-da", "da")]


def copied_rate(rows) -> float:
    """Share of translated words (digits aside) that also occur in the English source sentence: a rough gauge of
    how much a rule-based system left untranslated (names and numbers count too, so it is never 0)."""
    total = copied = 0
    for u in rows:
        source = {w.lower() for w in " ".join(u.reference or []).split()}
        words = [w.lower() for w in u.words if w.isalpha()]
        total += len(words)
        copied += sum(w in source for w in words)
    return round(copied / max(1, total), 4)


GOLD_SPLITS = ("test", "valid")
EFLOMAL_FITS = 3  # eflomal samples: its gold F1 is the mean of this many fits


def gold_pairs(data_dir: Path, lang: str) -> tuple[list, list] | None:
    """xSID's English test + dev utterances and their human translations in ``lang`` with gold slots, or None
    when the files are not parallel (each target utterance's ``# text-en`` is the English one's text)."""
    from xlt.data.readers import read_xsid_conll

    en, tgt = [], []
    for split in GOLD_SPLITS:
        en += read_xsid_conll(data_dir / "xsid" / f"en.{split}.conll", "en")[0]
        tgt += read_xsid_conll(data_dir / "xsid" / f"{lang}.{split}.conll", lang)[0]
    def same(e, t) -> bool:
        return bool(t.reference) and "".join(t.reference[0].split()) == "".join(e.words)

    return (en, tgt) if len(en) == len(tgt) and all(same(e, t) for e, t in zip(en, tgt)) else None


def gold_projection(data_dir: Path) -> list[dict]:
    """Span F1 of English gold slots projected onto xSID's human translations against their own gold slots, per
    aligner: the quality of the projection itself, no MT and no training.  eflomal is fit on the pairs plus
    Tatoeba (as for translate-test); the similarity aligner needs no fit (multilingual-e5-small, layer 8)."""
    from seqeval.metrics import f1_score

    from xlt.align.eflomal_align import align
    from xlt.align.project import project_tags
    from xlt.align.similarity import SimilarityAligner
    from xlt.config import load_config
    from xlt.translate.resources import extra_parallel

    similarity = SimilarityAligner("multilingual-e5-small")
    rows = []
    for lang in sorted(p.name.split(".")[0] for p in (data_dir / "xsid").glob("*.test.conll")):
        pairs = None if lang == "en" else gold_pairs(data_dir, lang)
        if pairs is None:
            continue
        en, tgt = pairs
        src_words, tgt_words = [e.words for e in en], [t.words for t in tgt]

        def f1(links: list) -> float:
            pred = [project_tags(e.slots, link, len(t.words))[0] for e, t, link in zip(en, tgt, links)]
            return f1_score([t.slots for t in tgt], pred)

        extra = extra_parallel(load_config(None, [f"data.data_dir={data_dir}"]), lang)
        fits = [f1(align(src_words, tgt_words, extra)) for _ in range(EFLOMAL_FITS)]
        t0 = time.perf_counter()
        sim = f1(similarity.align(src_words, tgt_words))
        seconds = round(time.perf_counter() - t0, 1)
        base = {"dataset": "xsid", "lang": lang, "pairs": len(en), "splits": "+".join(GOLD_SPLITS)}
        rows += [{**base, "aligner": "eflomal", "span_f1": round(sum(fits) / len(fits), 4),
                  "span_f1_fits": [round(x, 4) for x in fits], "fit_pairs": len(en) + len(extra)},
                 {**base, "aligner": "similarity", "span_f1": round(sim, 4), "seconds": seconds}]
        print(lang, rows[-2]["span_f1"], rows[-1]["span_f1"], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--gold-only", action="store_true", help="only the gold_projection rows (the committed "
                        "training-set rows are kept)")
    args = parser.parse_args()
    path = HERE / "results" / "projection.json"
    if args.gold_only:
        out = json.loads(path.read_text())
        out["gold_projection"] = gold_projection(Path(args.data_dir))
        out["gold_projection_notes"] = GOLD_NOTES
        path.write_text(json.dumps(out, indent=1, ensure_ascii=False))
        return
    rows = []
    for config, lang in CASES:
        cfg = load_config(find_config(config), [f"data.data_dir={args.data_dir}"])
        source, _ = deduplicate(load_split(Path(args.data_dir), cfg.data.dataset, "en", "train").examples)
        report: dict = {}
        t0 = time.perf_counter()
        kept = translated_training_set(cfg, get_task("intent_slot"), lang, source, report)
        entry = report["translation"][lang]
        entry["copied_source_word_rate"] = copied_rate(kept)
        rows.append({"config": config, "dataset": cfg.data.dataset, "lang": lang, "aligner": cfg.translation.aligner,
                     "source_utterances": len(source),
                     "kept_utterances": len(kept), "seconds": round(time.perf_counter() - t0, 1), **entry})
        print(lang, json.dumps(rows[-1]["projection"]), entry["copied_source_word_rate"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    out = {"benchmark": "projection", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": commit, "machine": "2 CPU cores, no GPU", "model": "none (data only)",
           "selection": "source-dev",
           "notes": "deduplicated English train sets translated and projected (rows: aligner says which: similarity, "
                    "the default, or eflomal fit with Tatoeba; both symmetrized with grow-diag-final-and); "
                    "on_lost_span=skip_utterance; shipped_raw = BIO violations (orphan I-) in the raw shipped "
                    "da.mt.label before any repair. eflomal samples: its counts vary slightly per run.",
           "rows": merged_rows(path, rows), "gold_projection": gold_projection(Path(args.data_dir)), "gold_projection_notes": GOLD_NOTES}
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False))


def merged_rows(path: Path, fresh: list[dict]) -> list[dict]:
    """The rows just made, plus the committed rows of the other aligner (each config's projection by both)."""
    committed = json.loads(path.read_text()).get("rows", []) if path.exists() else []
    made = {(r["config"], r["lang"], r.get("aligner")) for r in fresh}
    return [r for r in committed if (r["config"], r["lang"], r.get("aligner")) not in made] + fresh


if __name__ == "__main__":
    main()
