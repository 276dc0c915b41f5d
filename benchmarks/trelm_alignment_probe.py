"""Probe: can TreLM's embedding alignment find the synthetic language's TRUE bijection, and what stops it (issue 49)?

The English side and the synthetic side (``syn-en``, English in fresh symbols) are split by one new WordPiece
vocabulary (trained on both texts, as TreLM's) and each gets its own fastText space (xlt.align.fasttext_bridge's
setting: 300-d skip-gram, 5 epochs).  Because the language is a cipher, every synthetic piece's true English piece
is known, so each step can be scored on the true pairs — piece-level P@1 (cosine nearest neighbour among all English
pieces seen) over the synthetic pieces among the 5,000 most frequent that have a true partner:

- ``ceiling_orthogonal`` / ``ceiling_linear``: maps FITTED on half of the true pairs, scored on the other half — the
  best any orthogonal (MUSE, VecMap) or any linear map can do between these two spaces;
- ``seed_accuracy``: share of right pairs in VecMap's unsupervised similarity seed (no dictionary, no shared string);
- ``precision_at_1``: after Procrustes on that seed and 5 rounds of MUSE's refinement (what the stage's
  ``alignment: similarity_seed`` does).

Two corpus settings: ``disjoint`` (the benchmark's: English = libreoffice + manpages, synthetic = the image of
fortunes + gettext, as benchmarks/synthetic.py's stages read them) and ``comparable`` (all four files, English = the
even lines, synthetic = the image of the odd lines: same domains, still no sentence on both sides); each ``plain``
(MUSE's unit-centre-unit) and ``whitened`` (+ VecMap whitening).

    python benchmarks/trelm_alignment_probe.py --data-dir ../shared/data   # ~6 CPU-minutes
Writes benchmarks/results/trelm-synthetic-alignment.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import torch

from jobqueue import RESULTS, git_commit

FILES = {"en": ["libreoffice", "manpages"], "syn-en": ["fortunes", "gettext"]}  # = synthetic.EN_FILES / SYN_FILES
HELDOUT = 300  # the stage's corpus.heldout_lines: never trained on
TOP = 5000


def texts(data_dir: Path, setting: str, folder: Path) -> dict[str, Path]:
    from xlt.data.readers import text_lines
    from xlt.synthetic import rewrite_lines

    def lines(name: str) -> list[str]:
        kept = text_lines(data_dir / "mono" / "en" / f"{name}.txt")[0]
        return kept[:len(kept) - HELDOUT]

    if setting == "disjoint":
        english = [line for f in FILES["en"] for line in lines(f)]
        image = [line for f in FILES["syn-en"] for line in lines(f)]
    else:
        every = [line for f in FILES["en"] + FILES["syn-en"] for line in lines(f)]
        english, image = every[0::2], every[1::2]
    out = {"en": folder / "en.txt", "syn-en": folder / "syn-en.txt"}
    out["en"].write_text("".join(line + "\n" for line in english), encoding="utf-8")
    out["syn-en"].write_text("".join(line + "\n" for line in rewrite_lines(image, "syn-en")), encoding="utf-8")
    return out


def probe(files: dict[str, Path]) -> list[dict]:
    from xlt.align.embedding_map import heldout_anchor_precision, procrustes, refine
    from xlt.align.fasttext_bridge import seen_by_frequency, space_preparation, true_pairs
    from xlt.align.subword_vectors import SPECIALS, fasttext_vectors, token_counts, train_wordpiece
    from xlt.align.vecmap import similarity_seed
    from xlt.stages.trelm_base import true_piece_translation

    start = time.time()
    tokenizer = train_wordpiece([files["en"], files["syn-en"]], 30000)
    specials = {tokenizer.token_to_id(t) for t in SPECIALS}
    vectors, seen = {}, {}
    for lang, path in files.items():
        vectors[lang], _ = fasttext_vectors(tokenizer, [path], 300, 5, 1)
        seen[lang] = seen_by_frequency(token_counts(tokenizer, [path]), specials)
    true = true_pairs(tokenizer, seen["syn-en"], seen["en"], true_piece_translation("syn-en"))
    gold = {a: b for a, b in true.tolist() if a < TOP}
    rows = []
    for prep in ("plain", "whitened"):
        space = {lang: space_preparation(vectors[lang], seen[lang], prep == "whitened")(vectors[lang][seen[lang]])
                 for lang in files}
        X, Z = space["syn-en"], space["en"]
        ceiling = heldout_anchor_precision(X, Z, true)
        seed = similarity_seed(X, Z, 4000)
        W, _ = refine(X, Z, procrustes(X, Z, seed), 5)
        queries = torch.tensor(sorted(gold))
        best = (X[queries] @ W.T @ Z.T).argmax(1).tolist()
        rows.append({"preparation": prep, "true_pairs": len(true), "scored_pieces": len(gold),
                     "synthetic_pieces_seen": len(seen["syn-en"]), "english_pieces_seen": len(seen["en"]),
                     "ceiling_orthogonal": round(ceiling["procrustes_precision_at_1"], 4),
                     "ceiling_linear": round(ceiling["least_squares_precision_at_1"], 4),
                     "seed_accuracy": round(sum(gold.get(int(a)) == int(b) for a, b in seed) / len(seed), 4),
                     "precision_at_1": round(sum(gold[q] == b for q, b in zip(queries.tolist(), best)) / len(gold), 4),
                     "seconds": round(time.time() - start, 1)})
        print(rows[-1])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="../shared/data")
    args = ap.parse_args()
    rows = []
    for setting in ("disjoint", "comparable"):
        with tempfile.TemporaryDirectory() as tmp:
            for row in probe(texts(Path(args.data_dir), setting, Path(tmp))):
                rows.append({"method": "trelm_alignment_probe", "dataset": f"mono/en ({setting})", "lang": "syn-en",
                             "seed": 1, "variant": f"{setting}_{row.pop('preparation')}", **row})
    out = {"benchmark": "trelm-synthetic-alignment", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": f"{platform.machine()}, CPU", "model": "none (fastText spaces)",
           "selection": "n/a", "notes": __doc__.split("\n\n")[1].replace("\n", " "), "rows": rows}
    (RESULTS / "trelm-synthetic-alignment.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
