"""Project BIO slot spans from a sentence onto its translation through a word alignment.

Rules (the same for translate-train, source -> translation, and translate-test, translation -> original):
- a span goes to the minimal contiguous target range covering every target word aligned to any of its words;
- a span none of whose words is aligned is **dropped** (reason ``unaligned``);
- a span with some unaligned words is **partial** (still projected from the aligned ones);
- conflicts: spans are placed in order of alignment support (number of links, ties: earlier span first); a span
  whose range overlaps an already placed span is cut to its longest free sub-range that still contains one of its
  aligned words (**partial**, ``trimmed``), or **dropped** (reason ``conflict``) if there is none.
The output is always valid BIO (B- then I-), whatever the alignment.

Word tags without spans (POS) cross a translation word by word, only through one-to-one links (a target word linked
to exactly one source word that is linked to no other target word; Yarowsky & Ngai 2001, Täckström et al. 2013):
other target words get no label (``project_word_tags``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from xlt.core.spans import get_entities


def bio_spans(tags: list[str]) -> list[tuple[str, int, int]]:
    """BIO tags -> [(label, first word, last word)] (seqeval's reading: an orphan I- starts a span)."""
    return [(label, start, end) for label, start, end in get_entities(list(tags))]


@dataclass
class ProjectionStats:
    spans: Counter = field(default_factory=Counter)  # projected / partial / dropped_unaligned / dropped_conflict
    utterances: Counter = field(default_factory=Counter)  # full / partial / dropped (>=1 span lost)
    tokens: Counter = field(default_factory=Counter)  # word tags: one_to_one / unlabelled (/ fallback)

    def add(self, other: "ProjectionStats") -> None:
        self.spans.update(other.spans)
        self.utterances.update(other.utterances)
        self.tokens.update(other.tokens)

    def to_dict(self) -> dict:
        n_spans, n_utts = sum(self.spans.values()), sum(self.utterances.values())
        out = {"spans": dict(self.spans), "spans_total": n_spans, "utterances": dict(self.utterances),
               "utterances_total": n_utts,
               "span_fully_projected_rate": round(self.spans["projected"] / n_spans, 4) if n_spans else None,
               "span_dropped_rate": round((self.spans["dropped_unaligned"] + self.spans["dropped_conflict"])
                                          / n_spans, 4) if n_spans else None}
        n_tokens = sum(self.tokens.values())
        if n_tokens:
            out.update(tokens=dict(self.tokens), tokens_total=n_tokens,
                       token_labelled_rate=round(self.tokens["one_to_one"] / n_tokens, 4))
        return out


def project_tags(src_tags: list[str], links: set[tuple[int, int]], n_tgt: int) -> tuple[list[str], ProjectionStats]:
    """Project ``src_tags`` (one BIO tag per source word) onto ``n_tgt`` target words.  ``links`` holds
    (source index, target index) pairs.  Returns (target BIO tags, statistics of this utterance)."""
    stats = ProjectionStats()
    aligned: dict[int, set[int]] = {}
    for i, j in links:
        if 0 <= j < n_tgt:
            aligned.setdefault(i, set()).add(j)
    candidates = []
    for order, (label, start, end) in enumerate(bio_spans(src_tags)):
        targets = set().union(*(aligned.get(i, set()) for i in range(start, end + 1)))
        if not targets:
            stats.spans["dropped_unaligned"] += 1
            continue
        complete = all(i in aligned for i in range(start, end + 1))
        support = sum(len(aligned.get(i, ())) for i in range(start, end + 1))
        candidates.append((-support, order, label, targets, complete))
    tags = ["O"] * n_tgt
    taken = [False] * n_tgt
    for _, _, label, targets, complete in sorted(candidates, key=lambda c: (c[0], c[1])):
        lo, hi = min(targets), max(targets)
        if any(taken[lo:hi + 1]):
            best = None  # longest free run inside [lo, hi] that holds an aligned word
            j = lo
            while j <= hi:
                if taken[j]:
                    j += 1
                    continue
                k = j
                while k + 1 <= hi and not taken[k + 1]:
                    k += 1
                if any(j <= t <= k for t in targets) and (best is None or k - j > best[1] - best[0]):
                    best = (j, k)
                j = k + 1
            if best is None:
                stats.spans["dropped_conflict"] += 1
                continue
            lo, hi = best
            complete = False
        for j in range(lo, hi + 1):
            tags[j] = ("B-" if j == lo else "I-") + label
            taken[j] = True
        stats.spans["projected" if complete else "partial"] += 1
    lost = stats.spans["dropped_unaligned"] + stats.spans["dropped_conflict"]
    stats.utterances["dropped" if lost else "partial" if stats.spans["partial"] else "full"] += 1
    return tags, stats


def one_to_one(links: set[tuple[int, int]]) -> dict[int, int]:
    """Target index -> source index for links whose both ends take part in no other link."""
    src_count, tgt_count = Counter(i for i, _ in links), Counter(j for _, j in links)
    return {j: i for i, j in links if src_count[i] == 1 and tgt_count[j] == 1}


def project_word_tags(src_tags: list[str], links: set[tuple[int, int]], n_tgt: int, unknown: str,
                      fallback: list[str] | None = None) -> tuple[list[str], ProjectionStats]:
    """Word tags (POS) onto ``n_tgt`` target words through one-to-one links; other target words get ``unknown``, or
    the tag of ``fallback`` (translate-test: the model's direct prediction on the target word).  Sentence counts
    go to ``utterances`` (full: every target word labelled through a link)."""
    stats = ProjectionStats()
    mapping = one_to_one(links)
    out = []
    for j in range(n_tgt):
        if j in mapping and mapping[j] < len(src_tags):
            out.append(src_tags[mapping[j]])
            stats.tokens["one_to_one"] += 1
        elif fallback is not None:
            out.append(fallback[j])
            stats.tokens["fallback"] += 1
        else:
            out.append(unknown)
            stats.tokens["unlabelled"] += 1
    stats.utterances["full" if stats.tokens["one_to_one"] == n_tgt else "partial"] += 1
    return out, stats
