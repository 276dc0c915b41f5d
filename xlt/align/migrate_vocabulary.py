"""TreLM step 1: a new vocabulary for the target language and its embedding matrix in the English model's input
space (Li et al.; the paper's best setting "fastText pre-trained + adversarial alignment").

1. a WordPiece vocabulary trained on source + target text (``xlt.align.subword_vectors.train_wordpiece``);
2. fastText vectors of its entries trained on that text split by it;
3. an orthogonal map from the fastText space into the English model's input-embedding space, learnt without a
   dictionary: adversarial training, then Procrustes refinement (``xlt.align.embedding_map``, MUSE).  Both spaces
   are centred and unit-normalised for the alignment (MUSE's "renorm,center,renorm"); the mapped vectors are then
   scaled to the mean norm of the English embeddings, so the new matrix has the scale the model was trained with;
4. word-translation precision@1 (CSLS) on a MUSE test dictionary after each step: target words' fastText vectors,
   mapped, against the English words of the full dictionary, each the mean of the English model's sub-token
   embeddings.  This measures the alignment only; the dictionary is never used to fit it.  P@1 is also given on
   the test pairs whose two words differ (a pair like hotel/hotel is easy for any map that keeps shared strings),
   and ``initialised_rows``: the same test on the finished matrix (target words as the mean of their new rows).

``settings.alignment`` picks the map that initialises the embeddings: ``adversarial`` (the paper's; adversarial +
Procrustes refinement), ``identical_strings`` (MUSE's ``identical_char`` seed: Procrustes on the vocabulary entries
spelled the same in both vocabularies — the new vocabulary is trained on English text too, so its English pieces are
anchors — then the same refinement) or ``similarity_seed`` (VecMap's similarity-distribution seed,
``xlt.align.vecmap``: no discriminator, no shared strings needed; then the same refinement).  All are computed and
reported (``adversarial.epochs=0`` skips the slowest); on the real en-es data the adversarial map stayed at chance
(P@1 0.0003, benchmarks/results/trelm.json).  ``settings.map_into=english_fasttext`` replaces step 3: the target
fastText space is aligned to an English fastText space and the rows come from the nearest English entries
(``xlt.align.fasttext_bridge``). With ``copy_shared_rows`` (default) the entries spelled as in the English
vocabulary take the English model's own rows; the map gives the rest.

``migrate_vocabulary(...)`` returns (tokenizer, embedding matrix (V_new, H), report).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal
from pathlib import Path

import torch

from xlt.config import positive
from xlt.align.embedding_map import AdversarialSettings, Normaliser, heldout_anchor_precision, precision_at_1
from xlt.align.candidate_maps import CHOSEN, candidate_maps
from xlt.errors import DataError



@dataclass
class VocabularySettings:
    vocab_size: int = positive(30000)  # entries of the new WordPiece vocabulary over both languages' text
    max_lines: int = 0  # per file, 0 = all
    fasttext_epochs: int = positive(5)  # training epochs of each fastText model
    refinement_iterations: int = 5  # Procrustes refinement rounds after each seed map
    # the map that initialises (all are computed and reported; adversarial.epochs=0 skips the slow adversarial one)
    alignment: Literal["adversarial", "identical_strings", "similarity_seed"] = "identical_strings"
    # where the target fastText space is mapped: the English model's input embeddings (the paper), or the English
    # fastText space, rows then taken from the nearest English entries (xlt.align.fasttext_bridge, WECHSEL)
    map_into: Literal["english_model", "english_fasttext"] = "english_model"
    bridge_dim: int = positive(300)  # fastText dimension of the bridge spaces (MUSE's 300)
    whiten: bool = True  # whiten both bridge spaces before aligning them (VecMap; xlt.align.vecmap.Whitener)
    neighbours: int = positive(10)  # WECHSEL's k
    temperature: float = positive(0.1)  # WECHSEL's softmax temperature over cosine similarities
    # entries spelled as in the English vocabulary keep the English model's own row (exact, not mapped)
    copy_shared_rows: bool = True
    adversarial: AdversarialSettings = field(default_factory=AdversarialSettings)
    seed_words: int = positive(4000)  # most frequent words VecMap's similarity seed describes
    seed: int = 1  # seeds fastText, the maps and their sampling


def read_dictionary(path: Path) -> list[tuple[str, str]]:
    """MUSE dictionary lines ``source target`` (whitespace-separated)."""
    if not path.exists():
        raise DataError(f"{path}: dictionary not found")
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise DataError(f"{path}:{n}: expected 'source target', got {line!r}")
        pairs.append((parts[0], parts[1]))
    return pairs


def dictionary_precision(mapped_words, english_words, test: list[tuple[str, str]], candidates: list[str]) -> float:
    """P@1 (CSLS) of target -> English word translation over ``candidates`` + the test's English words;
    ``mapped_words(words)`` / ``english_words(words)``: normalised vectors in the English space."""
    cand = sorted(set(candidates) | {e for _, e in test})
    index = {w: i for i, w in enumerate(cand)}
    sources = sorted({s for s, _ in test})
    gold = {i: {index[e] for s, e in test if s == w} for i, w in enumerate(sources)}
    return precision_at_1(mapped_words(sources), english_words(cand), gold)


def migrate_vocabulary(source_files: list[Path], target_files: list[Path], english_tokenizer,
                       english_embeddings: torch.Tensor, test_dictionary: list[tuple[str, str]],
                       candidates: list[str], settings: VocabularySettings, english_frequency: torch.Tensor,
                       log=print, true_translation=None) -> tuple[object, torch.Tensor, dict]:
    """See the module docstring.  ``english_frequency`` (V_en,) orders the English rows for the discriminator
    (most frequent first, as MUSE samples its most frequent words); ``true_translation`` (synthetic targets: piece ->
    English piece) adds the bridge's isomorphism ceiling to the report."""
    from xlt.align.subword_vectors import train_wordpiece, word_vectors

    s = settings
    tokenizer = train_wordpiece(source_files + target_files, s.vocab_size, s.max_lines)
    norm_en = Normaliser(english_embeddings)
    different = [(t, e) for t, e in test_dictionary if t != e]

    def word_precision(mapped_words, english_words) -> dict:
        """P@1 on all test pairs and on those whose two words differ; each argument: words -> unit vectors."""
        def one(test):
            return dictionary_precision(mapped_words, english_words, test, candidates) if test else None
        return {"all": one(test_dictionary), "different_strings": one(different)}

    def english_words(words):
        return norm_en(word_vectors(words, english_tokenizer, english_embeddings))

    if s.map_into == "english_fasttext":
        from xlt.align.fasttext_bridge import bridge_rows

        matrix, bridge = bridge_rows(tokenizer, target_files, english_tokenizer, source_files, english_embeddings,
                                     s, word_precision, log, true_translation)
        report: dict = {"settings": asdict(s), "vocabulary": tokenizer.get_vocab_size(), "bridge": bridge,
                        "precision_at_1": {f"fasttext_{k}": v for k, v in bridge["precision_at_1"].items()}}
        order = english_frequency.argsort(descending=True)
        anchors = identical_string_pairs(tokenizer, english_tokenizer, order)
    else:
        matrix, report, anchors, order = _direct_rows(tokenizer, target_files, source_files, english_tokenizer,
                                                      english_embeddings, s, english_frequency, word_precision,
                                                      english_words, log)
    report["initialised_by"], report["map_into"] = s.alignment, s.map_into
    bridged = "fasttext_" if s.map_into == "english_fasttext" else ""
    report["initialising_step"] = f"{bridged}{CHOSEN[s.alignment]}"
    if s.copy_shared_rows and len(anchors):
        matrix[anchors[:, 0]] = english_embeddings[order[anchors[:, 1]]]
    report["rows_copied_from_english"] = len(anchors) if s.copy_shared_rows else 0
    # what the model starts from: each target word (mean of its new rows) against the English words (mean of the
    # English model's rows), in the English input space, whichever path built the rows
    report["precision_at_1"]["initialised_rows"] = word_precision(
        lambda words: norm_en(word_vectors(words, tokenizer, matrix)), english_words)
    log({"precision_at_1": report["precision_at_1"]})
    return tokenizer, matrix, report


