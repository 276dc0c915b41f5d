"""xlt's span reading (xlt/core/spans.py) against seqeval's ``get_entities``, which it replaces in the serving
runtime: the same spans on every sequence, and a serving import that stays free of scikit-learn and SciPy."""
import random
import subprocess
import sys
import warnings

from seqeval.metrics.sequence_labeling import get_entities as seqeval_entities

from xlt.core.spans import get_entities

TAGS = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "B-a-b", "I-a-b", "B", "I", "."]


def test_the_same_spans_as_seqeval_on_random_sequences():
    rng = random.Random(0)
    sequences = [[rng.choice(TAGS) for _ in range(rng.randint(0, 12))] for _ in range(5000)]
    sequences += [["I-PER"], ["B-PER", "I-LOC"], ["O", "I-PER", "I-PER", "O"], []]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on the bare "." tag
        for tags in sequences:
            assert get_entities(tags) == seqeval_entities(list(tags)), tags


def test_the_serving_runtime_does_not_import_scikit_learn_or_scipy():
    code = ("import sys, xlt.serve.predictor, xlt.serve.decode, xlt.serve.app; "
            "print(sorted(m for m in ('sklearn', 'scipy', 'seqeval') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
