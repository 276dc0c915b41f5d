"""Question: how alike are an encoder's states for a sentence and its translation, before and after Unicoder pre-training?  A
probe for the Unicoder benchmark (job ``probe``): evidence for why a variant helps or hurts zero-shot transfer,
which goes through those states (the fine-tuned heads pool the encoder's last layer).

Sentences: the DEV splits only (never the test sets the fine-tuning rows report): the first 1,000 XNLI dev
hypotheses of each language (rows are parallel across XNLI's 15 languages) and the xSID dev utterances with their
English originals (``# text-en``; Norwegian's dev file has none, so no row).  Each sentence is mean-pooled over the encoder's last layer; per language the
probe gives (``benchmarks/probes/tall_probe.similarity``): retrieval top-1 of the translation among all candidates (both
directions averaged), and mean cosine of true pairs vs other pairs.  Models: the shipped encoder (``variant: none``)
and each finished pre-training in benchmarks/runs (``unicoder-{variant}/model``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/

XNLI_SENTENCES = 1000


def xnli_dev(data_dir: str, lang: str, n: int = XNLI_SENTENCES) -> list[str]:
    """The first ``n`` hypotheses of XNLI dev in ``lang`` (row i of every language is a translation of row i)."""
    lines = (Path(data_dir) / "xnli" / f"dev-{lang}.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[1].strip() for line in lines[:n]]


def xsid_dev(data_dir: str, lang: str) -> tuple[list[str], list[str]]:
    """(English originals, ``lang`` utterances) of xSID dev, from each block's ``# text-en`` / ``# text`` lines."""
    en, tgt = [], []
    for block in (Path(data_dir) / "xsid" / f"{lang}.valid.conll").read_text(encoding="utf-8").split("\n\n"):
        got = dict(line[2:].split(" = ", 1) for line in block.splitlines() if line.startswith("# ") and " = " in line)
        if got.get("text") and got.get("text-en"):
            en.append(got["text-en"].strip())
            tgt.append(got["text"].strip())
    return en, tgt


def probe(data_dir: str, runs: Path, variants: list[str], seen: set[str], skip: frozenset = frozenset()) -> list[dict]:
    """Rows of the shipped encoder (``none``) and of every finished pre-training among ``variants``, except those in
    ``skip`` (already probed)."""
    import torch
    from probes.tall_probe import pooled_states, similarity

    from xlt import zoo

    torch.set_num_threads(2)
    xnli_langs = sorted(p.name[4:-4] for p in (Path(data_dir) / "xnli").glob("dev-*.tsv") if p.name != "dev-en.tsv")
    xsid_langs = sorted(p.name[:-12] for p in (Path(data_dir) / "xsid").glob("*.valid.conll")
                        if p.name != "en.valid.conll")
    models = [("none", "multilingual-e5-small")]
    models += [(v, str(runs / f"unicoder-{v.replace('+', '-')}" / "model")) for v in variants
               if (runs / f"unicoder-{v.replace('+', '-')}" / "results.json").exists()]
    models = [(v, name) for v, name in models if v not in skip]
    rows = []
    for variant, name in models:
        encoder, tokenizer, _ = zoo.load_encoder(name)
        encoder.eval()
        english, _ = pooled_states(encoder, None, tokenizer, xnli_dev(data_dir, "en"), 0)
        for lang in xnli_langs:
            other, _ = pooled_states(encoder, None, tokenizer, xnli_dev(data_dir, lang), 0)
            rows.append({"method": "probe", "dataset": "xnli", "variant": variant, "lang": lang, "seed": 1,
                         "split": "dev", "seen": lang in seen, "sentences": len(other), **similarity(english, other)})
        for lang in xsid_langs:
            en, tgt = xsid_dev(data_dir, lang)
            if not en:  # no.valid.conll has no "# text-en" lines
                continue
            a, _ = pooled_states(encoder, None, tokenizer, en, 0)
            b, _ = pooled_states(encoder, None, tokenizer, tgt, 0)
            rows.append({"method": "probe", "dataset": "xsid", "variant": variant, "lang": lang, "seed": 1,
                         "split": "dev", "seen": lang in seen, "sentences": len(en), **similarity(a, b)})
        for dataset in ("xnli", "xsid"):
            got = [r["retrieval_top1"] for r in rows if r["variant"] == variant and r["dataset"] == dataset]
            print(f"probe {variant:14} {dataset}: mean retrieval top-1 {100 * sum(got) / len(got):.1f} % "
                  f"over {len(got)} languages", flush=True)
    return rows


def run_all(data_dir: str, runs: Path, variants: list[str] | None = None, out: str = "unicoder-probe.json",
            shipped: bool = True) -> None:
    """``probe`` on the shipped encoder (unless not ``shipped``) and every finished pre-training of the unicoder study
    (or ``variants``) -> runs/``out``, merged with the rows of earlier probes (the probe is deterministic: a variant's
    rows stay valid while its encoder is older than them; a pre-training no longer here keeps its committed rows)."""
    from study import load_study

    study = load_study("unicoder")
    if variants is None:
        variants = [r["labels"]["variant"] for r in study["rows"] if "stage" in r]
    out = runs / out
    old = json.loads(out.read_text()) if out.exists() else []

    def unchanged(variant: str) -> bool:
        done = runs / f"unicoder-{variant.replace('+', '-')}" / "results.json"
        return variant == "none" or (done.exists() and done.stat().st_mtime < out.stat().st_mtime)
    keep = frozenset(r["variant"] for r in old if unchanged(r["variant"]))
    seen = set(study["lang_sets"]["seen"])
    rows = [r for r in old if r["variant"] in keep] + probe(data_dir, runs, variants, seen,
                                                            keep | (set() if shipped else {"none"}))
    out.write_text(json.dumps(rows, indent=1))
