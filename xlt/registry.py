"""Registries filled by discovery: every module of a package (``xlt.tasks``, ``xlt.methods``, ``xlt.stages``,
``xlt.data``) is imported once, and the classes or records it registers become available by name.  Adding a task,
a method, a stage or a dataset is therefore one new file: nothing keeps a hand-written list.

The four registries live here, below everything that registers into them or looks a name up: a config names its
method or stage (``xlt.config`` reads their ``Options``) without importing the packages that define them, which
import the config module in turn (the package is imported by name on the first look-up)."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Generic, TypeVar

from xlt.errors import ConfigError

T = TypeVar("T")


def discover(package: str) -> None:
    """Import every module of ``package`` whose name does not start with ``_``."""
    pkg = importlib.import_module(package)
    for info in pkgutil.iter_modules(pkg.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str) -> None:
        self.kind, self.package = kind, package
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        if name in self._items and self._items[name] is not item:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        discover(self.package)
        if name not in self._items:
            raise ConfigError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}")
        return self._items[name]

    def names(self) -> list[str]:
        discover(self.package)
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        return [(n, self._items[n]) for n in self.names()]


METHODS: Registry = Registry("method", "xlt.methods")  # type[xlt.methods.Method]
STAGES: Registry = Registry("stage", "xlt.stages")  # type[xlt.stages.Stage]
TASKS: Registry = Registry("task", "xlt.tasks")  # type[xlt.tasks.Task]
DATASETS: Registry = Registry("dataset", "xlt.data")  # xlt.data.datasets.Dataset
