"""Probe: why do TreLM's bridged rows start Spanish MLM worse than the paper's direct map (issue 49)?

On real en-es the bridged base (``options.vocabulary.map_into=english_fasttext``: each new row the softmax-weighted
mean of the English model's rows of its 10 nearest English entries, WECHSEL) translates far better than the direct
map (word P@1 27.1 % against 0.5 %), yet held-out Spanish BPW after the commonality phase is 9.01 against 8.83, and
7.72 against 7.44 after all four phases (benchmarks/results/trelm.md).  This probe measures the initialised rows of
both bases — the rows of the entries the English vocabulary lacks (the others are MiniLM's own rows in both) — and
tests one explanation by training:

- geometry of each set of rows (3,000 sampled): mean L2 norm, mean cosine between two rows, mean cosine to the
  nearest other row of the set ("crowding"), effective rank of the centred rows (exp of the entropy of the
  normalised squared singular values), mean cosine of each row to its nearest MiniLM row;
- ``rescaled``: the bridged base with every new row rescaled to the mean norm of MiniLM's rows (what the direct map
  does to its rows), then the shipped commonality phase (1000 steps): held-out es BPW against the bridged base's.

Bases (built when missing; the fastText vectors and the vocabulary are the same text's): ``bridged`` =
``benchmarks/trelm.py``'s ``trelm-bridged`` run (job ``align-bridged``), ``direct`` = the shipped config's base
(identical-strings seed, as the migrated run's; the adversarial game skipped: it does not initialise the rows).

    python benchmarks/trelm_row_geometry.py --data-dir ../shared/data [--rescaled]   # ~5 + 6 CPU-minutes
Writes benchmarks/results/trelm-row-geometry.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import shutil
import time
from pathlib import Path

import torch

from jobqueue import RESULTS, RUNS, git_commit, trelm_base

WORDS = "embeddings.word_embeddings.weight"
SAMPLE = 3000


def base_dirs(data_dir: str) -> dict[str, Path]:
    """{name: RUN_DIR/base}, each built when missing (vocabulary, fastText, alignment; no phases)."""
    import trelm
    from xlt.config import find_config, load_stage_config

    bridged = trelm.stage_dir("bridged") / "base"
    if not (bridged / "model.safetensors").exists():
        trelm.run_pretrain("bridged", data_dir, base_only=True)
    cfg = load_stage_config(find_config("pretrain-trelm-es"), [
        f"corpus.data_dir={data_dir}", f"output_dir={RUNS}", "name=trelm-geometry-direct",
        "options.vocabulary.adversarial.epochs=0"])
    if not (cfg.run_dir / "base" / "model.safetensors").exists():
        trelm_base(cfg)
    return {"direct": cfg.run_dir / "base", "bridged": bridged}


def new_rows(base: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """(V, H) embedding matrix of a base and a (V,) mask of the rows not copied from MiniLM (entries the English
    vocabulary lacks)."""
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    from xlt import zoo

    matrix = load_file(str(base / "model.safetensors"))[WORDS]
    english = zoo.load_tokenizer(zoo.resolve("minilm-l6-en")).get_vocab()
    mask = torch.ones(len(matrix), dtype=torch.bool)
    mask[[i for t, i in Tokenizer.from_file(str(base / "tokenizer.json")).get_vocab().items() if t in english]] = False
    return matrix, mask


def geometry(rows: torch.Tensor, english: torch.Tensor) -> dict:
    """Norm, spread and crowding of (N, H) ``rows`` (a fixed sample of SAMPLE), and their nearness to the (E, H)
    English rows."""
    pick = rows[torch.randperm(len(rows), generator=torch.Generator().manual_seed(0))[:SAMPLE]]
    unit = torch.nn.functional.normalize(pick, dim=1)
    cos = unit @ unit.T
    off = ~torch.eye(len(unit), dtype=torch.bool)
    nearest = cos.masked_fill(~off, -2).max(1).values
    s = torch.linalg.svdvals(pick - pick.mean(0)) ** 2
    p = s / s.sum()
    to_english = (unit @ torch.nn.functional.normalize(english, dim=1).T).max(1).values
    return {"n": len(rows), "mean_norm": float(rows.norm(dim=1).mean()), "pairwise_cosine": float(cos[off].mean()),
            "nearest_row_cosine": float(nearest.mean()), "effective_rank": float(torch.exp(-(p * p.log()).sum())),
            "nearest_english_row_cosine": float(to_english.mean())}


def rescaled_commonality(bridged: Path, english: torch.Tensor, data_dir: str) -> dict:
    """The bridged base with its new rows rescaled to the mean norm of MiniLM's (E, H) rows ``english``, then the
    shipped commonality phase."""
    from safetensors.torch import load_file, save_file

    import trelm
    from xlt.config import find_config, load_stage_config
    from xlt.stages import run_stage

    src = RUNS / "trelm-geometry-rescaled-src" / "base"
    if not src.exists():
        shutil.copytree(bridged, src)
        matrix, mask = new_rows(src)
        matrix[mask] = torch.nn.functional.normalize(matrix[mask], dim=1) * english.norm(dim=1).mean()
        weights = load_file(str(src / "model.safetensors"))
        save_file({**weights, WORDS: matrix.contiguous()}, str(src / "model.safetensors"), metadata={"format": "pt"})
    cfg = load_stage_config(find_config("pretrain-trelm-es"), [
        f"corpus.data_dir={data_dir}", f"output_dir={RUNS}", "name=trelm-geometry-rescaled",
        *trelm.variant_overrides("bridged"), f"options.base_from={src}",
        trelm._phases(trelm._shipped("phases")[:1])])
    if not (cfg.run_dir / "results.json").exists():
        run_stage(cfg, resume=(cfg.run_dir / "config.yaml").exists())
    final = json.loads((cfg.run_dir / "results.json").read_text())["phases"][0]["final_eval"]
    reference = [json.loads(line) for line in (trelm.stage_dir("bridged") / "phase1-commonality" /
                                               "metrics.jsonl").read_text().splitlines()][-1]
    return {"phase": "commonality", "steps": final["step"], "heldout_es_bpw": final["heldout_es_bpw"],
            "heldout_es_bpw_bridged": reference.get("heldout_es_bpw")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--rescaled", action="store_true", help="also train the commonality phase on rescaled rows")
    args = ap.parse_args()
    from safetensors.torch import load_file

    from xlt import zoo

    start = time.time()
    english = load_file(str(zoo.resolve("minilm-l6-en") / "model.safetensors"))[WORDS]
    rows = [{"base": "minilm", "rows": "english", **geometry(english, english)}]
    bases = base_dirs(args.data_dir)
    for name, base in bases.items():
        matrix, mask = new_rows(base)
        rows.append({"base": name, "rows": "new", **geometry(matrix[mask], english)})
        print(json.dumps(rows[-1]))
    if args.rescaled:
        rows.append({"base": "bridged_rescaled", "rows": "new", **rescaled_commonality(bases["bridged"], english,
                                                                                        args.data_dir)})
        print(json.dumps(rows[-1]))
    out = {"benchmark": "trelm-row-geometry", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": f"{platform.machine()}, 2 CPU cores, no GPU",
           "model": "minilm-l6-en (TreLM en-es bases)", "seconds": round(time.time() - start, 1),
           "notes": __doc__.split("\n\n")[1].replace("\n", " "), "rows": rows}
    (RESULTS / "trelm-row-geometry.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
