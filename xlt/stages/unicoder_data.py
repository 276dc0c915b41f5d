"""The training examples of Unicoder's five tasks (Huang et al. 2019), built from id sequences that carry their
special tokens (``<s> … </s>``):

- ``pair_input(a, b, eos)``: ``<s> A </s></s> B </s>`` (the encoder's own sentence-pair layout, as fine-tuning on
  sentence pairs reads it) for TLM and paraphrase classification; ``pair_positions(a, b)``: TLM's position ids,
  each side counted from 0 (XLM);
- ``code_switched_documents(...)``: consecutive translation pairs of one document (file), every second sentence in
  the other language, packed up to ``max_length`` sub-tokens (a document is cut at a sentence boundary, never
  inside a sentence), for cross-lingual MLM on code-switched text;
- ``Interleaved``: the batches of several objectives in turn, each over its own examples, with the objective coded
  in the indices (``index = objective * OFFSET + example``) so that a batch says which task it is for whatever the
  step count (the loop resumes mid-epoch).
"""
from __future__ import annotations

from dataclasses import dataclass

from xlt.core.batching import length_bucketed_batches

OFFSET = 1_000_000_000


def pair_input(a: list[int], b: list[int], eos: int) -> list[int]:
    """``<s> a </s>`` + ``<s> b </s>`` -> ``<s> a </s></s> b </s>``."""
    return a + [eos] + b[1:]


def pair_positions(a: list[int], b: list[int]) -> list[int]:
    """Position ids (from 0) of ``pair_input(a, b, eos)`` with each side counted from 0: XLM's TLM resets the
    positions of the second sentence "to facilitate the alignment" (Lample & Conneau 2019, section 3.3; their
    ``concat_batches(..., reset_positions=True)``), so a word and its translation at the same place share a position
    embedding.  The second side's leading ``</s>`` takes ``<s>``'s position 0."""
    return list(range(len(a))) + list(range(len(b)))


@dataclass
class Document:
    ids: list[int]  # <s> s1 </s> s2 </s> ... (one <s>, each sentence closed by </s>)
    langs: list[str]  # the language of each sentence, in order
    first_pair: int  # index of its first pair


def code_switched_documents(english: list[list[int]], other: list[list[int]], lang: list[str], file: list[int],
                            max_length: int, in_document: set[int]) -> list[Document]:
    """Documents from consecutive pairs of the files in ``in_document`` (values of ``file``): sentence k of document
    d is English when k + d is even, else the translation, so documents start in either language.  A document ends
    with its file or before the sentence that would take it past ``max_length``; single-sentence documents are
    dropped (nothing is switched in them)."""
    docs: list[Document] = []
    current: list[tuple[list[int], str]] = []
    number, first, size = 0, 0, 0

    def close() -> None:
        if len(current) >= 2:
            ids = current[0][0][:1] + [t for body, _ in current for t in body[1:]]
            docs.append(Document(ids, [x for _, x in current], first))

    for i in range(len(english)):
        if file[i] not in in_document:
            continue
        for _ in range(2):  # at most once more, after closing the document
            english_turn = (len(current) + number) % 2 == 0
            seq, which = (english[i], "en") if english_turn else (other[i], lang[i])
            new_file = bool(current) and file[i] != file[first]
            if current and (new_file or size + len(seq) - 1 > max_length):
                close()
                current, number = [], number + 1
                continue  # this pair opens the next document (its language by the new parity)
            break
        if not current:
            first, size = i, 1
        current.append((seq, which))
        size += len(seq) - 1
    close()
    return docs


def language_balanced_batches(lengths: list[int], groups: list[str], batch_size: int, bucket_size: int, seed: int,
                              epoch: int) -> list[list[int]]:
    """As many batches as ``length_bucketed_batches`` makes of all the examples, but each batch of one language
    (``groups[i]``: the language of example i), the languages in turn: every language is drawn equally often
    whatever its size (Unicoder samples its languages with equal probability); a language whose batches run out
    starts another pass with a new shuffle."""
    langs = sorted(set(groups))
    members = {g: [i for i, x in enumerate(groups) if x == g] for g in langs}
    total = -(-len(lengths) // batch_size) if len(langs) == 1 else \
        sum(-(-len(m) // batch_size) for m in members.values())
    per: dict[str, list[list[int]]] = {g: [] for g in langs}
    passes = {g: 0 for g in langs}
    out = []
    for t in range(total):
        g = langs[t % len(langs)]
        if not per[g]:
            local = length_bucketed_batches([lengths[i] for i in members[g]], batch_size, bucket_size,
                                            seed + 7919 * (langs.index(g) + 1), epoch * 1000 + passes[g])
            per[g] = [[members[g][i] for i in b] for b in local]
            passes[g] += 1
        out.append(per[g].pop(0))
    return out


class Interleaved:
    """Batches of the objectives in ``order``, one of each in turn; each objective's examples have their own length-
    bucketed order (``lengths[objective]``), repeated with a new shuffle when it runs out before the longest.
    ``groups[objective]`` (the language of each example), where given, makes that objective's batches language-
    balanced (``language_balanced_batches``)."""

    def __init__(self, order: list[str], lengths: dict[str, list[int]], names: list[str],
                 groups: dict[str, list[str]] | None = None) -> None:
        self.order, self.lengths, self.names = order, lengths, names  # names: every objective, code = position
        self.groups = groups or {}

    def _one_pass(self, o: str, batch_size: int, bucket_size: int, seed: int, epoch: int) -> list[list[int]]:
        if o in self.groups:
            return language_balanced_batches(self.lengths[o], self.groups[o], batch_size, bucket_size, seed, epoch)
        return length_bucketed_batches(self.lengths[o], batch_size, bucket_size, seed, epoch)

    def batches(self, batch_size: int, bucket_size: int, seed: int, epoch: int) -> list[list[int]]:
        per = {}
        for o in self.order:
            per[o] = self._one_pass(o, batch_size, bucket_size, seed, epoch * 1000)
        longest = max(len(b) for b in per.values())
        out = []
        for t in range(longest):
            for o in self.order:
                lists, code = per[o], self.names.index(o)
                repeat = 1
                while t >= len(lists):  # a shorter task starts another pass with a new order
                    lists = lists + self._one_pass(o, batch_size, bucket_size, seed, epoch * 1000 + repeat)
                    repeat += 1
                per[o] = lists
                out.append([code * OFFSET + i for i in lists[t]])
        return out

    def decode(self, indices: list[int]) -> tuple[str, list[int]]:
        """A batch's objective and its example indices."""
        return self.names[indices[0] // OFFSET], [i % OFFSET for i in indices]
