"""Kinds of settings: numbers with a range (every int / float setting is finite and inside one), and paths that a
run records as absolute ones.  The one place that knows what a value may be, for config keys (``xlt.config``) and
command-line flags (``xlt.cli``) alike."""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any

from xlt.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """The allowed values of a numeric setting: ``low`` <= v (or < v with ``low_open``), v <= ``high`` (or <)."""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def allows(self, value: float) -> bool:
        if not math.isfinite(value):  # inf and NaN compare false with every bound: never a setting
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def __str__(self) -> str:
        parts = [f"{'>' if self.low_open else '>='} {self.low:g}"] if self.low is not None else []
        parts += [f"{'<' if self.high_open else '<='} {self.high:g}"] if self.high is not None else []
        return " and ".join(parts) or "any finite number"


# a numeric setting without its own range is a count, size, rate or weight: it must be >= 0
DEFAULT_RANGE = Range(low=0)


def ranged(default: Any, low: float | None = None, high: float | None = None, *, above: float | None = None,
           below: float | None = None, any_value: bool = False) -> Any:
    """A dataclass field whose value is checked when a config is read: ``low``/``high`` inclusive bounds,
    ``above``/``below`` exclusive ones, ``any_value`` no bound (e.g. a negative sentinel)."""
    rng = Range() if any_value else Range(above if above is not None else low, below if below is not None else high,
                                          above is not None, below is not None)
    return field(default=default, metadata={"range": rng})


def parse_number(text: str, kind: type, rng: Range) -> int | float:
    """A number typed on the command line, as a setting is checked: ``kind`` (int or float), finite, in ``rng``;
    ``ValueError`` saying why not (the CLI's one-line error)."""
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a{'n integer' if kind is int else ' number'}") from None
    if not rng.allows(value):
        raise ValueError(f"{text} is {_why_not(value, rng)}")
    return value


def _why_not(value: float, rng: Range) -> str:
    return "not a finite number" if not math.isfinite(value) else f"out of range (must be {rng})"


def range_of(cls: type, name: str) -> Range:
    """The range a dataclass field's values are checked against (``DEFAULT_RANGE`` where it names none)."""
    return next(f for f in dataclasses.fields(cls) if f.name == name).metadata.get("range", DEFAULT_RANGE)


def positive(default: Any) -> Any:
    """A size, count of steps or rate that must be > 0."""
    return ranged(default, above=0)


def path_field(default: Any = "", kind: str = "path") -> Any:
    """A setting that names a file or folder; ``load_config`` makes it absolute (relative to where the command runs),
    so a run's ``config.yaml`` still finds its data from any other working directory (``xlt export``, ``xlt eval``).
    ``kind``: "path"; "model" (a zoo name stays as it is; only a relative path to an existing folder is resolved);
    "keyed" (a list of "key=path" items)."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"path": kind})
    return field(default=default, metadata={"path": kind})


def absolute_paths(obj: Any) -> Any:
    """``obj`` (a config dataclass, its typed options and phases) with every ``path_field`` made absolute."""
    for spec in dataclasses.fields(obj):
        value, kind = getattr(obj, spec.name), spec.metadata.get("path")
        if dataclasses.is_dataclass(value):
            absolute_paths(value)
        elif isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            for item in value:
                absolute_paths(item)
        elif kind == "path" and isinstance(value, str) and value and value != "off":
            setattr(obj, spec.name, os.path.abspath(os.path.expanduser(value)))
        elif kind == "model" and isinstance(value, str) and ("/" in value or value.startswith(".")) \
                and os.path.isdir(value):
            setattr(obj, spec.name, os.path.abspath(value))
        elif kind == "keyed" and isinstance(value, list):
            setattr(obj, spec.name, [f"{k}={os.path.abspath(os.path.expanduser(p))}" if sep else k
                                     for k, sep, p in (str(x).partition("=") for x in value)])
    return obj


def fraction(default: float) -> Any:
    """A probability or ratio in [0, 1]."""
    return ranged(default, 0, 1)


def check_range(value: Any, spec: dataclasses.Field, where: str) -> Any:
    """Every int / float setting (alone, or inside a typed list or mapping) lies in its field's range
    (DEFAULT_RANGE where the field names none); an untyped ``options`` mapping is checked by its typed class."""
    rng = spec.metadata.get("range", DEFAULT_RANGE)
    numbers = (value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else [value])
    for v in numbers:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not rng.allows(v):
            raise ConfigError(f"{where}: {v!r} is {_why_not(v, rng)}")
    return value


def check_ranges(obj: Any, where: str) -> None:
    """Every number of dataclass instance ``obj`` lies in its field's range (for objects built in code, not read
    from a config: the server's limits); ``ConfigError`` naming ``where.field`` otherwise."""
    for spec in dataclasses.fields(obj):
        check_range(getattr(obj, spec.name), spec, f"{where}.{spec.name}")
