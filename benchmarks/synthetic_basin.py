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
original (``toward``: 1 = straight there, 0 = unrelated); ``centred_*``: cosine and P@1 with each language's mean
row taken away (the tied MLM decoder cannot tell a synthetic piece from its original when their rows are equal, so
the objective may keep the two languages a common offset apart).  If MLM leads to the aligned rows, rows started
near them move towards them (``toward`` > 0, distance and P@1 improving); a fault in the synthetic text's labels or
the stage's treatment of the fresh rows would show as drift away.  ``alpha`` = 0 is the shipped stage run itself
(``benchmarks/synthetic.py``'s ``pretrain-mlm_embeddings-same_order``, reused when present).

And how strong the MLM signal is: each trained model's masked-token accuracy on held-out English lines and on their
synthetic images, the same positions masked (``mlm_by_language``; also for the all-parameter MLM stage).

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


def corpus_ids(folder: Path, english: list[Path], synthetic_side: list[Path]) -> list[int]:
    """Every id the tokenizer of ``folder`` gives the ``english`` files and the images of the ``synthetic_side``."""
    from tokenizers import Tokenizer

    from xlt.synthetic import cipher

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ids: set[int] = set()
    for f, image in [(f, False) for f in english] + [(f, True) for f in synthetic_side]:
        lines = f.read_text(encoding="utf-8").splitlines()
        for e in tok.encode_batch([cipher(x) for x in lines] if image else lines):
            ids.update(e.ids)
    return sorted(ids)


def row_metrics(start: torch.Tensor, end: torch.Tensor, pairs: list[tuple[int, int]]) -> dict:
    """Alignment of the synthetic rows of ``end`` (V, H) to its English rows, and their move from ``start``."""
    en, syn = (torch.tensor(ids) for ids in zip(*pairs))
    e, s = torch.nn.functional.normalize(end[en], dim=-1), torch.nn.functional.normalize(end[syn], dim=-1)
    sim = s @ e.T  # (K, K): synthetic row i against English row j
    # the tied MLM decoder cannot tell a synthetic piece from its original if their rows are equal, so MLM may keep
    # the two languages a common offset apart: the same measures with each language's mean row taken away
    ec = torch.nn.functional.normalize(end[en] - end[en].mean(0), dim=-1)
    sc = torch.nn.functional.normalize(end[syn] - end[syn].mean(0), dim=-1)
    centred = sc @ ec.T
    move, way = end[syn] - start[syn], start[en] - start[syn]
    k = torch.arange(len(pairs))
    return {"true_cosine": round(sim.diag().mean().item(), 4), "other_cosine": round(sim.mean().item(), 4),
            "precision_at_1": round((sim.argmax(1) == k).float().mean().item(), 4),
            "centred_true_cosine": round(centred.diag().mean().item(), 4),
            "centred_precision_at_1": round((centred.argmax(1) == k).float().mean().item(), 4),
            "distance": round((end[syn] - end[en]).norm(dim=-1).mean().item(), 4),
            "moved": round(move.norm(dim=-1).mean().item(), 4),
            "toward": round(torch.nn.functional.cosine_similarity(move, way, dim=-1).mean().item(), 4),
            "english_moved": round((end[en] - start[en]).norm(dim=-1).mean().item(), 4)}


def mlm_by_language(folder: Path, lines: list[str], candidates: list[int], seed: int = 0) -> dict:
    """Masked-token accuracy of a stage's model (encoder + its MLM head) on English ``lines`` and on their synthetic
    images, with the same positions masked (15 %, all by [MASK]) and the scores over ``candidates`` (the ids the
    stage's corpus uses, both languages); ``syn_predicts_original``: the share of synthetic positions whose top
    prediction is the English original of the gold piece (the two languages confused)."""
    from safetensors.torch import load_file

    from xlt import zoo
    from xlt.core.batching import pad_ids
    from xlt.core.vocab import special_ids, token_id
    from xlt.losses.mlm import MaskedLanguageModel
    from xlt.synthetic import cipher
    from xlt.synthetic.vocab import id_pairs

    encoder, tok, _ = zoo.load_encoder(str(folder))
    encoder.eval()
    head = MaskedLanguageModel.for_encoder(encoder.config)
    weights = load_file(str(folder / "mlm_head.safetensors"))
    head.resize(len(weights["bias"])).load_state_dict(weights)
    original = {s: e for e, s in id_pairs(folder, "en")}
    cand = torch.tensor(candidates)
    mask_id, pad = token_id(tok, "<mask>", "[MASK]"), token_id(tok, "<pad>", "[PAD]")
    specials = torch.tensor(special_ids(tok))
    g = torch.Generator().manual_seed(seed)
    counts = collections.Counter()
    with torch.no_grad():
        for start in range(0, len(lines), 32):
            chunk = lines[start:start + 32]
            for lang, texts in (("en", chunk), ("syn", [cipher(t) for t in chunk])):
                ids, attention = pad_ids([e.ids[:128] for e in tok.encode_batch(texts)], pad)
                if lang == "en":  # the same positions in the image (it tokenizes piece for piece as English)
                    chosen = (torch.rand(ids.shape, generator=g) < 0.15) & attention.bool() & ~torch.isin(ids, specials)
                gold = ids[chosen]
                hidden = encoder(input_ids=ids.masked_fill(chosen, mask_id), attention_mask=attention).last_hidden_state
                top = cand[head.logits(encoder, hidden[chosen], cand).argmax(-1)]
                counts[f"{lang}_correct"] += int((top == gold).sum())
                counts[f"{lang}_masked"] += len(gold)
                if lang == "syn":
                    counts["syn_original"] += sum(int(t) == original.get(int(y), -1) for t, y in zip(top, gold))
    return {"en_mlm_accuracy": round(counts["en_correct"] / counts["en_masked"], 4),
            "syn_mlm_accuracy": round(counts["syn_correct"] / counts["syn_masked"], 4),
            "syn_predicts_original": round(counts["syn_original"] / counts["syn_masked"], 4),
            "masked": counts["en_masked"]}


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
    # the MLM probe: the last 300 lines of each synthetic-side file (the stage held them out), scored over
    # the ids the stage's corpus uses (English files as they are, the synthetic side's files as images)
    heldout = [x for f in files for x in f.read_text(encoding="utf-8").splitlines()[-300:] if x.strip()]
    candidates = corpus_ids(grown, [Path(args.data_dir) / f for f in synthetic.EN_FILES], files)
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
        phases = json.loads((run / "results.json").read_text())["phases"]
        final = phases[-1]["final_eval"]
        train_seconds = round(sum(p["summary"]["train_seconds"] for p in phases), 1)
        probe = mlm_by_language(run / "model", heldout, candidates)
        for k in TOP_K:
            for when, matrix in (("start", start), ("end", end)):
                rows.append({"method": "continued_mlm_embeddings", "variant": "same_order", "alpha": alpha,
                             "top_k": k, "when": when, **row_metrics(start, matrix, pairs[:k]),
                             **({"heldout_mlm_accuracy": round(final["heldout_mlm_accuracy"], 4),
                                 "train_seconds": train_seconds, **probe} if when == "end" else {})})
            print(json.dumps(rows[-2:]), flush=True)
    full = synthetic.stage_dir("mlm", "same_order")  # continued MLM, every parameter training (when it was run)
    if (full / "results.json").exists():
        rows.append({"method": "continued_mlm", "variant": "same_order", "alpha": 0.0, "when": "end",
                     **mlm_by_language(full / "model", heldout, candidates)})
    out = {"benchmark": "synthetic-basin", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": f"{platform.machine()} CPU", "model": "multilingual-e5-small",
           "selection": "none (pre-training probe)",
           "wall_seconds": round(time.time() - start_time, 1),  # (the stage runs' own time: train_seconds)
           "notes": "synthetic.py's mlm_embeddings stage (200 head + 600 embedding steps, lr 5e-4) from synthetic "
                    "rows started alpha of the way to their English originals; metrics over the top_k English "
                    "sub-tokens most frequent in the stage's synthetic text (fortunes + gettext), before ('start') "
                    "and after ('end') the stage. alpha 0 is the shipped stage run. en/syn_mlm_accuracy: the "
                    "stage's model and MLM head on the last 300 lines (held out) of fortunes and gettext and on "
                    f"their images, the same 15 % of positions masked, scored over the {len(candidates):,} ids of "
                    "the stage's corpus; the continued_mlm row is synthetic.py's all-parameter MLM stage.",
           "rows": rows}
    (RESULTS / "synthetic-basin.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
