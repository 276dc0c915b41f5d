"""Probe: does embedding-only MLM pull a synthetic row towards its English original (issue 49)?

On the synthetic language the right answer of embedding-only MLM (Artetxe et al., ACL 2020: the English-trained body
frozen, only word embeddings and the MLM head learn) is known: the synthetic image of an English sub-token is
aligned when its row equals the English row, because then the body computes on a synthetic sentence exactly what
it computes on its English original.  The shipped synthetic row (``mlm_embeddings``, 200 head + 600 embedding
steps) left the rows at chance.  This probe tells "the objective or our code does not lead there" from "600 steps
from a random start are too few": it starts the synthetic rows part of the way to the answer,

    row(syn) = alpha * row(English original) + (1 - alpha) * row(shipped random init),

runs the same stage from there, and measures, over the K sub-tokens most frequent in the stage's synthetic text:
the mean cosine of each synthetic row to its English original, the share whose nearest English row (among the K) is
its original (P@1), the distance to the original, and the cosine between each row's move and the way to its
original (``toward``: 1 = straight there, 0 = unrelated).  If MLM leads to the aligned rows, rows started near them
move towards them (``toward`` > 0, distance and P@1 improving); a fault in the synthetic text's labels or the
stage's treatment of the fresh rows would show as drift away.  ``alpha`` = 0 is the shipped stage run itself
(``benchmarks/synthetic.py``'s ``pretrain-mlm_embeddings-same_order``, reused when present).

    python benchmarks/synthetic_basin.py --data-dir ../shared/data [--alphas 0 0.1 0.5]   # ~8 CPU-min per alpha
Writes benchmarks/results/synthetic-basin.json.
"""
from __future__ import annotations

import argparse
import collections
import json
import platform
import shutil
import time
from pathlib import Path

import torch

from jobqueue import RESULTS, RUNS, git_commit, pretrain

WORDS = "embeddings.word_embeddings.weight"
TOP_K = (100, 1000)


def started_near(grown: Path, target: Path, alpha: float) -> Path:
    """A copy of the grown model folder ``grown`` whose synthetic rows are moved ``alpha`` of the way to their
    English originals."""
    from safetensors.torch import load_file, save_file

    from xlt.synthetic.vocab import id_pairs

    if (target / "model.safetensors").exists():
        return target
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(grown, tmp)
    weights = load_file(str(grown / "model.safetensors"))
    en, syn = (torch.tensor(ids) for ids in zip(*id_pairs(grown, "en")))
    rows = weights[WORDS].clone()
    rows[syn] = alpha * rows[en] + (1 - alpha) * rows[syn]
    weights[WORDS] = rows
    save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    tmp.rename(target)
    return target


def frequent_pairs(folder: Path, files: list[Path], k: int) -> list[tuple[int, int]]:
    """The (English id, synthetic id) pairs of the ``k`` English sub-tokens most frequent in ``files`` (the English
    originals of the stage's synthetic text: its images use the same pieces as often)."""
    from tokenizers import Tokenizer

    from xlt.synthetic.vocab import id_pairs

    pairs = dict(id_pairs(folder, "en"))
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    counts: collections.Counter = collections.Counter()
    for f in files:
        for e in tok.encode_batch(f.read_text(encoding="utf-8").splitlines()):
            counts.update(i for i in e.ids if i in pairs)
    return [(i, pairs[i]) for i, _ in counts.most_common(k)]


def row_metrics(start: torch.Tensor, end: torch.Tensor, pairs: list[tuple[int, int]]) -> dict:
    """Alignment of the synthetic rows of ``end`` (V, H) to its English rows, and their move from ``start``."""
    en, syn = (torch.tensor(ids) for ids in zip(*pairs))
    e, s = torch.nn.functional.normalize(end[en], dim=-1), torch.nn.functional.normalize(end[syn], dim=-1)
    sim = s @ e.T  # (K, K): synthetic row i against English row j
    move, way = end[syn] - start[syn], start[en] - start[syn]
    return {"true_cosine": round(sim.diag().mean().item(), 4), "other_cosine": round(sim.mean().item(), 4),
            "precision_at_1": round((sim.argmax(1) == torch.arange(len(pairs))).float().mean().item(), 4),
            "distance": round((end[syn] - end[en]).norm(dim=-1).mean().item(), 4),
            "moved": round(move.norm(dim=-1).mean().item(), 4),
            "toward": round(torch.nn.functional.cosine_similarity(move, way, dim=-1).mean().item(), 4),
            "english_moved": round((end[en] - start[en]).norm(dim=-1).mean().item(), 4)}


def main() -> None:
    import synthetic
    from safetensors.torch import load_file

    from xlt import zoo
    from xlt.config import find_config, load_stage_config

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--alphas", type=float, nargs="+", default=[0.0, 0.1, 0.5])
    args = ap.parse_args()
    start_time = time.time()
    grown = zoo.resolve("multilingual-e5-small+syn-en")
    config, overrides = synthetic.STAGES["mlm_embeddings"]
    files = [Path(args.data_dir) / f for f in synthetic.SYN_FILES]
    pairs = frequent_pairs(grown, files, max(TOP_K))
    rows = []
    for alpha in args.alphas:
        if alpha == 0:
            base, folder = grown, synthetic.stage_dir("mlm_embeddings", "same_order")
        else:
            base = started_near(grown, RUNS / f"synthetic-basin-a{alpha:g}" / "base", alpha)
            folder = RUNS / f"synthetic-basin-a{alpha:g}-mlm_embeddings"
        cfg = load_stage_config(find_config(config), [
            f"corpus.data_dir={args.data_dir}", f"output_dir={folder.parent}", f"name={folder.name}",
            *overrides("syn-en"), f"model.name={base}"])
        run = pretrain(cfg)
        start = load_file(str(base / "model.safetensors"))[WORDS].float()
        end = load_file(str(run / "model" / "model.safetensors"))[WORDS].float()
        final = json.loads((run / "results.json").read_text())["phases"][-1]["final_eval"]
        for k in TOP_K:
            for when, matrix in (("start", start), ("end", end)):
                rows.append({"method": "continued_mlm_embeddings", "variant": "same_order", "alpha": alpha,
                             "top_k": k, "when": when, **row_metrics(start, matrix, pairs[:k]),
                             "heldout_mlm_accuracy": round(final["heldout_mlm_accuracy"], 4) if when == "end"
                             else None})
            print(json.dumps(rows[-2:]), flush=True)
    out = {"benchmark": "synthetic-basin", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": f"{platform.machine()} CPU", "model": "multilingual-e5-small",
           "selection": "none (pre-training probe)", "wall_seconds": round(time.time() - start_time, 1),
           "notes": "synthetic.py's mlm_embeddings stage (200 head + 600 embedding steps, lr 5e-4) from synthetic "
                    "rows started alpha of the way to their English originals; metrics over the top_k English "
                    "sub-tokens most frequent in the stage's synthetic text (fortunes + gettext), before ('start') "
                    "and after ('end') the stage. alpha 0 is the shipped stage run.", "rows": rows}
    (RESULTS / "synthetic-basin.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
