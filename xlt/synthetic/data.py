"""Labelled data in a synthetic language: the base language's split, each example re-written by the cipher (and
word order) with its labels carried across the exact word alignment by the task's own label transfer
(``Task.transfer_labels``), so slot spans, entity spans and POS tags land on exactly the image of their words."""
from __future__ import annotations

from pathlib import Path

from xlt.data.datasets import Split, get_dataset, load_split
from xlt.synthetic import SyntheticLanguage, parse, to_synthetic, word_links
from xlt.tasks import get_task


def synthetic_example(task, example, lang: SyntheticLanguage):
    """``example`` (base language) in ``lang``, its labels carried exactly; ``reference`` holds the base text."""
    texts = task.texts(example)
    image = task.translated(example, [to_synthetic(t, lang) for t in texts], lang.code,
                            f"{example.origin}>{lang.code}", str.split)
    links = set()
    if task.needs_alignment:
        n = len(task.words(example))
        if len(task.words(image)) != n:  # words are whitespace-free, so the cipher keeps their number
            raise ValueError(f"{example.origin}: {n} words became {len(task.words(image))} in {lang.code}")
        links = word_links(n, lang)
    labelled, lost, _ = task.transfer_labels(example, image, links)
    if lost:
        raise ValueError(f"{example.origin}: a label was lost on the way to {lang.code}")
    labelled.reference = texts  # the exact base-language text: what the oracle translator reads
    return labelled


def read_split(data_dir: Path, dataset: str, lang: str, split: str, orphan_policy: str = "to_b") -> Split:
    """One split of ``dataset`` in any language: a natural one as ``xlt.data.datasets.load_split`` reads it, a
    synthetic one (``syn-en``) as its base language's split, re-written."""
    synthetic = parse(lang)
    if synthetic is None:
        return load_split(Path(data_dir), dataset, lang, split, orphan_policy)
    return load_synthetic_split(Path(data_dir), dataset, synthetic, split, orphan_policy)


def load_synthetic_split(data_dir: Path, dataset: str, lang: SyntheticLanguage, split: str, orphan_policy: str):
    """One split of ``dataset`` in a synthetic language: the base language's split, re-written."""
    ds = get_dataset(dataset)
    task = get_task(ds.task, **ds.task_options)
    base = load_split(data_dir, dataset, lang.base, split, orphan_policy)
    return Split([synthetic_example(task, e, lang) for e in base.examples], base.reports, base.duplicates_removed)
