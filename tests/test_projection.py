"""Slot-label projection on hand-made alignments: reordering, one-to-many, unaligned words, conflicts, CJK;
grow-diag-final-and; eflomal on a toy corpus."""
import shutil

import pytest

from xlt.align.eflomal_align import align, grow_diag_final_and
from xlt.align.project import bio_spans, project_tags
from xlt.data.bio import orphan_positions


def test_reordering_keeps_span_contiguous_in_target_order():
    # "wake me at 7 am tomorrow" -> "mañana despiértame a las 7"  (datetime spans move)
    src = ["B-datetime", "I-datetime"]  # "7 am"
    tags, st = project_tags(src, {(0, 3), (1, 2)}, 5)
    assert tags == ["O", "O", "B-datetime", "I-datetime", "O"]
    assert st.spans["projected"] == 1 and st.utterances["full"] == 1


def test_one_to_many_covers_the_minimal_contiguous_range():
    # "tomorrow" -> "el día siguiente": one source word aligned to words 1 and 3 -> cover 1..3
    tags, _ = project_tags(["O", "B-datetime"], {(0, 0), (1, 1), (1, 3)}, 4)
    assert tags == ["O", "B-datetime", "I-datetime", "I-datetime"]


def test_unaligned_span_is_dropped_and_partial_span_is_counted():
    src = ["B-location", "I-location", "O", "B-datetime"]
    tags, st = project_tags(src, {(0, 1), (2, 0)}, 3)  # "new" aligned, "york" not; datetime unaligned
    assert tags == ["O", "B-location", "O"]
    assert st.spans["partial"] == 1 and st.spans["dropped_unaligned"] == 1
    assert st.utterances["dropped"] == 1


def test_conflicting_spans_trimmed_or_dropped_and_output_is_valid_bio():
    # span A (2 links) covers target 0..3; span B (1 link, to target 2) lies inside -> dropped (conflict)
    src = ["B-a", "I-a", "B-b"]
    tags, st = project_tags(src, {(0, 0), (1, 3), (2, 2)}, 4)
    assert tags == ["B-a", "I-a", "I-a", "I-a"] and st.spans["dropped_conflict"] == 1
    # span B aligned to 3 and 4: cut to its free part 4
    tags, st = project_tags(src, {(0, 0), (1, 3), (2, 4), (2, 3)}, 5)
    assert st.spans["partial"] + st.spans["dropped_conflict"] >= 1
    assert orphan_positions(tags) == []


def test_cjk_target_tokens():
    # "alarm for tomorrow morning" -> 明天 早上 的 闹钟
    src = ["O", "O", "B-datetime", "I-datetime"]
    tags, _ = project_tags(src, {(0, 3), (2, 0), (3, 1)}, 4)
    assert tags == ["B-datetime", "I-datetime", "O", "O"]
    assert bio_spans(tags) == [("datetime", 0, 1)]


def test_links_outside_target_are_ignored():
    tags, st = project_tags(["B-x"], {(0, 7)}, 2)
    assert tags == ["O", "O"] and st.spans["dropped_unaligned"] == 1


def test_grow_diag_final_and():
    fwd = {(0, 0), (1, 1), (2, 1)}
    rev = {(0, 0), (1, 1), (2, 2)}
    sym = grow_diag_final_and(fwd, rev)
    assert {(0, 0), (1, 1)} <= sym
    assert (2, 2) in sym  # neighbour of (1,1) in the union covering unaligned words 2/2
    assert sym <= fwd | rev


@pytest.mark.skipif(shutil.which("eflomal-align") is None and not __import__("importlib").util.find_spec("eflomal"),
                    reason="eflomal not installed (pip install eflomal)")
def test_eflomal_aligns_a_toy_corpus():
    adjectives = {"red": "rojo", "big": "grande", "new": "nuevo", "old": "viejo"}
    nouns = {"car": "coche", "dog": "perro", "book": "libro", "cat": "gato", "house": "edificio"}
    en, es = [], []
    for a, a_es in adjectives.items():
        for n, n_es in nouns.items():
            # bare "red car" / "coche rojo" pairs: without them "red" co-occurs with "el" as often as with "rojo"
            en += [["the", a, n], ["a", n], [a, n]]
            es += [["el", n_es, a_es], ["un", n_es], [n_es, a_es]]
    # eflomal samples from /dev/urandom (no seed): one fit in about 60-150 links red-el too, so the test reads the
    # links most of five independent fits agree on, as a statement about the aligner rather than one draw of it
    fits = [align([["the", "red", "car"]], [["el", "coche", "rojo"]], extra=list(zip(en, es)) * 5)[0]
             for _ in range(5)]
    agreed = {link for link in set().union(*fits) if sum(link in f for f in fits) >= 3}
    # adjective-noun order swapped; the weaker adjective link may be missing, never wrong
    assert {(0, 0), (2, 1)} <= agreed <= {(0, 0), (1, 2), (2, 1)}
