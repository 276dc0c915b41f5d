"""The documentation generator (scripts/docgen): benchmark tables come from the results files and nothing else,
every results file is shown somewhere in the docs, README's headline table is the JSON's, and every task, method
and stage gets a page listing its options.  (The site itself is built with --strict by .ci/run.)"""
import json
import re
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts" / "docgen"))
import pages  # noqa: E402
import results  # noqa: E402


@pytest.fixture
def fake_results(tmp_path, monkeypatch):
    rows = [{"method": m, "lang": lang, "seed": s, "accuracy": acc}
            for m, base in (("zero_shot", 0.50), ("filter", 0.60)) for s in (1, 2)
            for lang, acc in (("en", base + 0.3 + s / 100), ("de", base + s / 100), ("fr", base + 0.1 + s / 100))]
    (tmp_path / "fake.json").write_text(json.dumps({"benchmark": "fake", "selection": "source-dev", "rows": rows}))
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    monkeypatch.setitem(results.SCRIPTS, "fake", "python benchmarks/fake.py")
    monkeypatch.setitem(results.CONFIGS, "fake", "fake-config")
    return rows


def test_pivot_computes_means_over_seeds_and_target_averages(fake_results):
    text, charts = results.expand("<!-- xlt:pivot file=fake metric=accuracy langs=summary chart=1 -->", 1)
    lines = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    # zero_shot en: 0.81, 0.82 -> 81.5 ± 0.7; target avg per seed: (0.51 + 0.61) / 2 = 0.56, 0.57 -> 56.5 ± 0.7
    assert "| 81.5 ± 0.7 | 56.5 ± 0.7 |" in lines["zero_shot"]
    assert "| 91.5 ± 0.7 | 66.5 ± 0.7 |" in lines["filter"]
    assert "Reproduce: `python benchmarks/fake.py`" in text and "selection: source-dev" in text
    assert "config: fake-config" in text
    assert list(charts) and next(iter(charts.values()))[:4] == b"\x89PNG"
    assert "../charts/" in text


def test_rows_where_and_unknown_file(fake_results):
    text, _ = results.expand("<!-- xlt:rows file=fake columns=method,lang,accuracy where=lang:de,seed:2 -->", 0)
    assert "| zero_shot | de | 52.0 |" in text and "| filter | de | 62.0 |" in text and "| en |" not in text
    with pytest.raises(results.MarkerError, match="no results file"):
        results.expand("<!-- xlt:rows file=missing columns=a -->", 0)


def test_markers_in_code_blocks_are_left_alone(fake_results):
    page = "```text\n<!-- xlt:pivot file=missing -->\n```\n"
    assert results.expand(page, 0)[0] == page


def test_every_results_file_is_in_the_docs_and_has_a_command():
    docs = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))
    docs += "\n".join(pages.generated_pages().values())
    shown = {params.split("file=")[1].split()[0] for _, params in results.MARKER.findall(docs) if "file=" in params}
    files = {p.stem for p in (ROOT / "benchmarks" / "results").glob("*.json")}
    assert files - shown == set(), "results files no docs page shows"
    assert files - set(results.SCRIPTS) == set(), "results files without a reproducing command"
    for name in files:  # each names its config (in its rows, or in docgen's CONFIGS)
        results.header(name, results.load(name), results.load(name)["rows"])


def test_readme_headline_table_is_the_jsons():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- headline:start -->\n(.*?)<!-- headline:end -->", readme, re.S)
    assert block, "README has no headline table"
    assert block.group(1) == results.headline(), "README's headline table differs from benchmarks/results: " \
                                                 "paste results.headline() into it"
    assert len(readme.splitlines()) <= 250


def test_a_page_per_task_method_and_stage_with_its_options():
    from xlt.methods import METHODS
    from xlt.stages import STAGES
    from xlt.tasks import TASKS

    generated = pages.generated_pages()
    for folder, registry in (("tasks", TASKS), ("methods", METHODS), ("stages", STAGES)):
        for name, cls in registry.items():
            page = generated[f"{folder}/{name}.md"]
            assert page.startswith(f"# {name}") and "## Run it" in page and "## Results" in page
            for field in getattr(cls, "Options", None).__dataclass_fields__ if getattr(cls, "Options", None) else ():
                assert f"`options.{field}" in page, f"{folder}/{name}: option {field} not documented"
    assert "train.batch_size" in generated["reference/config.md"]
    assert "xlt train" in generated["reference/cli.md"] and "/predict" in generated["reference/http.md"]


def undescribed_settings() -> list[str]:
    """Settings and options whose dataclass field has no description (a comment above it or at the end of its line)."""
    import dataclasses
    import typing

    from xlt.config import PhaseConfig, RunConfig, StageConfig
    from xlt.registry import METHODS, STAGES

    missing = []

    def walk(cls: type, prefix: str) -> None:
        comments, hints = pages.field_comments(cls), typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if dataclasses.is_dataclass(hints.get(f.name)):
                walk(hints[f.name], f"{prefix}{f.name}.")
            elif not comments.get(f.name):
                missing.append(f"{prefix}{f.name}")

    for cls, prefix in ((RunConfig, ""), (StageConfig, "(stage) "), (PhaseConfig, "phases.N.")):
        walk(cls, prefix)
    for registry in (METHODS, STAGES):
        for name, cls in registry.items():
            if dataclasses.is_dataclass(getattr(cls, "Options", None)):
                walk(cls.Options, f"{name}: options.")
    return missing


def test_every_setting_and_option_is_described():
    """The configuration reference and the method / stage pages show each field's comment: none may be empty."""
    assert undescribed_settings() == []


def test_a_field_is_described_by_the_comment_above_it_or_at_its_end():
    import dataclasses

    @dataclasses.dataclass
    class Example:
        # what a is,
        # over two lines
        a: int = 1
        b: int = 2  # what b is
        c: int = 3

    assert pages.field_comments(Example) == {"a": "what a is, over two lines", "b": "what b is"}


def test_the_committed_generated_pages_are_what_the_code_generates():
    """docs/{tasks,methods,stages}/, docs/reference/config.md and docs/benchmarks/fidelity.md are generated from the
    code and committed (their links resolve on a code host): after a change, run python scripts/docgen/pages.py."""
    stale = [path for path, text in pages.committed_pages().items()
             if not (ROOT / "docs" / path).exists() or (ROOT / "docs" / path).read_text(encoding="utf-8") != text]
    assert stale == [], "run: python scripts/docgen/pages.py"


HISTORY = re.compile(r"\bissue \d+|\bissues? #\d+|\bstop \d+|\bcommit [0-9a-f]{7}\b|\buntil commit", re.I)


def _prose(text: str) -> str:
    """A page's running text: no code blocks, tables, result markers or headings."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("|", "<!--", "#")))


@pytest.mark.parametrize("page", sorted((ROOT / "docs" / "benchmarks").glob("*.md")), ids=lambda p: p.name)
def test_a_benchmark_page_opens_with_its_table_and_stays_short(page):
    """Results first, then a short verdict; prose a reader finishes (≤ 800 words); no history (git keeps it)."""
    text = page.read_text(encoding="utf-8")
    first = re.search(r"^(\||<!-- xlt:)", text, re.M)
    assert first, f"{page.name}: no table"
    assert len(_prose(text[:first.start()]).split()) <= 100, f"{page.name}: more than 100 words before its first table"
    assert len(_prose(text).split()) <= 800, f"{page.name}: more than 800 words of prose"
    assert not HISTORY.findall(text), f"{page.name} speaks of issues, stops or commits: {HISTORY.findall(text)}"
