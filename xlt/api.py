"""The Python API: everything the command line does, with the same configs and the same run folders.

    import xlt

    run = xlt.train("xsid-zero-shot", data_dir="../shared/data", overrides={"train.max_steps": 200})
    print(run.results["target_avg"])                      # what results.json holds
    xlt.evaluate(run, langs=["de", "ja"])                 # re-score languages (writes results.json again)
    model = xlt.load(run)                                 # a run folder (PyTorch) or an export folder (ONNX)
    model.predict(["set an alarm for 7 am", "明日の朝七時にアラームを設定して"])   # the CLI's JSON answers
    encoder = xlt.pretrain("pretrain-mlm-ja", overrides={...})   # an encoder folder: model.name for train()
    xlt.export(run, "exported", int8=False)               # an ONNX folder that xlt.load / xlt serve read

Errors are typed: ``xlt.ConfigError`` (a setting), ``xlt.DataError`` (a data file or an input text: the message
names the file and line, or the text), both ``xlt.XltError``; the command line prints exactly these as its one-line
``xlt: error: ...``.  ``overrides`` are the CLI's dotted keys, as a dict (values any YAML/JSON value) or as
``"key=value"`` strings.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

Overrides = Mapping[str, Any] | Sequence[str] | None


@dataclass(frozen=True)
class Run:
    """A run (or stage) folder; usable wherever a path is (``os.fspath(run)``)."""
    path: Path

    def __fspath__(self) -> str:
        return str(self.path)

    @property
    def results(self) -> dict:
        """``results.json`` of the last evaluation (per-language metrics, target average, selection)."""
        return json.loads((self.path / "results.json").read_text(encoding="utf-8"))

    @property
    def config(self) -> dict:
        import yaml

        return yaml.safe_load((self.path / "config.yaml").read_text(encoding="utf-8"))


def _overrides(overrides: Overrides, data_dir: str | os.PathLike | None, key: str) -> list[str]:
    """``overrides`` as the CLI's ``key=value`` strings; a wrong shape is a ``ConfigError`` saying what it got."""
    from xlt.errors import ConfigError

    shape = "overrides: give a dict {\"train.lr\": 1e-4, ...} or a list of \"key=value\" strings"
    if overrides is None:
        items: list[str] = []
    elif isinstance(overrides, Mapping):  # JSON is YAML: every value round-trips through the CLI's parser
        bad = [k for k in overrides if not isinstance(k, str)]
        if bad:
            raise ConfigError(f"{shape}; key {bad[0]!r} is not a str")
        items = [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in overrides.items()]
    elif isinstance(overrides, (str, bytes)):
        raise ConfigError(f"{shape}, not one {type(overrides).__name__} ({overrides!r:.60}): wrap it in a list")
    else:
        items = list(overrides)
        bad = [x for x in items if not isinstance(x, str)]
        if bad:
            raise ConfigError(f"{shape}; {bad[0]!r} is not a str")
    return ([f"{key}={os.fspath(data_dir)}"] if data_dir is not None else []) + items


def train(config: str | os.PathLike, data_dir: str | os.PathLike | None = None, overrides: Overrides = None,
          resume: bool = False, overwrite: bool = False, evaluate: bool = True) -> Run:
    """``xlt train``: fine-tune from a shipped config name or a YAML file, then (``evaluate``) score every
    ``data.eval_langs`` language on its test set.  Returns the run folder."""
    from xlt.config import find_config, load_config
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train as train_run

    cfg = load_config(find_config(os.fspath(config)), _overrides(overrides, data_dir, "data.data_dir"))
    run_dir = train_run(cfg, resume=resume, overwrite=overwrite)
    if evaluate:
        evaluate_run(run_dir)
    return Run(Path(run_dir))


def evaluate(run: Run | str | os.PathLike, langs: Iterable[str] | None = None, split: str = "test",
             test_method: str | None = None, overrides: Overrides = None, tag: str = "") -> dict:
    """``xlt eval``: score the run's selected checkpoint on ``split`` of each language; returns results.json's
    dict (written as ``results{-tag}.json``)."""
    from xlt.evaluation import evaluate_run

    return evaluate_run(Path(os.fspath(run)), list(langs) if langs else None, split, test_method,
                        _overrides(overrides, None, ""), tag)


def pretrain(config: str | os.PathLike, data_dir: str | os.PathLike | None = None, overrides: Overrides = None,
             resume: bool = False, overwrite: bool = False) -> Path:
    """``xlt pretrain``: run a stage; returns the exported encoder folder (give it to ``train`` as
    ``model.name``)."""
    from xlt.config import find_config, load_stage_config
    from xlt.stages import run_stage

    cfg = load_stage_config(find_config(os.fspath(config)), _overrides(overrides, data_dir, "corpus.data_dir"))
    return Path(run_stage(cfg, resume=resume, overwrite=overwrite))


def export(run: Run | str | os.PathLike, out: str | os.PathLike, int8: bool = False,
           parity_examples: int = 2000, data_dir: str | os.PathLike | None = None) -> dict:
    """``xlt export``: a self-contained ONNX folder (+ int8 graph); returns the parity report (``{"skipped":
    reason}`` when the run's dev set cannot be read: pass ``data_dir``)."""
    from xlt.serve.export import export_run

    return export_run(Path(os.fspath(run)), Path(os.fspath(out)), int8, parity_examples, data_dir)


class Model:
    """A loaded run or export: ``predict`` answers as ``xlt predict`` prints them (one dict per input)."""

    def __init__(self, predictor) -> None:
        self.predictor = predictor

    @property
    def pair(self) -> bool:
        """Whether inputs are sentence pairs (give each as a (first, second) tuple or 'first ||| second')."""
        return bool(self.predictor.pair)

    def predict(self, texts: str | Iterable[str | Sequence[str]], lang: str | None = None) -> list[dict]:
        """One answer per text (a dict, as ``xlt predict`` prints it), in order.

        texts: raw strings in any language (pairs: (first, second) tuples or 'first ||| second'); a single str is
        one text (one answer in the list).  ``lang``: their language code when the method needs it (translate-test,
        FILTER, TALL).  An input that is not a text, or that the model cannot take, raises ``xlt.DataError`` naming
        it ("text 2: ..."); a bad ``lang`` too."""
        from xlt.errors import DataError
        from xlt.serve.request import Request, check_lang

        check_lang(lang)
        if isinstance(texts, (str, bytes)):
            texts = [texts]
        elif not isinstance(texts, Iterable):
            raise DataError(f"texts: expected a list of texts, got {type(texts).__name__}")
        texts = list(texts)
        requests = []
        for i, text in enumerate(texts):
            try:
                requests.append(Request.of(text, lang, self.predictor.pair))
                self.predictor.prepare(requests[-1])
            except DataError as err:
                raise type(err)(f"text {i + 1}: {err}") from None
        return self.predictor.predict(requests)


def load(path: Run | str | os.PathLike, graph: str | None = None, batch_size: int = 32) -> Model:
    """A trained run folder (PyTorch) or an export folder (ONNX Runtime; ``graph`` picks model.onnx over the
    default)."""
    from xlt.serve.loader import load_predictor

    return Model(load_predictor(Path(os.fspath(path)), graph, batch_size))
