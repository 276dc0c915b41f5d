"""Question: how language-neutral are a TALL model's states?  A probe for the TALL benchmark (``probe-en-ja``, ``probe-en-de``).

BART-style fine-tuning puts the task heads on the DECODER's states, so cross-lingual transfer through them needs
those states to look alike for an utterance and its translation, as the encoder's do.  On the xSID test set of the
pair's target language (English originals ``# text-en`` and their human translations, the words the NLU model reads),
each model's states are mean-pooled per sentence (the decoder's without its last, ``</s>``, state, as the intent head
pools) and compared:

- ``retrieval_top1``: share of sentences whose translation is the nearest (cosine) of all candidates, averaged over
  both directions (a Tatoeba-style similarity search, within the 250-500 test utterances);
- ``pair_cosine`` / ``random_cosine``: mean cosine of true pairs / of all other pairs.

Models: the shipped encoder (reference), the TALL pre-trained encoder + decoder, and the TALL NLU run of seed 1
(after BART-style fine-tuning on English).  Each decoder reads a sentence after its own language's token.
"""
from __future__ import annotations

from pathlib import Path

import torch


def xsid_pairs(data_dir: str, lang: str, as_tokenized: bool = False) -> tuple[list[str], list[str]]:
    """(English originals, human translations) of the xSID test set of ``lang``, from its comment lines.  xSID's
    Japanese text has spaces between words; Japanese is written without them (and BLEU on it is by character), so
    they are removed unless ``as_tokenized`` (the words the NLU model reads)."""
    from xlt.stages.translation_eval import CHARACTER_BLEU

    en, tgt = [], []
    for block in (Path(data_dir) / "xsid" / f"{lang}.test.conll").read_text(encoding="utf-8").split("\n\n"):
        got = dict(line[2:].split(" = ", 1) for line in block.splitlines() if line.startswith("# ") and " = " in line)
        if got.get("text") and got.get("text-en"):
            en.append(got["text-en"].strip())
            joined = lang in CHARACTER_BLEU and not as_tokenized
            tgt.append("".join(got["text"].split()) if joined else got["text"].strip())
    return en, tgt


@torch.no_grad()
def pooled_states(encoder, decoder, tokenizer, texts: list[str], lang: int, batch: int = 32
                  ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(N, H) mean-pooled encoder states and (N, H) decoder states (None without a decoder)."""
    from xlt.core.batching import pad_ids
    from xlt.core.vocab import token_id
    from xlt.models import pool
    from xlt.models.encoder_decoder import decoder_states

    pad = token_id(tokenizer, "<pad>")
    enc, dec = [], []
    for i in range(0, len(texts), batch):
        encoded = [e.ids[:128] for e in tokenizer.encode_batch(texts[i:i + batch])]  # <s> … </s> (post-processor)
        ids, mask = pad_ids(encoded, pad)
        if decoder is None:
            enc.append(pool(encoder(input_ids=ids, attention_mask=mask).last_hidden_state, mask, "mean"))
            continue
        langs = torch.full((ids.shape[0],), lang, dtype=torch.long)
        memory, hidden, pool_mask = decoder_states(encoder, decoder, ids, mask, langs)  # pooled as the intent head
        enc.append(pool(memory, mask, "mean"))
        dec.append(pool(hidden, pool_mask, "mean"))
    return torch.cat(enc), (torch.cat(dec) if dec else None)


def similarity(a: torch.Tensor, b: torch.Tensor) -> dict:
    """a, b (N, H), row i of one the translation of row i of the other."""
    a, b = torch.nn.functional.normalize(a, dim=-1), torch.nn.functional.normalize(b, dim=-1)
    sim = a @ b.T  # (N, N)
    gold = torch.arange(sim.shape[0])
    top1 = ((sim.argmax(1) == gold).float().mean() + (sim.argmax(0) == gold).float().mean()) / 2
    off = ~torch.eye(sim.shape[0], dtype=torch.bool)
    return {"retrieval_top1": round(float(top1), 4), "pair_cosine": round(float(sim.diag().mean()), 4),
            "random_cosine": round(float(sim[off].mean()), 4)}


def probe(pair: str, data_dir: str, stage: Path, nlu_run: Path | None) -> list[dict]:

    from xlt import zoo
    from xlt.models.decoder import TiedDecoder
    from xlt.trained import load_trained

    torch.set_num_threads(2)
    lang = pair.split("-")[1]
    en, tgt = xsid_pairs(data_dir, lang, as_tokenized=True)
    models = []
    encoder, tokenizer, _ = zoo.load_encoder("multilingual-e5-small")
    models.append(("shipped encoder", encoder.eval(), None, tokenizer, ["en", lang]))
    encoder, tokenizer, folder = zoo.load_encoder(str(stage / "model"))
    decoder = TiedDecoder.load(folder, encoder.config.hidden_size, encoder.config.layer_norm_eps)
    models.append(("tall pre-trained", encoder.eval(), decoder.eval(), tokenizer, decoder.settings.languages))
    if nlu_run is not None and (nlu_run / "best" / "model.safetensors").exists():
        run = load_trained(nlu_run)
        models.append(("tall nlu seed 1", run.model.encoder, run.model.decoder, run.tokenizer,
                       run.model.decoder.settings.languages))
    rows = []
    for name, enc, dec, tok, languages in models:
        e_en, d_en = pooled_states(enc, dec, tok, en, languages.index("en"))
        e_x, d_x = pooled_states(enc, dec, tok, tgt, languages.index(lang))
        for states, (a, b) in (("encoder", (e_en, e_x)), ("decoder", (d_en, d_x))):
            if a is not None:
                rows.append({"method": "probe", "pair": pair, "lang": lang, "seed": 1, "model": name,
                             "states": states, "sentences": len(en), **similarity(a, b)})
                print(f"{name:18} {states:8} " + "  ".join(f"{k} {v}" for k, v in rows[-1].items()
                                                          if k.endswith(("top1", "cosine"))))
    return rows


def run(data_dir: str, runs: Path, pair: str) -> None:
    """The probe on the pair's pre-training (runs/tall-PAIR) and its seed-1 NLU run -> runs/tall-PAIR/probe.json."""
    import json

    stage = runs / f"tall-{pair}"
    if not (stage / "results.json").exists():
        raise SystemExit(f"{stage}: pre-train first (row tall-{pair})")
    rows = probe(pair, data_dir, stage, runs / f"xsid-tall-{pair}-none-seed1")
    (stage / "probe.json").write_text(json.dumps(rows, indent=1) + "\n")
