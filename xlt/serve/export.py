"""``xlt export RUN --out DIR [--int8]``: a self-contained folder that predicts with onnxruntime + tokenizers only.

Written: ``model.onnx`` (the task model over the FULL vocabulary: trimmed embedding rows scattered back as
``load_trained`` does; inputs ``input_ids`` / ``attention_mask`` (B, T) int64, outputs the task's logits),
``model.int8.onnx`` with ``--int8`` (``xlt.serve.quantize``: int8 weights per output channel, activations quantized
per token at run time, so a text's answer does not depend on what it is batched with),
``tokenizer.json``, ``xlt_export.json`` (task, labels, serving spec, the run's test results) and ``parity.json``:
PyTorch vs ONNX fp32 (vs int8) on the run's source-language dev set: each one's metrics, their deltas, the share of
identical predictions and the largest logit difference.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from xlt.errors import ConfigError, DataError
from xlt.serve.predictor import OnnxPredictor, Predictor, Prepared, Request, flat_rows
from xlt.serve.quantize import INT8_SCHEME, quantize_per_token
from xlt.serve.torch_predictor import TorchPredictor, model_batch

FORMAT_VERSION = 1


class _LogitsOnly(torch.nn.Module):
    """The graph's inputs (``input_ids``, ``attention_mask``; fusion: ``pair_input_ids``, ``pair_attention_mask``;
    TALL: ``language``) -> the task's logits in ``names`` order."""

    def __init__(self, model: torch.nn.Module, names: list[str], inputs: list[str]) -> None:
        super().__init__()
        self.model, self.names, self.inputs = model, names, inputs

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(model_batch(dict(zip(self.inputs, tensors))))
        return tuple(out[n] for n in self.names)


def _example_batch(predictor: TorchPredictor, words: list[str]) -> list[list[int]]:
    """Two rows, the second shorter (padded), so the attention-mask path is what gets traced."""
    ids = predictor.tokenizer.encode(words, is_pretokenized=True).ids
    return [ids, ids[:2] + ids[-1:]]


