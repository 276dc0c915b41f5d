"""TreLM step 1 through the English fastText space (``vocabulary.map_into: english_fasttext``).

The paper's map (github agcbi2017/TreLM: MUSE from the joint fastText vectors to BERT's raw embedding matrix) goes
straight from the target language's fastText vectors into the English model's input-embedding matrix.  On our
en-es data that map finds nothing (benchmarks/results/trelm.json: P@1 0-1.5 %) and the two spaces are far from
isomorphic: maps fitted on half the identical-string anchors retrieve 7.6 % (orthogonal) / 14.1 % (linear) of the
other half — one is a distributional skip-gram space, the other a contextual model's lookup table.  Unsupervised
alignment is made for two DISTRIBUTIONAL spaces (MUSE's and VecMap's setting), so this path bridges:

1. two fastText models of the new vocabulary's entries (the new tokenizer splits both texts alike): one on the
   TARGET text, one on the ENGLISH text;
2. an orthogonal map target -> English fastText space (``alignment``: VecMap self-learning, MUSE's adversarial
   game + Procrustes refinement, or the identical-strings seed; ``xlt.align.vecmap``, ``xlt.align.embedding_map``)
   — the English model is not involved yet;
3. each new entry's row = the English model's rows of its ``neighbours`` nearest English-side entries (among those
   spelled as an English-model entry, i.e. that have a row) in the aligned space, weighted by softmax(cosine /
   ``temperature``) (WECHSEL: Minixhofer et al., NAACL 2022, "WECHSEL: Effective initialization of subword
   embeddings for cross-lingual transfer of monolingual language models"; 10 neighbours, temperature 0.1 as there).
   Rows are convex combinations of real rows, so they have the scale and the geometry the English model was trained
   with; no map into its input space is learnt.

``bridge_rows(...)`` returns the (V_new, H) matrix and a report with word-translation P@1 in the aligned fastText
space for each map.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from xlt.align.embedding_map import Normaliser


def seen_by_frequency(counts: torch.Tensor, exclude: set[int]) -> torch.Tensor:
    """Ids of the entries the text shows, most frequent first (MUSE aligns the most frequent words)."""
    order = counts.argsort(descending=True, stable=True)
    return torch.tensor([int(i) for i in order if counts[i] > 0 and int(i) not in exclude], dtype=torch.long)


def space_preparation(vectors: torch.Tensor, seen: torch.Tensor, whiten: bool):
    """x -> x in the space the alignment works in: unit-centre-unit (MUSE), then, with ``whiten``, each space's
    covariance to the identity (a linear relation between two spaces becomes an orthogonal one); both fitted on the
    entries the text shows (``seen``)."""
    from xlt.align.vecmap import Whitener

    normalise = Normaliser(vectors[seen])
    if not whiten:
        return normalise
    white = Whitener(normalise(vectors[seen]))
    return lambda x: white(normalise(x))


def true_pairs(tokenizer, target_seen: torch.Tensor, english_seen: torch.Tensor,
               translate: Callable[[str], str]) -> torch.Tensor:
    """(n, 2) (position in ``target_seen``, position in ``english_seen``) of every target entry whose true
    translation (``translate``: piece -> piece) the English text shows."""
    position, vocab = {int(i): n for n, i in enumerate(english_seen)}, tokenizer.get_vocab()
    pairs = [(n, position.get(vocab.get(translate(tokenizer.id_to_token(int(i))), -1)))
             for n, i in enumerate(target_seen)]
    return torch.tensor([p for p in pairs if p[1] is not None], dtype=torch.long).view(-1, 2)


def nearest_rows(queries: torch.Tensor, keys: torch.Tensor, key_rows: torch.Tensor, neighbours: int,
                 temperature: float, chunk: int = 2048) -> torch.Tensor:
    """(Q, H): for each unit query (Q, d), the softmax(cosine / temperature)-weighted mean of ``key_rows`` (K, H)
    over its ``neighbours`` nearest unit ``keys`` (K, d)."""
    out = []
    for start in range(0, len(queries), chunk):
        sims, idx = (queries[start:start + chunk] @ keys.T).topk(min(neighbours, len(keys)), dim=1)
        weights = torch.softmax(sims / temperature, dim=1)
        out.append((weights.unsqueeze(-1) * key_rows[idx]).sum(1))
    return torch.cat(out)


def bridge_rows(tokenizer, target_files: list[Path], english_tokenizer, source_files: list[Path],
                english_embeddings: torch.Tensor, settings, word_precision, log=print,
                true_translation: Callable[[str], str] | None = None) -> tuple[torch.Tensor, dict]:
    """See the module docstring.  ``word_precision(mapped_words, english_words)`` scores a map on the test
    dictionary (each a function: words -> unit vectors in one space).  ``true_translation`` (a synthetic language
    only: piece -> its English piece) adds the isomorphism ceiling: P@1 of an orthogonal map fitted on half of the
    true piece pairs, on the other half.  Returns (matrix (V_new, H), report)."""
    from xlt.align.embedding_map import heldout_anchor_precision
    from xlt.align.candidate_maps import CHOSEN, candidate_maps
    from xlt.align.subword_vectors import SPECIALS, fasttext_vectors, token_counts, word_vectors

    s = settings
    # both spaces from the NEW tokenizer (trained on both texts), so the two sides are split alike; the English
    # side's entries spelled as an English-model entry carry that model's row
    target_vectors, ft_target = fasttext_vectors(tokenizer, target_files, s.bridge_dim, s.fasttext_epochs, s.seed,
                                                 s.max_lines)
    english_vectors, ft_english = fasttext_vectors(tokenizer, source_files, s.bridge_dim, s.fasttext_epochs, s.seed,
                                                   s.max_lines)
    specials = {tokenizer.token_to_id(t) for t in SPECIALS} - {None}
    target_seen = seen_by_frequency(token_counts(tokenizer, target_files, s.max_lines), specials)
    english_seen = seen_by_frequency(token_counts(tokenizer, source_files, s.max_lines), specials)
    model_vocab = english_tokenizer.get_vocab()
    model_row = torch.tensor([model_vocab.get(tokenizer.id_to_token(int(i)), -1) for i in english_seen])
    has_row = (model_row >= 0) & (model_row < len(english_embeddings))
    norm_t = space_preparation(target_vectors, target_seen, s.whiten)
    norm_e = space_preparation(english_vectors, english_seen, s.whiten)
    source_space, target_space = norm_t(target_vectors[target_seen]), norm_e(english_vectors[english_seen])
    report: dict = {"fasttext_target": ft_target, "fasttext_english": ft_english, "dim": s.bridge_dim,
                    "target_entries_seen": len(target_seen), "english_entries_seen": len(english_seen),
                    "english_entries_with_a_model_row": int(has_row.sum())}

    def precision(W: torch.Tensor) -> dict:
        return word_precision(lambda words: norm_t(word_vectors(words, tokenizer, target_vectors)) @ W.T,
                              lambda words: norm_e(word_vectors(words, tokenizer, english_vectors)))

    english_position = {int(i): n for n, i in enumerate(english_seen)}
    anchors = torch.tensor([(n, english_position[int(i)]) for n, i in enumerate(target_seen)
                            if int(i) in english_position], dtype=torch.long).view(-1, 2)  # the same entry
    report["identical_string_anchors"] = len(anchors)
    if true_translation is not None:
        true = true_pairs(tokenizer, target_seen, english_seen, true_translation)
        report["isomorphism_ceiling"] = heldout_anchor_precision(source_space, target_space, true)
        log({"isomorphism_ceiling": report["isomorphism_ceiling"]})
    maps, maps_report = candidate_maps(source_space, target_space, anchors, s, log)
    report.update(maps_report)
    report["precision_at_1"] = {name: precision(W) for name, W in maps.items()}
    log({"bridge_precision_at_1": report["precision_at_1"]})
    W = maps[CHOSEN[s.alignment]]
    # every entry (a piece the target text never shows still has a fastText vector from its character n-grams)
    matrix = nearest_rows(norm_t(target_vectors) @ W.T, target_space[has_row],
                          english_embeddings[model_row[has_row]], s.neighbours, s.temperature)
    for t in SPECIALS:  # [CLS], [SEP], [MASK]...: the English model's own rows
        if tokenizer.token_to_id(t) is not None and english_tokenizer.token_to_id(t) is not None:
            matrix[tokenizer.token_to_id(t)] = english_embeddings[english_tokenizer.token_to_id(t)]
    return matrix, report
