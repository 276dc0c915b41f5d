"""Where an end-to-end prediction's time goes, beside the graph alone (``benchmarks/serving.py``'s throughput rows).

``stage_split`` times one predictor over texts sent ``batch`` at a time, end to end, with a timer around each stage:
``split`` (text -> words), ``tokenize`` (words -> sub-token ids and label positions), ``pad`` (a batch's arrays),
``graph`` (the backend's forward), ``decode`` (logits -> labels, spans), ``serialise`` (the JSON answer and its
``json.dumps``); ``other`` is the rest of ``predict`` (sorting, bookkeeping).  ``graph_only`` feeds the same padded
batches to the backend alone.  The timers wrap the module functions ``Predictor`` calls, so nothing in xlt changes
for the benchmark.  ``contention_rows``: the batch-32 rate per thread setting, alone and beside busy neighbours.
"""
from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

STAGES = ("split", "tokenize", "pad", "graph", "decode", "serialise")


@contextmanager
def stage_timers(predictor, seconds: dict[str, float]):
    """Accumulate each stage's wall-clock seconds into ``seconds`` while the block runs."""
    import xlt.serve.predictor as module

    def timed(stage, fn):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[stage] += time.perf_counter() - t0
        return wrapper

    patched = {"split_words": "split", "align_words": "tokenize", "decode_rows": "decode", "join_rows": "decode",
               "labelled": "decode", "to_json": "serialise"}
    saved = {name: getattr(module, name) for name in patched}
    run_batch, feed = predictor.run_batch, predictor.feed
    try:
        for name, stage in patched.items():
            setattr(module, name, timed(stage, saved[name]))
        predictor.run_batch, predictor.feed = timed("graph", run_batch), timed("pad", feed)
        yield
    finally:
        for name, fn in saved.items():
            setattr(module, name, fn)
        predictor.run_batch, predictor.feed = run_batch, feed


def stage_split(predictor, texts: list[str], batch: int) -> dict:
    """End-to-end utterances/s over ``texts`` (``batch`` per call), the graph alone on the same batches, and the
    share of the end-to-end time each stage took."""
    from xlt.serve.predictor import Request, flat_rows

    predictor.batch_size = batch
    chunks = [[Request([t]) for t in texts[i:i + batch]] for i in range(0, len(texts), batch)]
    predictor.predict(chunks[0])  # warm-up
    seconds = dict.fromkeys(STAGES, 0.0)
    with stage_timers(predictor, seconds):
        t0 = time.perf_counter()
        for chunk in chunks:
            answers = predictor.predict(chunk)
            t1 = time.perf_counter()
            json.dumps(answers, ensure_ascii=False)
            seconds["serialise"] += time.perf_counter() - t1
        wall = time.perf_counter() - t0
    feeds = [f for chunk in chunks for _, f, _ in predictor.batches(flat_rows([predictor.prepare(r) for r in chunk]))]
    t0 = time.perf_counter()
    for f in feeds:
        predictor.run_batch(f)
    graph = time.perf_counter() - t0
    share = {k: round(v / wall, 3) for k, v in seconds.items()}
    share["other"] = round(1 - sum(share.values()), 3)
    return {"batch_size": batch, "utterances": len(texts), "end_to_end_utterances_per_second": round(len(texts) / wall, 1),
            "graph_only_utterances_per_second": round(len(texts) / graph, 1),
            "end_to_end_vs_graph_only": round(graph / wall, 3), "stage_share": share}


def hf_pipeline_rate(run_dir, texts: list[str], batch: int) -> dict:
    """The same trained encoder and slot head as Hugging Face's ``pipeline("token-classification")`` (a
    ``BertForTokenClassification`` holding the run's encoder and its slot head's weights; aggregation "first", as
    xlt reads a word at its first sub-token) over the same raw texts, ``batch`` at a time: utterances/s and non-pad
    sub-tokens/s.  The yardstick for eager PyTorch (issue: xlt no slower per token than this)."""
    import torch
    from transformers import AutoModelForTokenClassification, PreTrainedTokenizerFast, pipeline

    from xlt.trained import load_trained

    run = load_trained(run_dir)
    encoder, head = run.model.encoder, run.model.heads.slot_head
    config = copy.deepcopy(encoder.config)
    config.num_labels = head.out_features
    model = AutoModelForTokenClassification.from_config(config)
    getattr(model, model.base_model_prefix).load_state_dict(encoder.state_dict(), strict=False)
    model.classifier.load_state_dict(head.state_dict())
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=run.tokenizer, pad_token="[PAD]", unk_token="[UNK]",
                                        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    tag = pipeline("token-classification", model=model.eval(), tokenizer=tokenizer, aggregation_strategy="first",
                   device=-1)
    tokens = sum(len(run.tokenizer.encode(t).ids) for t in texts)
    with torch.inference_mode():
        tag(texts[:batch], batch_size=batch)  # warm-up
        t0 = time.perf_counter()
        tag(texts, batch_size=batch)
        wall = time.perf_counter() - t0
    return {"variant": "hf_pipeline_token_classification", "batch_size": batch, "utterances": len(texts),
            "utterances_per_second": round(len(texts) / wall, 1), "tokens_per_second": round(tokens / wall, 1)}


CONTENTION = [("pytorch_eager", 1, True), ("pytorch_eager", 2, True), ("onnx_int8", 1, True),
              ("onnx_int8", 2, True), ("onnx_int8", 2, False)]


def contention_rows(script: Path, run_dir: Path, export: Path, texts: list[str], busy: int,
                    provenance: dict) -> list[dict]:
    """``kind: contention``: batch-32 utterances/s of each (backend, threads, ONNX spinning) setting, alone and with
    ``busy`` other processes spinning on the cores (a neighbour job), each setting in a fresh process of ``script``
    (serving.py's ``--throughput``); ``provenance`` (commit, date, config, seed) goes into each row, as these rows
    are made apart from the rest of serving.json."""
    texts_file = export / "benchmark-texts.json"
    texts_file.write_text(json.dumps(texts, ensure_ascii=False))
    rows = []
    for neighbours in (0, busy):
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(neighbours)]
        try:
            for variant, threads, spinning in CONTENTION:
                done = subprocess.run([sys.executable, str(script), "--throughput", variant, "--run", str(run_dir),
                                       "--export", str(export), "--texts", str(texts_file), "--threads", str(threads),
                                       *([] if spinning else ["--no-spinning"]), "--batch-only", "32"],
                                      capture_output=True, text=True, check=True)
                row = json.loads(done.stdout.strip().splitlines()[-1])[0]
                rows.append({"method": "zero_shot", "dataset": "xsid", "lang": "en", "variant": variant,
                             "kind": "contention", **provenance, "threads": threads, "busy_neighbours": neighbours,
                             **({"spinning": spinning} if variant != "pytorch_eager" else {}), **row})
                print(rows[-1], flush=True)
        finally:
            for hog in hogs:
                hog.kill()
    return rows
