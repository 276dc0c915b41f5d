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

    evaluate_run(Path(args.run_dir), args.langs, args.split)
    print((Path(args.run_dir) / "results.md").read_text())


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
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("predict", help="intent + slot spans for whitespace-tokenised texts, any language")
    p.add_argument("run_dir")
    p.add_argument("texts", nargs="+")
    p.set_defaults(func=cmd_predict)
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
