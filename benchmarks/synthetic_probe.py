"""Probe: how alike are an encoder's English and synthetic representations (issue 49)?  A zero-shot transfer to the
synthetic image of English needs the encoder to treat a synthetic sentence like its English original.

Two measures, on a model grown with ``syn-en`` (the base grown model, or one pre-trained on it):
- ``embedding_p1``: for each English sub-token the pre-training corpus uses and its true synthetic image, is the
  image's input embedding nearer (cosine) to its own English row than to every other such English row?
- ``sentence_p1``: mean-pooled last-layer states of xSID English test utterances and of their images: is each
  image's nearest English utterance its original (both directions averaged)?  And the mean cosine of true pairs.

    python benchmarks/synthetic_probe.py --data-dir ../shared/data MODEL_FOLDER ...
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch


def sentence_states(encoder, tokenizer, texts: list[str], batch: int = 64) -> torch.Tensor:
    out = []
    for i in range(0, len(texts), batch):
        enc = tokenizer.encode_batch(texts[i:i + batch])
        T = max(len(e.ids) for e in enc)
        ids = torch.tensor([e.ids + [1] * (T - len(e.ids)) for e in enc])
        mask = torch.tensor([[1] * len(e.ids) + [0] * (T - len(e.ids)) for e in enc])
        with torch.no_grad():
            h = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).float()
        out.append((h * m).sum(1) / m.sum(1))
    return torch.nn.functional.normalize(torch.cat(out), dim=-1)


def retrieval_p1(a: torch.Tensor, b: torch.Tensor) -> float:
    """Rows of ``a`` and ``b`` (normalised) are pairs: share of rows whose nearest row on the other side is its pair,
    both directions averaged."""
    sim = a @ b.T
    gold = torch.arange(len(a))
    return float(((sim.argmax(1) == gold).float().mean() + (sim.argmax(0) == gold).float().mean()) / 2)


def probe(folder: Path, data_dir: Path, corpus_ids: set[int] | None, n: int = 500) -> dict:
    from xlt import zoo
    from xlt.synthetic import cipher
    from xlt.synthetic.vocab import id_pairs

    encoder, tokenizer, _ = zoo.load_encoder(str(folder))
    encoder.eval()
    pairs = [(b, s) for b, s in id_pairs(folder, "en") if corpus_ids is None or b in corpus_ids]
    emb = encoder.get_input_embeddings().weight.detach()
    en_rows = torch.nn.functional.normalize(emb[[b for b, _ in pairs]], dim=-1)
    syn_rows = torch.nn.functional.normalize(emb[[s for _, s in pairs]], dim=-1)
    texts = [line[len("# text = "):] for line in (data_dir / "xsid" / "en.test.conll").read_text().splitlines()
             if line.startswith("# text = ")][:n]
    en, syn = sentence_states(encoder, tokenizer, texts), sentence_states(encoder, tokenizer, [cipher(t) for t in texts])
    return {"model": str(folder), "embedding_pairs": len(pairs), "embedding_p1": round(retrieval_p1(en_rows, syn_rows), 4),
            "sentences": len(texts), "sentence_p1": round(retrieval_p1(en, syn), 4),
            "pair_cosine": round(float((en * syn).sum(1).mean()), 4),
            "other_cosine": round(float((en @ syn.T).mean()), 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--corpus-of", type=Path, help="a pre-training run folder: keep the English sub-tokens its "
                    "corpus files use (default: every pair)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    corpus_ids = None
    if args.corpus_of:
        from tokenizers import Tokenizer

        import yaml
        cfg = yaml.safe_load((args.corpus_of / "config.yaml").read_text())
        tok = Tokenizer.from_file(str(args.models[0] / "tokenizer.json"))
        corpus_ids = set()
        for files in cfg["corpus"]["langs"].values():
            for pattern in files:
                for f in Path(cfg["corpus"]["data_dir"]).glob(pattern):
                    for e in tok.encode_batch(f.read_text(encoding="utf-8").splitlines()[:20000]):
                        corpus_ids.update(e.ids)
    for m in args.models:
        print(json.dumps(probe(m, args.data_dir, corpus_ids)), flush=True)


if __name__ == "__main__":
    main()
