"""Where xlt follows its papers and where it does not: each method and stage lists its mechanisms that a reader of
the paper would check (``fidelity`` on the class), what the paper (or the authors' code) does, what xlt does, and
the state of that difference.  The documentation renders them as one table per method (docs/benchmarks/fidelity.md,
and each method's and stage's page); ``key`` names the rows of ``benchmarks/results/fidelity.json`` that measure
the difference, where a study has measured it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Deviation:
    mechanism: str  # what is compared, e.g. "NLU read-out"
    paper: str  # what the paper (or the authors' code, said so) does
    xlt: str  # what xlt does, with the setting that changes it
    status: str  # "as the paper", "fixed: ...", "setting: ...", "measured: ...", "open: ..."
    key: str = ""  # the ``deviation`` of its rows in results/fidelity.json ("" if none)


def markdown_table(entries: tuple[Deviation, ...]) -> str:
    """A Markdown table of ``entries`` (empty string for none); ``|`` inside a cell is escaped."""
    if not entries:
        return ""

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| mechanism | paper | xlt | status |", "|---|---|---|---|"]
    lines += [f"| {cell(d.mechanism)} | {cell(d.paper)} | {cell(d.xlt)} | {cell(d.status)} |" for d in entries]
    return "\n".join(lines) + "\n"
