"""Raw text -> words with character offsets, from the tokenizer's own offsets (no whitespace assumption), and the
sub-token encoding of words.  Torch-free: the exported runtime (onnxruntime + tokenizers) uses this module too.

A word is a run of sub-tokens with no gap between them, cut before and after punctuation and around every piece of
a script written without spaces (Chinese, Japanese, Thai, ...), where each sub-token is a word of its own.  So
"Stell einen Wecker für 7 Uhr, bitte!" -> Stell | einen | Wecker | für | 7 | Uhr | , | bitte | ! and "東京の明日の天気"
-> 東京 | の | 明日 | の | 天気 (XLM-R's pieces).  Offsets index the ORIGINAL string: ``text[start:end]`` is the word.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from xlt.errors import DataError

LONE_SPACE_PIECE = "▁"
# scripts written without spaces between words: each sub-token of them is a word
_NO_SPACE_RANGES = ((0x2E80, 0x2FDF), (0x3040, 0x30FF), (0x3100, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
                    (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x2FA1F),  # CJK, kana
                    (0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF))  # Thai, Lao, Myanmar, Khmer


class InputError(DataError):
    """An input text the model cannot take (empty, whitespace only, too long, invalid UTF-8); the message says why."""


def _no_space_script(ch: str) -> bool:
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _NO_SPACE_RANGES)


def _is_punct(piece: str) -> bool:
    return all(unicodedata.category(c).startswith(("P", "S")) for c in piece)


@dataclass
class Words:
    """A text cut into words: ``spans[i] = (start, end)`` character offsets of word i in ``text``."""
    text: str
    spans: list[tuple[int, int]]

    @property
    def words(self) -> list[str]:
        return [self.text[s:e] for s, e in self.spans]

    @classmethod
    def from_words(cls, words: list[str]) -> "Words":
        """Pre-split words (an evaluation set): the text is the words joined by single spaces."""
        spans, pos = [], 0
        for w in words:
            spans.append((pos, pos + len(w)))
            pos += len(w) + 1
        return cls(" ".join(words), spans)


def split_words(text: str, tokenizer) -> Words:
    """``text`` -> its words with offsets, from ``tokenizer`` (a ``tokenizers.Tokenizer``) offsets."""
    enc = tokenizer.encode(text, add_special_tokens=False)
    spans: list[list[int]] = []
    prev_cut_after = True  # the previous piece ends a word (punctuation, a no-space script piece, text start)
    for token, (s, e) in zip(enc.tokens, enc.offsets):
        while s < e and text[s].isspace():  # a Metaspace piece's offsets include the space before it
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s >= e or token == LONE_SPACE_PIECE:
            continue
        if spans and s < spans[-1][1]:  # overlapping offsets (normalisation): part of the previous piece
            spans[-1][1] = max(spans[-1][1], e)
            continue
        piece = text[s:e]
        cut = _is_punct(piece) or _no_space_script(piece[0]) or _no_space_script(piece[-1])
        if not spans or prev_cut_after or cut or s > spans[-1][1]:
            spans.append([s, e])
        else:
            spans[-1][1] = e
        prev_cut_after = cut
    return Words(text, [(s, e) for s, e in spans])


def align_words(tokenizer, words: list[str]) -> tuple[list[int], list[int]]:
    """Encode pre-split ``words``; return (input_ids with specials, label-carrying sub-token index per word).

    Each word's label is read from ONE sub-token, the first piece of the word that is not a lone "▁": XLM-R's
    sentencepiece emits a lone "▁" before a pre-split word whose "▁"-prefixed form is not in the vocabulary
    (typical for CJK: "▁" + "東京"); that piece carries no word content."""
    enc = tokenizer.encode(words, is_pretokenized=True)
    first: dict[int, int] = {}
    for pos, (word, piece) in enumerate(zip(enc.word_ids, enc.tokens)):
        if word is None:
            continue
        if word not in first or (enc.tokens[first[word]] == LONE_SPACE_PIECE and piece != LONE_SPACE_PIECE):
            first[word] = pos
    missing = [i for i in range(len(words)) if i not in first]
    if missing:
        raise DataError(f"word {missing[0] + 1} ({words[missing[0]]!r}) produced no sub-tokens")
    return list(enc.ids), [first[i] for i in range(len(words))]


def word_windows(tokenizer, words: list[str], limit: int) -> list[tuple[int, int]]:
    """(start, end) word ranges, in order, whose encodings (with the special tokens) fit in ``limit`` sub-tokens."""
    specials = len(tokenizer.encode([], is_pretokenized=True).ids)
    sizes = [len(tokenizer.encode([w], is_pretokenized=True).ids) - specials for w in words]
    windows, start, used = [], 0, 0
    for i, size in enumerate(sizes):
        if size + specials > limit:
            raise InputError(f"word {i + 1} ({words[i][:20]!r}) alone is {size} sub-tokens, over the model's limit "
                             f"of {limit}")
        if used + size + specials > limit:
            windows.append((start, i))
            start, used = i, 0
        used += size
    windows.append((start, len(words)))
    return windows