def export_graph(predictor: TorchPredictor, path: Path) -> None:
    """Trace the task model into ONNX with dynamic batch and lengths."""
    names = list(predictor.spec["outputs"])
    rows = _example_batch(predictor, ["export", "example", "text"])
    owners = [Prepared([], None, [], _example_batch(predictor, ["a", "longer", "example", "translation"])[k], 0)
              for k in range(2)]
    feed = predictor.feed(rows, owners)
    dims = {n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", *names)}
    dims |= {n: {0: "batch", 1: "pair_tokens"} for n in ("pair_input_ids", "pair_attention_mask") if n in feed}
    dims |= {"language": {0: "batch"}} if "language" in feed else {}
    wrapper = _LogitsOnly(predictor.model, names, list(feed)).eval()
    # dynamo=False: the TorchScript exporter, deprecated (its warning is silenced with the tracer's).  The torch.export
    # exporter (dynamo=True, onnxscript 0.7.2, opset 17 for the int8 quantizer's ReduceMax) gives the same answers and
    # the same int8 parity, but onnxruntime ran its graph at 0.6-0.8x this one's rate (xSID, batch 32, 2 cores:
    # fp32 147-163 vs 190-255 utterances/s, int8 233-237 vs 297-368), so the export stays on TorchScript
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about python control flow on shapes; the deprecation
        torch.onnx.export(wrapper, tuple(torch.from_numpy(v) for v in feed.values()), str(path),
                          input_names=list(feed), output_names=names, opset_version=17, dynamo=False,
                          dynamic_axes=dims)


def _dev_inputs(reference: TorchPredictor, limit: int) -> tuple[list, list[Prepared]]:
    """The run's source-language dev examples (at most ``limit``) and their prepared inputs (fusion
    models: with their translations).  ``DataError`` / ``OSError`` when there is no dev set."""
    run, task = reference.run, reference.run.ctx.task
    examples = run.ctx.load_split(run.ctx.cfg.data.source_lang, "valid")[:limit]
    requests = [request_of(task, e) for e in examples]
    prepared = [reference.prepare(r) for r in requests]
    if reference.fusion:
        reference.translate(requests, prepared)
    return examples, prepared


def export_run(run_dir: Path, out: Path, int8: bool = False, parity_examples: int = 2000,
               data_dir: str | Path | None = None) -> dict:
    """Export a trained run; returns the parity report (also written to ``out/parity.json``).  ``data_dir``: where
    the run's dev set is (default: the run's own ``data.data_dir``); when it cannot be read, the report says
    ``skipped`` and a warning says why on stderr."""
    run_dir, out = Path(run_dir), Path(out)
    torch_predictor = TorchPredictor(run_dir)
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise DataError(f"--data-dir {data_dir}: no such folder")
        torch_predictor.run.ctx.cfg.data.data_dir = os.path.abspath(data_dir)
    if torch_predictor.language_token:
        raise ConfigError(f"method {torch_predictor.run.method.name}: its decoder (torch.nn.TransformerDecoder) does "
                          f"not trace to ONNX with a dynamic batch yet; serve the run folder itself (xlt serve "
                          f"{run_dir}: PyTorch)")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    export_graph(torch_predictor, out / "model.onnx")
    graphs = ["model.onnx"]
    if int8:
        quantize_per_token(out / "model.onnx", out / "model.int8.onnx")
        graphs.append("model.int8.onnx")
    torch_predictor.tokenizer.save(str(out / "tokenizer.json"))
    if torch_predictor.translate_test:  # the aligner priors travel with the export
        for setting in torch_predictor.translation["languages"].values():
            if (torch_predictor.folder / setting["priors"]).exists():
                shutil.copyfile(torch_predictor.folder / setting["priors"], out / setting["priors"])
    info = torch_predictor.info
    meta = {"format_version": FORMAT_VERSION, **{k: info[k] for k in ("model", "task", "dataset", "method", "labels")},
            "results": info.get("results", {}), "spec": torch_predictor.spec, "max_tokens": torch_predictor.max_tokens,
            "pad_id": torch_predictor.pad_id, "graphs": graphs, "default_graph": graphs[-1],
            "exported_from": str(run_dir), "int8": INT8_SCHEME if int8 else None,
            "translation": torch_predictor.translation,  # FILTER / translate-test: the translator the runtime calls
            "language_token": torch_predictor.language_token,  # TALL: the decoder's language of each input
            "export_seconds": round(time.time() - t0, 1)}
    (out / "xlt_export.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))
    report = parity_report(torch_predictor, [OnnxPredictor(out, g) for g in graphs], parity_examples)
    (out / "parity.json").write_text(json.dumps(report, indent=1))
    if "skipped" in report:  # the export is usable; what it was not checked against must not pass unseen
        print(f"xlt: warning: parity against PyTorch NOT checked ({report['skipped']}); pass --data-dir PATH (the "
              f"folder that holds the run's {torch_predictor.run.ctx.cfg.data.dataset} data) to check it",
              file=sys.stderr)
    return report


def request_of(task, example) -> Request:
    """The serving request that reads ``example`` as evaluation does (pre-split words, or the pair's two texts)."""
    if task.serving_spec()["input"] == "pair":
        return Request(task.texts(example), lang=example.lang)
    return Request(words=list(task.words(example)), lang=example.lang)


def parity_report(reference: TorchPredictor, others: list[Predictor], limit: int) -> dict:
    """Metrics of every backend on the source dev set (at most ``limit`` examples), deltas to PyTorch, the share of
    identical predictions and the largest absolute logit difference at real (unpadded) positions."""
    run, task = reference.run, reference.run.ctx.task
    try:
        examples, prepared = _dev_inputs(reference, limit)
    except (DataError, OSError) as err:
        return {"skipped": f"no dev set to compare on: {err}"}
    ref = reference.predict_labelled(prepared)
    report = {"dev_set": f"{run.ctx.cfg.data.dataset} {run.ctx.cfg.data.source_lang} valid", "n": len(examples),
              "pytorch": task.score(examples, [task.from_serving(p) for p in ref])}
    for other in others:
        preds = other.predict_labelled(prepared)
        metrics = task.score(examples, [task.from_serving(p) for p in preds])
        report[other.graph] = {**metrics, "delta_vs_pytorch": {k: metrics[k] - report["pytorch"][k]
                                                                 for k in task.metrics},
                               "same_predictions": sum(a == b for a, b in
                                                       zip(_labels_only(ref), _labels_only(preds))) / len(ref),
                               "max_abs_logit_diff": max_logit_diff(reference, other, prepared)}
    return report


def _labels_only(preds: list[dict]) -> list:
    return [json.dumps({k: v["label"] if isinstance(v, dict) else v for k, v in p.items()}) for p in preds]


def max_logit_diff(a: Predictor, b: Predictor, prepared: list) -> float:
    """The largest |a - b| over all outputs, at real (unpadded) positions of token-level outputs."""
    worst = 0.0
    for _, feed, _ in a.batches(flat_rows(prepared)):
        out_a, out_b = a.run_batch(feed), b.run_batch(feed)
        for name in out_a:
            diff = np.abs(out_a[name] - out_b[name])
            if diff.ndim == 3:
                diff = diff[feed["attention_mask"].astype(bool)]
            worst = max(worst, float(diff.max()))
    return worst
