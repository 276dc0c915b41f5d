"""TALL's rows for a language that shares no sub-word with the other: Lample et al. 2018b's first principle.

Unsupervised MT needs an initial word-level link between the two languages ("initialization", Lample et al. 2018b,
section 2): a joint BPE vocabulary when the languages share pieces (XLM-R's shared vocabulary gives TALL that on
real pairs), cross-lingual embeddings learnt without supervision when they do not.  A synthetic language
(``xlt.synthetic``, English in fresh symbols) shares nothing with English and its rows start random, so neither the
encoder's states nor the decoder's output rows (tied to them) say which synthetic piece renders an English state.
``options.row_init: bridge`` gives those rows the TreLM bridge (``xlt.align.fasttext_bridge``: a fastText space
per language over the run's own training text, mapped one onto the other without a dictionary, each new row the
softmax-weighted mean of the encoder rows of its nearest English pieces -- WECHSEL's recipe).  Where the language is
synthetic the true pairs are known, and the report scores the rows on them (nearest English row = the true one).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import torch


def bridge_language_rows(stage, encoder: torch.nn.Module, lang: str, log=print) -> dict:
    """Replace the input-embedding rows of ``lang``'s pieces in ``encoder`` (trimmed to the run's vocabulary when
    ``stage.trim`` is set) with bridge rows; ``lang`` must be synthetic (its pieces are the ids its base grew).
    Returns a report: the bridge's own (fastText, maps, precision) and ``rows_set``, ``true_row_nearest`` (the
    share of set rows whose nearest English row among the run's is the true partner's)."""
    from xlt.align.fasttext_bridge import bridge_rows
    from xlt.stages.trelm_base import train_text
    from xlt.synthetic import parse
    from xlt.synthetic.vocab import id_pairs
    from xlt.zoo import resolve

    cfg, tokenizer, trim = stage.cfg, stage.tokenizer, stage.trim
    pairs = id_pairs(resolve(cfg.model.name), parse(lang).base)  # the stage checked that lang is synthetic
    rows = encoder.get_input_embeddings().weight
    kept = torch.tensor(trim.kept if trim is not None else range(len(rows)), dtype=torch.long)
    to_run = {int(old): n for n, old in enumerate(kept)}
    full = torch.zeros(tokenizer.get_vocab_size(), rows.shape[1])
    full[kept] = rows.detach().float()  # the rows xlt keeps, at their tokenizer ids (the bridge reads those)
    with tempfile.TemporaryDirectory() as folder:
        files = train_text(cfg, Path(folder))
        english = [f for other, f in files.items() if other != lang]
        matrix, report = bridge_rows(tokenizer, [files[lang]], tokenizer, english, full, cfg.options.bridge,
                                     lambda mapped, english_words: None, log)
    linked = [(to_run[b], to_run[n]) for b, n in pairs if b in to_run and n in to_run]
    targets = torch.tensor([n for _, n in linked], dtype=torch.long)
    with torch.no_grad():
        rows[targets] = matrix[kept[targets]].to(rows.dtype)
    report["rows_set"] = len(linked)
    report["true_row_nearest"] = _true_row_nearest(rows.detach().float(), linked)
    log({"row_init": "bridge", "rows_set": report["rows_set"], "true_row_nearest": report["true_row_nearest"]})
    return report


def _true_row_nearest(rows: torch.Tensor, linked: list[tuple[int, int]], chunk: int = 2048) -> float:
    """Share of (english, synthetic) row pairs whose synthetic row's nearest English row (cosine, among the
    English rows of ``linked``) is its partner's."""
    if not linked:
        return 0.0
    english = torch.nn.functional.normalize(rows[[b for b, _ in linked]], dim=-1)
    synthetic = torch.nn.functional.normalize(rows[[n for _, n in linked]], dim=-1)
    hits = 0
    for start in range(0, len(linked), chunk):
        nearest = (synthetic[start:start + chunk] @ english.T).argmax(1)
        hits += int((nearest == torch.arange(start, start + len(nearest))).sum())
    return round(hits / len(linked), 4)
