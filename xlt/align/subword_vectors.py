"""TreLM's new vocabulary and its non-contextual vectors (the paper's best setting: "fastText pre-trained +
adversarial alignment"; github agcbi2017/TreLM scripts/train_wordpiece_tokenizer.py):

- ``train_wordpiece``: a BERT WordPiece vocabulary trained on source + target text (``tokenizers``), with BERT's
  special tokens and post-processor, lower-cased like the English MiniLM it will serve (accents kept: Spanish needs
  them);
- ``fasttext_vectors``: fastText skip-gram vectors (gensim; Bojanowski et al. 2017) trained on the text as the new
  tokenizer splits it, one row per vocabulary entry (a piece the text never shows still gets a vector from its
  character n-grams);
- ``word_vectors``: a word's vector as the mean of its sub-token vectors under a tokenizer and an embedding matrix
  (word-translation precision@1 on the MUSE dictionaries is measured on words).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable

import torch

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _lines(files: Iterable[Path], max_lines: int = 0) -> Iterable[str]:
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as handle:
            for n, line in enumerate(handle):
                if max_lines and n >= max_lines:
                    break
                if line.strip():
                    yield line.strip()


def _alphabet(tokenizer, files: list[Path], max_lines: int, limit: int) -> tuple[list[str], list[str]]:
    """(the ``limit`` most frequent characters of the normalised, pre-tokenized text (ties by character), those of
    them that continue a word), each in a fixed order."""
    counts: Counter = Counter()
    inner: set[str] = set()
    for line in _lines(files, max_lines):
        for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(tokenizer.normalizer.normalize_str(line)):
            counts.update(word)
            inner.update(word[1:])
    alphabet = sorted(sorted(counts, key=lambda c: (-counts[c], c))[:limit])
    return alphabet, [c for c in alphabet if c in inner]


def train_wordpiece(files: list[Path], vocab_size: int, max_lines: int = 0, min_frequency: int = 2,
                    limit_alphabet: int = 1000):
    """A ``tokenizers.Tokenizer`` (BERT WordPiece, ``[CLS] … [SEP]``) trained on the lines of ``files``; the same
    text gives the same vocabulary, ids included.

    ``tokenizers``' trainer alone does not: it creates the ``##c`` continuation pieces in hash-map order, their ids
    break ties between merges of equal count, so two runs differ (huggingface/tokenizers#1794; 20 trainings on 3,000
    lines gave 20 vocabularies).  Here the alphabet is fixed up front and every ``##c`` is created before training,
    in that order (passed as special tokens so the trainer finds them, then made ordinary vocabulary again)."""
    from tokenizers import Tokenizer
    from tokenizers.implementations import BertWordPieceTokenizer
    from tokenizers.models import WordPiece
    from tokenizers.processors import BertProcessing

    wp = BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=True)
    alphabet, continuing = _alphabet(wp._tokenizer, files, max_lines, limit_alphabet)
    wp.train_from_iterator(_lines(files, max_lines), vocab_size=vocab_size, min_frequency=min_frequency,
                           special_tokens=SPECIALS + ["##" + c for c in continuing], limit_alphabet=len(alphabet),
                           initial_alphabet=alphabet, wordpieces_prefix="##", show_progress=False)
    trained = wp._tokenizer
    tokenizer = Tokenizer(WordPiece(trained.get_vocab(), unk_token="[UNK]", continuing_subword_prefix="##"))
    tokenizer.normalizer, tokenizer.pre_tokenizer = trained.normalizer, trained.pre_tokenizer
    tokenizer.decoder = trained.decoder
    tokenizer.add_special_tokens(SPECIALS)
    tokenizer.post_processor = BertProcessing(("[SEP]", tokenizer.token_to_id("[SEP]")),
                                              ("[CLS]", tokenizer.token_to_id("[CLS]")))
    return tokenizer


def fasttext_vectors(tokenizer, files: list[Path], dim: int, epochs: int = 5, seed: int = 1, max_lines: int = 0
                     ) -> tuple[torch.Tensor, dict]:
    """(V, dim) fastText vectors of every vocabulary entry of ``tokenizer`` (specials: small random vectors) and a
    report (sentences, tokens, coverage: the share of entries seen in the text)."""
    from gensim.models import FastText

    sentences = [[t for t in enc.tokens if t not in SPECIALS]
                 for enc in tokenizer.encode_batch(list(_lines(files, max_lines)))]
    sentences = [s for s in sentences if s]
    model = FastText(vector_size=dim, window=5, min_count=1, sg=1, epochs=epochs, seed=seed, workers=1,
                     min_n=2, max_n=5)
    model.build_vocab(corpus_iterable=sentences)
    model.train(corpus_iterable=sentences, total_examples=len(sentences), epochs=epochs)
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    g = torch.Generator().manual_seed(seed)
    out = torch.randn(len(vocab), dim, generator=g) * 0.02
    seen = 0
    for token, index in vocab:
        if token in SPECIALS:
            continue
        out[index] = torch.from_numpy(model.wv[token].copy())
        seen += token in model.wv.key_to_index
    report = {"sentences": len(sentences), "tokens": sum(map(len, sentences)), "vocab": len(vocab),
              "entries_seen_in_text": seen, "dim": dim, "epochs": epochs}
    return out, report


def token_counts(tokenizer, files: list[Path], max_lines: int = 0) -> torch.Tensor:
    """(V,) how often each vocabulary entry occurs in ``files`` as ``tokenizer`` splits them."""
    counts = torch.zeros(tokenizer.get_vocab_size())
    for enc in tokenizer.encode_batch(list(_lines(files, max_lines))):
        counts += torch.bincount(torch.tensor(enc.ids, dtype=torch.long), minlength=len(counts))[:len(counts)]
    return counts


def word_vectors(words: list[str], tokenizer, embeddings: torch.Tensor) -> torch.Tensor:
    """(len(words), H): each word's sub-token vectors averaged (special tokens left out)."""
    out = []
    specials = {tokenizer.token_to_id(t) for t in SPECIALS + ["<s>", "</s>", "<pad>"]} - {None}
    for enc in tokenizer.encode_batch(words):
        ids = [i for i in enc.ids if i not in specials] or [enc.ids[0]]
        out.append(embeddings[torch.tensor(ids)].mean(0))
    return torch.stack(out)
