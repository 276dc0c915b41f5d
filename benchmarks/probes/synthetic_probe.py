"""Question: how alike are an encoder's English and synthetic representations (issue 49)?  A zero-shot transfer to the
synthetic image of English needs the encoder to treat a synthetic sentence like its English original.

Two measures, on a model grown with ``syn-en`` (the base grown model, or one pre-trained on it):
- ``embedding_p1``: for each English sub-token the pre-training corpus uses and its true synthetic image, is the
  image's input embedding nearer (cosine) to its own English row than to every other such English row?
- ``sentence_p1``: mean-pooled last-layer states of xSID English test utterances and of their images in ``--lang``
  (``syn-en``, or ``syn-en-perm``: words reversed): is each image's nearest English utterance its original (both
  directions averaged)?  And the mean cosine of true pairs.

    python benchmarks/probes/synthetic_probe.py --data-dir ../shared/data [--lang syn-en-perm] MODEL_FOLDER ...
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/


def probe(folder: Path, data_dir: Path, corpus_ids: set[int] | None, n: int = 500, lang: str = "syn-en") -> dict:
    from probes.tall_probe import pooled_states, similarity  # the TALL probe's pooling and retrieval

    from xlt import zoo
    from xlt.synthetic import parse, to_synthetic
    from xlt.synthetic.vocab import id_pairs

    encoder, tokenizer, _ = zoo.load_encoder(str(folder))
    encoder.eval()
    pairs = [(b, s) for b, s in id_pairs(folder, "en") if corpus_ids is None or b in corpus_ids]
    emb = encoder.get_input_embeddings().weight.detach()
    rows = similarity(emb[[b for b, _ in pairs]], emb[[s for _, s in pairs]])
    texts = [line[len("# text = "):] for line in (data_dir / "xsid" / "en.test.conll").read_text().splitlines()
             if line.startswith("# text = ")][:n]
    en = pooled_states(encoder, None, tokenizer, texts, 0)[0]
    synthetic = parse(lang)
    images = pooled_states(encoder, None, tokenizer, [to_synthetic(t, synthetic) for t in texts], 0)[0]
    sentences = similarity(en, images)
    return {"model": str(folder), "lang": lang, "embedding_pairs": len(pairs), "embedding_p1": rows["retrieval_top1"],
            "sentences": len(texts), "sentence_p1": sentences["retrieval_top1"],
            "pair_cosine": sentences["pair_cosine"], "other_cosine": sentences["random_cosine"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--corpus-of", type=Path, help="a pre-training run folder: keep the English sub-tokens its "
                    "corpus files use (default: every pair)")
    ap.add_argument("--lang", default="syn-en", choices=["syn-en", "syn-en-perm"],
                    help="the synthetic images the sentence measure reads (default: same order)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    corpus_ids = None
    if args.corpus_of:
        from tokenizers import Tokenizer

        import yaml

        from xlt.config import CorpusConfig, from_dict
        from xlt.data.corpora import corpus_files
        from xlt.data.parallel import parallel_files

        corpus = from_dict(CorpusConfig, yaml.safe_load((args.corpus_of / "config.yaml").read_text())["corpus"])
        # the stage's own file lists: plain / per-language files (a synthetic language's are its English originals)
        # and the English side of every parallel entry
        files = [f for f, _ in corpus_files(corpus)] if corpus.files or corpus.langs else []
        files += [english for _, _, english in parallel_files(corpus)]
        tok = Tokenizer.from_file(str(args.models[0] / "tokenizer.json"))
        corpus_ids = set()
        for f in dict.fromkeys(files):
            for e in tok.encode_batch(f.read_text(encoding="utf-8").splitlines()[:20000]):
                corpus_ids.update(e.ids)
    for m in args.models:
        print(json.dumps(probe(m, args.data_dir, corpus_ids, lang=args.lang)), flush=True)


if __name__ == "__main__":
    main()
