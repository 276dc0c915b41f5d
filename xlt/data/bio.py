"""BIO tag validation and the explicit repair rules xlt applies to known problems in the data.

Rules (each counted in the ReadReport):
- ``Orecurring_datetime`` (xSID en/da train; 357/312 lines) -> ``O``.  It always follows a recurring_datetime span
  on a token outside it ("every hour / reminding", "every 5 minutes / until", "." ...): an ``O`` with a stray suffix.
- orphan ``I-X`` (no preceding ``B-X``/``I-X``): policy ``to_b`` rewrites it to ``B-X`` (conlleval's and seqeval's
  reading of such a tag, and the xSID authors' own fix); policy ``skip`` drops the utterance.
- any other tag that is not ``O``, ``B-X`` or ``I-X``: the utterance is skipped.
"""
from __future__ import annotations

import re

_TAG = re.compile(r"^(O|[BI]-\S+)$")
STRAY_O = {"Orecurring_datetime": "O"}


def is_valid_tag(tag: str) -> bool:
    return bool(_TAG.match(tag))


def orphan_positions(tags: list[str]) -> list[int]:
    """Indices of ``I-X`` tags not preceded by ``B-X`` or ``I-X``."""
    out = []
    for i, tag in enumerate(tags):
        if tag.startswith("I-"):
            prev = tags[i - 1] if i else "O"
            if prev[2:] != tag[2:] or prev == "O":
                out.append(i)
    return out


def repair_tags(tags: list[str], orphan_policy: str) -> tuple[list[str] | None, dict[str, int], str]:
    """Return (tags or None if the utterance must be skipped, repairs made, reason for a skip)."""
    if orphan_policy not in ("to_b", "skip"):
        raise ValueError(f"orphan_policy must be 'to_b' or 'skip', not {orphan_policy!r}")
    repairs: dict[str, int] = {}
    tags = list(tags)
    for i, tag in enumerate(tags):
        if tag in STRAY_O:
            tags[i] = STRAY_O[tag]
            repairs[f"{tag}->O"] = repairs.get(f"{tag}->O", 0) + 1
        elif not is_valid_tag(tag):
            return None, repairs, f"invalid tag {tag!r}"
    orphans = orphan_positions(tags)
    if orphans:
        if orphan_policy == "skip":
            return None, repairs, f"orphan I- tag at word {orphans[0] + 1}"
        for i in orphans:
            tags[i] = "B-" + tags[i][2:]
        repairs["orphan I->B"] = len(orphans)
    return tags, repairs, ""


def repair_into(report, line: int, tags: list[str], orphan_policy: str, unit: str) -> list[str] | None:
    """``repair_tags`` with its outcome counted in ``report`` (a ``ReadReport``): each repair kind once per
    ``unit`` ("lines", "sentences") and per tag; a skip with its reason.  None: the example is skipped."""
    fixed, repairs, why = repair_tags(tags, orphan_policy)
    for kind, count in repairs.items():
        report.repair(line, f"{kind} ({unit})")
        report.repaired[f"{kind} (tags)"] += count
    if fixed is None:
        report.skip(line, "bad BIO", why)
    return fixed
