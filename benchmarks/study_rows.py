"""The rows of a declared study (``benchmarks/studies/<name>.yaml``) as they run: expanded per ``each`` entry,
``extends`` resolved, chosen by name (``benchmarks/study.py`` runs and collects them)."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import yaml

STUDIES = Path(__file__).parent / "studies"
# what a study and a row may say (benchmarks/study.py and study_results.py document each); anything else is a typo
STUDY_KEYS = {"name", "rows", "expand", "notes", "imports", "identity", "results", "model", "selection", "labels",
              "lang_sets", "lang_labels", "gap_closed", "anchors"}
ROW_KEYS = {"name", "config", "stage", "call", "args", "overrides", "seeds", "labels", "langs", "train_metrics", "each",
            "extends", "then", "base_only", "manual", "evaluate", "results", "requires", "phases", "extract",
            "rows_from", "fields"}


def load_study(name: str) -> dict:
    """The study with its rows as they run (``expanded``)."""
    path = STUDIES / f"{name}.yaml"
    if not path.exists():
        raise SystemExit(f"no study {name!r}: {path} does not exist (studies: "
                         f"{', '.join(sorted(p.stem for p in STUDIES.glob('*.yaml')))})")
    study = yaml.safe_load(path.read_text())
    unknown = set(study) - STUDY_KEYS
    unknown_in_rows = {k for r in study["rows"] for k in r} - ROW_KEYS
    if unknown or unknown_in_rows:
        raise SystemExit(f"{path}: unknown keys {sorted(unknown | unknown_in_rows)} (a study may say "
                         f"{sorted(STUDY_KEYS)}, a row {sorted(ROW_KEYS)})")
    study["rows"] = expanded(study)
    names = [r["name"] for r in study["rows"]]
    if len(set(names)) != len(names):
        raise SystemExit(f"{path}: row names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    return study


def fill(value, values: dict):
    """``{key}`` of ``values`` replaced in every text of ``value`` (``{seed}`` and ``{run:...}`` stay for later)."""
    if isinstance(value, str):
        return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), m.group(0))), value)
    if isinstance(value, list):
        return [fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, values) for k, v in value.items()}
    return value


def expanded(study: dict) -> list[dict]:
    """Rows as written -> rows as run.  ``each: KEY`` copies a row for every entry of the study's ``expand: {KEY:
    {value: {field: text}}}`` with ``{KEY}`` and the entry's fields filled in (``each: [KEY, KEY2]``: for every
    combination); ``extends: NAME`` (a row as written) puts that row's config or stage and overrides before the
    row's own (a later override wins)."""
    written = {r["name"]: r for r in study["rows"]}

    def flat(items: list) -> list[str]:  # a YAML alias of a list inside a list: its items in place
        return [x for item in items for x in (flat(item) if isinstance(item, list) else [item])]

    def inherited(row: dict, values: dict) -> tuple[dict, list[str]]:
        own = {k: fill(row[k], values) for k in ("config", "stage") if k in row}
        mine = fill(flat(row.get("overrides", [])), values)
        if "extends" not in row:
            return own, mine
        source, overrides = inherited(written[row["extends"]], values)
        return own or source, overrides + mine

    def entries(spec) -> list[dict]:  # each: KEY, or {KEY: [some of its values]}
        (key, subset), = spec.items() if isinstance(spec, dict) else [(spec, None)]
        return [{key: v, **f} for v, f in study["expand"][key].items() if subset is None or v in subset]

    out = []
    for row in study["rows"]:
        each = row.get("each") or []
        for combination in itertools.product(*map(entries, each if isinstance(each, list) else [each])):
            values = {k: v for entry in combination for k, v in entry.items()}
            source, overrides = inherited(row, values)
            done = {k: fill(v, values) for k, v in row.items() if k not in ("each", "extends", "overrides")}
            out.append({**done, **source, "overrides": overrides})
    return out


def row_seeds(row: dict, seeds: list[int]) -> list[int]:
    return row.get("seeds", [1] if "stage" in row or "call" in row else seeds)


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _native_bf16() -> bool:
    from xlt.core.precision import resolve_precision

    return resolve_precision("auto") == "bf16"


# what a row's ``requires`` asks of the machine: a GPU; a CPU or GPU that multiplies bf16 natively (where
# ``mixed_precision: auto`` picks bf16; elsewhere bf16 is emulated, and its speed and numbers are not the user's)
REQUIREMENTS = {"cuda": _has_cuda, "native_bf16": _native_bf16}


def can_run(row: dict) -> bool:
    return REQUIREMENTS[row["requires"]]() if row.get("requires") else True


def by_name(study: dict) -> dict[str, dict]:
    """A row by its name, or by its name without "-seed{seed}" (what --only takes)."""
    rows = {r["name"].replace("-seed{seed}", ""): r for r in study["rows"]}
    return {**rows, **{r["name"]: r for r in study["rows"]}}


def chosen_rows(study: dict, only: list[str] | None) -> list[dict]:
    """The rows named (in that order), or every row but the ``manual`` ones."""
    if not only:
        return [r for r in study["rows"] if not r.get("manual")]
    rows = by_name(study)
    unknown = set(only) - set(rows)
    if unknown:
        raise SystemExit(f"no row {sorted(unknown)} in study {study['name']} (rows: "
                         f"{', '.join(r['name'].replace('-seed{seed}', '') for r in study['rows'])})")
    return list({id(rows[n]): rows[n] for n in only}.values())