def _direct_rows(tokenizer, target_files, source_files, english_tokenizer, english_embeddings, s,
                 english_frequency, word_precision, english_words, log):
    """The paper's path: joint fastText vectors of the new vocabulary mapped straight into the English model's
    input space (adversarial and identical-strings maps, both reported); rows scaled to the English mean norm."""
    from xlt.align.subword_vectors import fasttext_vectors, token_counts, word_vectors

    vectors, ft_report = fasttext_vectors(tokenizer, target_files + source_files, english_embeddings.shape[1],
                                          s.fasttext_epochs, s.seed, s.max_lines)
    # both sides most frequent first (MUSE's discriminator and refinement, VecMap's seed read the head)
    order = english_frequency.argsort(descending=True)
    new_order = token_counts(tokenizer, target_files + source_files, s.max_lines).argsort(descending=True, stable=True)
    position = torch.empty_like(new_order)
    position[new_order] = torch.arange(len(new_order))
    norm_en, norm_new = Normaliser(english_embeddings), Normaliser(vectors)
    target_space, source_space = norm_en(english_embeddings[order]), norm_new(vectors)[new_order]
    report: dict = {"settings": asdict(s), "vocabulary": tokenizer.get_vocab_size(), "fasttext": ft_report}

    def precision(W):
        return word_precision(lambda words: norm_new(word_vectors(words, tokenizer, vectors)) @ W.T, english_words)

    anchors = identical_string_pairs(tokenizer, english_tokenizer, order)  # (new id, English row)
    report["identical_string_anchors"] = len(anchors)
    ranked = torch.stack([position[anchors[:, 0]], anchors[:, 1]], dim=1)  # (source row, English row)
    # can any linear map relate the fastText space to the English input embeddings? (held-out anchors)
    report["heldout_anchors"] = heldout_anchor_precision(source_space, target_space, ranked)
    maps, maps_report = candidate_maps(source_space, target_space, ranked, s, log)
    report.update(maps_report)
    report["precision_at_1"] = {"identity": precision(torch.eye(vectors.shape[1])),
                                **{name: precision(W) for name, W in maps.items()}}
    W = maps[CHOSEN[s.alignment]]
    matrix = torch.nn.functional.normalize(norm_new(vectors) @ W.T, dim=1) * english_embeddings.norm(dim=1).mean()
    return matrix, report, anchors, order


def identical_string_pairs(tokenizer, english_tokenizer, english_order: torch.Tensor) -> torch.Tensor:
    """(n, 2) (new-vocabulary id, row of the English space as ordered by ``english_order``) for every non-special
    entry spelled the same in both vocabularies (MUSE's identical_char seed dictionary)."""
    from xlt.align.subword_vectors import SPECIALS

    row_of = torch.empty_like(english_order)
    row_of[english_order] = torch.arange(len(english_order))
    english = english_tokenizer.get_vocab()
    pairs = [(i, int(row_of[english[t]])) for t, i in tokenizer.get_vocab().items()
             if t in english and t not in SPECIALS and english[t] < len(english_order)]
    return torch.tensor(sorted(pairs), dtype=torch.long).view(-1, 2)
