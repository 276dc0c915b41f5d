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
    """``xlt train``: fine-tune from a shipped config, then score every ``data.eval_langs`` language on its test set.

    Args:
        config: a shipped config's name (``"xsid-zero-shot"``; ``xlt --help`` lists them) or a YAML file's path.
        data_dir: the data folder (``data.data_dir``); relative paths are relative to the working directory.
        overrides: dotted settings, ``{"train.max_steps": 200}`` or ``["train.max_steps=200"]``.
        resume: continue an interrupted run of the same name from its last checkpoint.
        overwrite: replace a finished run of the same name (the old one is kept until the new one finishes).
        evaluate: score the test sets after training (``results.json``).

    Returns:
        The run folder (``run.results``: the scores; ``os.fspath(run)``: its path).

    Raises:
        xlt.ConfigError: a setting is unknown, out of range or makes no sense for the task (before any training).
        xlt.DataError: a data file is missing or damaged (the message names the file and line).
    """
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
    """``xlt eval``: score the run's selected checkpoint on ``split`` of each language.

    Args:
        run: a run folder (``Run`` or path).
        langs: the languages to score (default: the run's ``data.eval_langs``).
        split: ``"test"`` or ``"valid"``.
        test_method: score with another method's test-time procedure, e.g. ``"translate_test"``.
        overrides: dotted settings for evaluation (e.g. ``{"translation.translator": "oracle"}``).
        tag: write ``results-TAG.json`` instead of ``results.json``.

    Returns:
        The results dict (per-language metrics, target average, selection), as written to the file.

    Raises:
        xlt.ConfigError: the folder is not a run folder.
        xlt.DataError: a test file is missing or damaged.
    """
    from xlt.evaluation import evaluate_run

    return evaluate_run(Path(os.fspath(run)), list(langs) if langs else None, split, test_method,
                        _overrides(overrides, None, ""), tag)


def pretrain(config: str | os.PathLike, data_dir: str | os.PathLike | None = None, overrides: Overrides = None,
             resume: bool = False, overwrite: bool = False) -> Path:
    """``xlt pretrain``: run a pre-training stage.

    Args:
        config: a shipped stage config's name (``"pretrain-mlm-ja"``) or a YAML file's path.
        data_dir: the data folder (``corpus.data_dir``).
        overrides: dotted settings, e.g. ``{"phases.0.steps": 100}``.
        resume: continue an interrupted stage; overwrite: replace a finished one.

    Returns:
        The exported encoder folder: give it to ``train`` as ``overrides={"model.name": str(folder)}``.

    Raises:
        xlt.ConfigError, xlt.DataError: as ``train``.
    """
    from xlt.config import find_config, load_stage_config
    from xlt.stages import run_stage

    cfg = load_stage_config(find_config(os.fspath(config)), _overrides(overrides, data_dir, "corpus.data_dir"))
    return Path(run_stage(cfg, resume=resume, overwrite=overwrite))


def export(run: Run | str | os.PathLike, out: str | os.PathLike, int8: bool = False,
           parity_examples: int = 2000, data_dir: str | os.PathLike | None = None) -> dict:
    """``xlt export``: a self-contained ONNX folder that ``load`` and ``xlt serve`` read without PyTorch.

    Args:
        run: a finished run folder.
        out: the folder to write.
        int8: also write a dynamically quantized int8 graph.
        parity_examples: source-language dev examples scored by PyTorch and each graph (the parity report).
        data_dir: where the run's dev set is, when not where the run read it.

    Returns:
        The parity report (``{"skipped": reason}`` when the dev set cannot be read: pass ``data_dir``).

    Raises:
        xlt.ConfigError: the folder is not a trained run.
    """
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
    """Load a model for prediction.

    Args:
        path: a trained run folder (predicts with PyTorch) or an export folder (ONNX Runtime).
        graph: in an export folder, the graph file to use (e.g. ``"model.onnx"`` over the default).
        batch_size: inputs per forward pass.

    Returns:
        A ``Model``: ``model.predict(texts, lang=None)`` gives one dict per text, as ``xlt predict`` prints it.

    Raises:
        xlt.ConfigError: ``graph`` given for a run folder, or the folder is neither a run nor an export.
    """
    from xlt.serve.loader import load_predictor

    return Model(load_predictor(Path(os.fspath(path)), graph, batch_size))
