"""Where an end-to-end prediction's time goes, beside the graph alone (``benchmarks/serving.py``'s throughput rows).

``stage_split`` times one predictor over texts sent ``batch`` at a time, end to end, with a timer around each stage:
``split`` (text -> words), ``tokenize`` (words -> sub-token ids and label positions), ``pad`` (a batch's arrays),
``graph`` (the backend's forward), ``decode`` (logits -> labels, spans), ``serialise`` (the JSON answer and its
``json.dumps``); ``other`` is the rest of ``predict`` (sorting, bookkeeping).  ``graph_only`` feeds the same padded
batches to the backend alone.  The timers wrap the module functions ``Predictor`` calls, so nothing in xlt changes
for the benchmark.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager

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
