"""The run context: what every method and recipe step of one fine-tuning run shares (config, dataset, task,
tokenizer, label space, run folder, data report)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlt.config import RunConfig
from xlt.data.datasets import Dataset, get_dataset
from xlt.errors import ConfigError
from xlt.synthetic.data import read_split


@dataclass
class RunContext:
    cfg: RunConfig
    dataset: Dataset
    task: Any  # xlt.tasks.Task
    report: dict = field(default_factory=dict)  # written to RUN_DIR/data_report.json
    tokenizer: Any = None  # set once loaded
    labels: dict | None = None  # the label space, set once the training examples are known

    @classmethod
    def from_config(cls, cfg: RunConfig) -> "RunContext":
        from xlt.tasks import get_task

        dataset = get_dataset(cfg.data.dataset)
        task = get_task(dataset.task, **dataset.task_options)
        ctx = cls(cfg, dataset, task)
        known = set(task.metrics) | {task.select_metric}
        if ctx.select_metric not in known:
            raise ConfigError(f"train.select_metric: {ctx.select_metric!r} is not a metric of task {task.name} "
                              f"({', '.join(sorted(known))})")
        if dataset.notes:
            ctx.report["dataset_notes"] = dataset.notes
        return ctx

    @property
    def run_dir(self) -> Path:
        return self.cfg.run_dir

    @property
    def select_metric(self) -> str:
        return self.cfg.train.select_metric or self.task.select_metric

    def load_split(self, lang: str, split: str) -> list:
        """Examples of one split of the run's dataset; the reader's report goes to ``report['files']``."""
        d = self.cfg.data
        result = read_split(Path(d.data_dir), d.dataset, lang, split, d.orphan_policy)
        self.report.setdefault("files", []).extend(r.to_dict() for r in result.reports)
        return result.examples
