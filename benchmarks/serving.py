"""Benchmark: serving the zero-shot xSID model (multilingual-e5-small) on 2 CPU cores.

- Export the run (``xlt export --int8``: ONNX fp32 + int8 with per-token activation scales, with its parity report);
  for comparison the benchmark also writes onnxruntime's ``quantize_dynamic`` graph (``model.int8-dynamic.onnx``:
  one activation scale per batch tensor, the export's int8 before issue 48).
- Same input, same answer: ``answers_changed_by_batching`` per backend = dev-set texts (raw, the run's source dev
  set) whose answer (intent or slots) differs between batch 1 and batch 32 (and 128), with the largest probability
  difference.
- Throughput: utterances/s of PyTorch eager, ONNX fp32 and both ONNX int8 at batch 1 / 32 / 128 on xSID English test
  utterances given as raw text (word splitting, encoding, padding, decoding and JSON included), and batch-1 latency
  p50/p99; 2 threads each (``torch.set_num_threads`` / ``intra_op_num_threads``).  Beside it (``kind: stages``,
  ``serving_stages.py``): the graph alone on the same batches, and the share of end-to-end time per stage.
- Accuracy of each backend on the xSID test set of every language (pre-split words, as evaluation reads them).
- Load and fault test (``serving_load.py``): ``xlt serve`` on 127.0.0.1 with the int8 graph, 1 / 16 / 32 / 64
  clients for 60 s each,
  then a burst of bad requests mixed with valid ones, then kill -9 and restart.

    python benchmarks/serving.py --data-dir ../shared/data [--run benchmarks/runs/xsid-zero-shot-newcore-seed1]
    python benchmarks/serving.py --run RUN --contention 2   # thread settings beside a busy neighbour only

Writes benchmarks/results/serving.json.  Nothing else may run on the machine meanwhile (timings).
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from jobqueue import RESULTS, RUNS, git_commit
from serving_load import run_load_test
from serving_stages import contention_rows, hf_pipeline_rate, stage_split

VARIANTS = {"pytorch_eager": None, "onnx_fp32": "model.onnx", "onnx_int8": "model.int8.onnx",
            "onnx_int8_dynamic": "model.int8-dynamic.onnx"}
DEFAULT_GRAPH = "onnx_int8"  # what `xlt export --int8` serves by default
BATCHES = (1, 32, 128)
THREADS = 2


def predictor_of(variant: str, run_dir: Path, export: Path, batch_size: int, threads: int = THREADS,
                 spinning: bool = True):
    from xlt.serve.predictor import OnnxPredictor
    from xlt.serve.torch_predictor import TorchPredictor

    if VARIANTS[variant] is None:
        return TorchPredictor(run_dir, batch_size=batch_size, threads=threads)
    return OnnxPredictor(export, VARIANTS[variant], batch_size=batch_size, threads=threads, spinning=spinning)


def throughput(predictor, texts: list[str], batch: int) -> dict:
    """Utterances/s over ``texts`` sent ``batch`` at a time (each call sorts and pads its own batch)."""
    from xlt.serve.predictor import Request

    predictor.batch_size = batch
    predictor.predict([Request([t]) for t in texts[:batch]])  # warm-up
    calls = []
    t0 = time.perf_counter()
    for start in range(0, len(texts), batch):
        c0 = time.perf_counter()
        predictor.predict([Request([t]) for t in texts[start:start + batch]])
        calls.append(time.perf_counter() - c0)
    wall = time.perf_counter() - t0
    row = {"batch_size": batch, "utterances": len(texts), "utterances_per_second": round(len(texts) / wall, 1)}
    if batch == 1:
        lat = sorted(calls)
        row |= {"latency_ms_p50": round(1000 * lat[len(lat) // 2], 2),
                "latency_ms_p99": round(1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))], 2)}
    return row


def throughput_rows(variant: str, run_dir: Path, export: Path, texts: list[str]) -> list[dict]:
    """Throughput of one backend at each batch size, measured in a fresh process of its own (as a server runs one
    graph): sessions made earlier in the same process slowed later ones by up to 2x here."""
    texts_file = export / "benchmark-texts.json"
    texts_file.write_text(json.dumps(texts, ensure_ascii=False))
    done = subprocess.run([sys.executable, __file__, "--throughput", variant, "--run", str(run_dir), "--export",
                           str(export), "--texts", str(texts_file)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"throughput of {variant} failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_rows(repeats: list[list[dict]]) -> list[dict]:
    """Per batch size: the median of the repeats' numbers, with every repeat's utterances/s kept."""
    out = []
    for k, first in enumerate(repeats[0]):
        runs = [r[k] for r in repeats]
        row = {key: (statistics.median(x[key] for x in runs) if isinstance(value, float) else value)
               for key, value in first.items()}
        out.append(row | {"utterances_per_second_repeats": [x["utterances_per_second"] for x in runs]})
    return out


def throughput_main(variant: str, run_dir: Path, export: Path, texts_file: Path, args) -> None:
    """``--throughput VARIANT``: print the JSON list of its rows (batch 1 on the first 200 texts, 32 and 128 on
    all; ``--batch-only B``: that batch alone); an ONNX variant never imports torch."""
    texts = json.loads(texts_file.read_text())
    predictor = predictor_of(variant, run_dir, export, 32, args.threads, not args.no_spinning)
    if args.batch_only:
        print(json.dumps([throughput(predictor, texts, args.batch_only)]))
        return
    rows = [throughput(predictor, texts[:200] if batch == 1 else texts, batch) for batch in BATCHES]
    rows.append({"kind": "stages", **stage_split(predictor, texts, 32)})
    print(json.dumps(rows))


def batching_changes(predictor, texts: list[str]) -> dict:
    """Texts whose answer (intent / label and slots) at batch 32 or 128 differs from batch 1, and the largest
    probability difference over all of them."""
    from xlt.serve.predictor import Request

    def answers(batch: int) -> list[dict]:
        predictor.batch_size = batch
        return [a for start in range(0, len(texts), batch)
                for a in predictor.predict([Request([t]) for t in texts[start:start + batch]])]

    alone, out = answers(1), {}
    for batch in (32, 128):
        together = answers(batch)
        changed = sum(json.dumps({k: v for k, v in a.items() if not k.endswith("_probs") and not k.endswith("_prob")})
                      != json.dumps({k: v for k, v in b.items() if not k.endswith("_probs") and not k.endswith("_prob")})
                      for a, b in zip(alone, together))
        diff = max(abs(pa - b[key].get(label, 0.0)) for a, b in zip(alone, together) for key in a
                   if key.endswith("_probs") for label, pa in a[key].items())
        out[batch] = {"changed": changed, "max_prob_diff": float(diff)}
    return {"answers_changed_by_batching": out[32]["changed"], "answers_changed_batch_1_vs_128": out[128]["changed"],
            "max_prob_diff_batch_1_vs_32": round(out[32]["max_prob_diff"], 7),
            "max_prob_diff_batch_1_vs_128": round(out[128]["max_prob_diff"], 7), "dev_texts": len(texts)}


def add_dynamic_graph(export: Path) -> None:
    """onnxruntime's dynamic quantization of the export's fp32 graph, listed in its metadata (benchmark only)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = VARIANTS["onnx_int8_dynamic"]
    if not (export / graph).exists():
        quantize_dynamic(str(export / "model.onnx"), str(export / graph), weight_type=QuantType.QInt8)
    meta = json.loads((export / "xlt_export.json").read_text())
    if graph not in meta["graphs"]:
        meta["graphs"].append(graph)
        (export / "xlt_export.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))


def accuracy(predictor, task, tests: dict) -> dict:
    from xlt.serve.export import request_of

    predictor.batch_size = 64
    out = {}
    for lang, examples in tests.items():
        prepared = [predictor.prepare(request_of(task, e)) for e in examples]
        preds = [task.from_serving(p) for p in predictor.predict_labelled(prepared)]
        out[lang] = task.score(examples, preds)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--run", default=str(RUNS / "xsid-zero-shot-newcore-seed1"))
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--skip-accuracy", action="store_true")
    ap.add_argument("--repeats", type=int, default=3, help="fresh-process timings per backend (median reported)")
    ap.add_argument("--export", default=str(RUNS / "serving-export"), help="where the export is written")
    ap.add_argument("--results", default=str(RESULTS), help="where serving.json goes")
    ap.add_argument("--throughput", choices=list(VARIANTS), help=argparse.SUPPRESS)  # internal: one variant's timing
    ap.add_argument("--texts", help=argparse.SUPPRESS)
    ap.add_argument("--hf-pipeline", action="store_true", help=argparse.SUPPRESS)  # internal: the HF yardstick
    ap.add_argument("--threads", type=int, default=THREADS, help=argparse.SUPPRESS)  # internal, with --throughput
    ap.add_argument("--no-spinning", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--batch-only", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--contention", type=int, metavar="N", help="only the contention rows: batch-32 rates alone and "
                    "with N busy neighbour processes; they replace serving.json's contention rows")
    args = ap.parse_args()
    if args.hf_pipeline:
        import torch

        torch.set_num_threads(THREADS)
        print(json.dumps(hf_pipeline_rate(Path(args.run), json.loads(Path(args.texts).read_text()), 32)))
        return
    if args.throughput:
        throughput_main(args.throughput, Path(args.run), Path(args.export), Path(args.texts), args)
        return
    from xlt.config import load_config
    from xlt.core.context import RunContext
    from xlt.serve.export import export_run

    run_dir, export = Path(args.run), Path(args.export)
    if not (export / "model.int8.onnx").exists():
        export_run(run_dir, export, int8=True)
    add_dynamic_graph(export)
    parity = json.loads((export / "parity.json").read_text())
    cfg = load_config(run_dir / "config.yaml", [f"data.data_dir={args.data_dir}"])
    ctx = RunContext.from_config(cfg)
    tests = {lang: ctx.load_split(lang, "test") for lang in cfg.data.eval_langs}
    texts = [" ".join(u.words) for u in tests["en"]]
    if args.contention:
        path = Path(args.results) / "serving.json"
        result = json.loads(path.read_text())
        provenance = {"git_commit": git_commit(), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "config": f"{run_dir.name} (seed {cfg.train.seed}), exported with xlt export --int8",
                      "seed": cfg.train.seed, "command": f"python benchmarks/serving.py --data-dir ../shared/data "
                      f"--run {args.run} --contention {args.contention}"}
        result["rows"] = [r for r in result["rows"] if r.get("kind") != "contention"] + contention_rows(
            Path(__file__), run_dir, export, texts, args.contention, provenance)
        path.write_text(json.dumps(result, indent=1))
        return
    dev_texts = [" ".join(u.words) for u in ctx.load_split(cfg.data.source_lang, "valid")]
    rows, speed = [], {}
    timings: dict[str, list[list[dict]]] = {v: [] for v in VARIANTS}
    for repeat in range(args.repeats):  # round-robin: a slow spell of the shared machine hits every backend alike
        for variant in VARIANTS:
            timings[variant].append(throughput_rows(variant, run_dir, export, texts))
            print(variant, f"repeat {repeat + 1}", timings[variant][-1], flush=True)
    done = subprocess.run([sys.executable, __file__, "--hf-pipeline", "--run", str(run_dir), "--texts",
                           str(export / "benchmark-texts.json")], capture_output=True, text=True, check=True)
    hf = json.loads(done.stdout.strip().splitlines()[-1])
    print(hf, flush=True)
    rows.append({"method": "zero_shot", "dataset": "xsid", "lang": "en", **hf})
    for variant in VARIANTS:
        stages = sorted((t.pop() for t in timings[variant]), key=lambda r: r["end_to_end_utterances_per_second"])
        rows.append({"method": "zero_shot", "dataset": "xsid", "lang": "en", "variant": variant,
                     **stages[len(stages) // 2]})  # the repeat with the median end-to-end rate
        for r in median_rows(timings[variant]):
            speed[(variant, r["batch_size"])] = r["utterances_per_second"]
            rows.append({"method": "zero_shot", "dataset": "xsid", "lang": "en", "variant": variant, **r})
    for variant in VARIANTS:
        predictor = predictor_of(variant, run_dir, export, 32)
        changes = batching_changes(predictor, dev_texts)
        print(variant, changes, flush=True)
        rows.append({"method": "zero_shot", "dataset": "xsid", "lang": cfg.data.source_lang, "split": "valid",
                     "variant": variant, "graph": VARIANTS[variant] or "pytorch", **changes})
        if not args.skip_accuracy:
            for lang, m in accuracy(predictor, ctx.task, tests).items():
                rows.append({"method": "zero_shot", "dataset": "xsid", "lang": lang, "seed": cfg.train.seed,
                             "variant": variant, **{k: round(v, 4) for k, v in m.items() if k != "n"},
                             "n_test": m["n"]})
            print(variant, "accuracy done", flush=True)
        del predictor
    for load in run_load_test(export, texts, "model.int8.onnx", seconds=args.seconds):
        print(load, flush=True)
        rows.append({"method": "zero_shot", "dataset": "xsid", "variant": "onnx_int8_server", **load})
    write(rows, speed, parity, run_dir, args)


def write(rows: list[dict], speed: dict, parity: dict, run_dir: Path, args) -> None:
    def avg(variant: str, metric: str) -> float | None:
        vals = [r[metric] for r in rows if r.get("variant") == variant and metric in r and "n_test" in r]
        return statistics.mean(vals) if vals else None

    hf = next(r for r in rows if r.get("variant") == "hf_pipeline_token_classification")
    summary = {"default_graph": VARIANTS[DEFAULT_GRAPH],
               "eager_vs_hf_pipeline_at_32": round(speed[("pytorch_eager", 32)] / hf["utterances_per_second"], 2),
               "int8_vs_eager_at_32": round(speed[("onnx_int8", 32)] / speed[("pytorch_eager", 32)], 2),
               "int8_utterances_per_second_at_32": speed[("onnx_int8", 32)],
               "int8_dynamic_vs_eager_at_32": round(speed[("onnx_int8_dynamic", 32)] / speed[("pytorch_eager", 32)],
                                                    2)}
    summary |= {f"answers_changed_by_batching_{r['variant']}": r["answers_changed_by_batching"]
                for r in rows if "answers_changed_by_batching" in r}
    for metric in ("intent_acc", "slot_f1"):
        for v in ("onnx_int8", "onnx_int8_dynamic"):
            if avg("onnx_fp32", metric) is not None:
                summary[f"{metric}_avg_loss_{v.removeprefix('onnx_')}_vs_fp32_points"] = round(
                    100 * (avg("onnx_fp32", metric) - avg(v, metric)), 2)
    notes = (f"model: {run_dir} (zero-shot xSID, selection on the English dev set); {THREADS} threads per backend; "
             f"onnx_int8 = xlt export --int8 (per-token activation scales; the default graph), onnx_int8_dynamic = "
             f"onnxruntime quantize_dynamic (per-batch scales, the default before issue 48); "
             f"answers_changed_by_batching: en dev texts whose intent or slots differ between batch 1 and 32; "
             f"throughput on xSID en test utterances as raw texts, end to end (splitting, encoding, padding, model, "
             f"decoding, JSON), each backend timed in {args.repeats} fresh processes of its own, round-robin, median "
             f"reported (this shared machine has slow spells that halve a run's speed); accuracy on pre-split test "
             f"words of every language; load test: xlt serve (int8) on 127.0.0.1, 1 / 16 / 32 / 64 clients, "
             f"{args.seconds:.0f} s each, every answer checked against its batch-of-one answer")
    result = {"benchmark": "serving", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "git_commit": git_commit(), "machine": f"{platform.machine()}, {THREADS} CPU threads, no GPU",
              "model": "multilingual-e5-small", "selection": "source-dev", "notes": notes, "summary": summary,
              "parity_dev": parity, "rows": rows}
    (Path(args.results) / "serving.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
