"""Pre-training stages (``xlt pretrain``): recipes with phases that produce a new encoder before fine-tuning."""
from __future__ import annotations

from typing import Any, ClassVar

from xlt.registry import Registry


class Stage:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Options: ClassVar[type] = dict

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and cls.name:
            STAGES.add(cls.name, cls)


STAGES: Registry[type[Stage]] = Registry("stage", "xlt.stages")


def get_stage(name: str) -> type[Stage]:
    return STAGES.get(name)


def run_stage(cfg, resume: bool = False):
    raise NotImplementedError
