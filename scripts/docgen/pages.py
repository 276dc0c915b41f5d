"""Docs pages generated from the code: one page per task, method and stage (from the registries, the modules'
docstrings and the ``options:`` dataclasses), the configuration reference (the config dataclasses), the CLI
reference (the argument parser) and the HTTP reference (the FastAPI schema); with ``result_pages.py`` the pages made
from the benchmark results (fidelity, Choosing a method).  Adding a method adds its page."""
from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
import sys
import textwrap
import types
import typing
from pathlib import Path

import results  # scripts/docgen/results.py: the one reader of benchmarks/results
from result_pages import choosing_page, fidelity_page  # pages made from the benchmark results

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "xlt" / "configs"
# the benchmark page that reports each method / stage (a page of docs/benchmarks/)
BENCHMARK_PAGES = {
    "zero_shot": ["xsid-zero-shot", "tasks"], "translate_train": ["translation", "tasks"],
    "translate_test": ["translation", "tasks"], "multi_language": ["translation", "unicoder"],
    "xeroalign": ["paired", "tasks"], "filter": ["paired", "tasks"], "filter_self_teaching": ["paired", "tasks"],
    "tall": ["tall"], "continued_mlm": ["continued-mlm"], "unicoder": ["unicoder"], "trelm": ["trelm"],
    "intent_slot": ["xsid-zero-shot", "translation"], "pair_classification": ["tasks"],
    "token_classification": ["tasks"],
}
# es rows of the task benchmarks (a method beside zero-shot, same seeds)
METHOD_TABLES = [("xnli", "accuracy", "en,es"), ("pawsx", "accuracy", "en,es"), ("panx", "f1", "en,es"),
                 ("udpos", "accuracy", "en,es"), ("translation", "semantic_acc", "en,es,sr,da")]
# how each stage's result is fine-tuned in its benchmark
FINETUNE_ON = {"tall": "xlt train xsid-zero-shot train.method=tall",
               "trelm": "xlt train mtod-target-trained-es"}  # TreLM: a supervised target-language task, as its paper
ALSO_SYNTHETIC = {"zero_shot", "translate_train", "translate_test", "multi_language", "xeroalign", "filter",
                  "filter_self_teaching", "tall", "continued_mlm", "unicoder", "trelm"}


def rst_to_md(text: str) -> str:
    """Docstrings use reST literals (``x``); Markdown wants `x`."""
    return re.sub(r"``(.+?)``", r"`\1`", text)


def field_comments(cls: type) -> dict[str, str]:
    """Each field's description in the dataclass source: the comment lines just above it, then the comment at the end
    of its line(s) (``name: int = 3  # what it is``)."""
    try:
        lines, start = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return {}
    out = {}
    for node in ast.parse(textwrap.dedent("".join(lines))).body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above, i = [], node.lineno - 2
            while i >= 0 and lines[i].strip().startswith("#"):
                above.insert(0, lines[i].strip().lstrip("#").strip())
                i -= 1
            after = [line.split("#", 1)[1].strip() for line in lines[node.lineno - 1:node.end_lineno] if "#" in line]
            text = " ".join(above + after).strip()
            if text:
                out[node.target.id] = text
    return out


def _type_name(tp) -> str:
    if isinstance(tp, str):
        return tp
    if typing.get_origin(tp) is typing.Literal:
        return " \\| ".join(repr(a) for a in typing.get_args(tp))
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "").replace("|", "\\|")


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = f.default_factory()  # type: ignore[misc]
        if dataclasses.is_dataclass(value):
            return "(section)"
        if isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            return f"{len(value)} × `{type(value[0]).__name__}` (below)"
    else:
        return "required"
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def field_table(cls: type, prefix: str = "", nested: bool = False, header: bool = True) -> str:
    """A Markdown table of a config dataclass: setting, type, default, the comment on its line.  Nested dataclass
    fields are documented elsewhere (config sections), or inline with ``nested`` (a method's options)."""
    comments = field_comments(cls)
    hints = typing.get_type_hints(cls)
    rows = ["| setting | type | default | what it is |", "|---|---|---|---|"] if header else []
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints.get(f.name)):
            if nested:
                rows.append(field_table(hints[f.name], f"{prefix}{f.name}.", nested, header=False).rstrip("\n"))
            continue
        comment = comments.get(f.name, "").replace("|", "\\|")
        rows.append(f"| `{prefix}{f.name}` | {_type_name(hints.get(f.name, f.type))} | {_default(f)} | {comment} |")
    return "\n".join(rows) + "\n"


def configs_using(key: str, name: str) -> list[str]:
    """Shipped configs whose ``method:`` / ``stage:`` is ``name``."""
    pattern = re.compile(rf"^\s*{key}:\s*{re.escape(name)}\s*$", re.M)
    return sorted(p.stem for p in CONFIGS.glob("*.yaml") if pattern.search(p.read_text()))


def has_rows(file: str, method: str) -> bool:
    try:
        return any(r.get("method") == method for r in results.load(file)["rows"])
    except results.MarkerError:  # no such results file (yet)
        return False


def _module_doc(cls: type) -> str:
    return rst_to_md(inspect.getdoc(sys.modules[cls.__module__]) or cls.description)


def _results_links(name: str, depth: int = 1) -> str:
    pages = BENCHMARK_PAGES.get(name, [])
    links = [f"[{p}]({'../' * depth}benchmarks/{p}.md)" for p in pages]
    if name in ALSO_SYNTHETIC:
        links.append(f"[synthetic languages]({'../' * depth}benchmarks/synthetic.md)")
    return ("Measured in: " + ", ".join(links) + ".\n") if links else "Not benchmarked yet.\n"


def _fidelity_section(cls: type, depth: int = 1) -> str:
    """The class's ``fidelity`` table (xlt.fidelity): where it follows its paper and where not."""
    from xlt.fidelity import markdown_table

    if not cls.fidelity:
        return ""
    return (f"\n## Fidelity to the paper\n\n{markdown_table(cls.fidelity)}\nMeasurements: "
            f"[Fidelity to the papers]({'../' * depth}benchmarks/fidelity.md).\n")


def method_page(cls: type) -> str:
    configs = configs_using("method", cls.name)
    example = ("\n".join(f"xlt train {c} data.data_dir=../shared/data" for c in configs) if configs else
               f"xlt train xsid-zero-shot train.method={cls.name} data.data_dir=../shared/data")
    options = (field_table(cls.Options, "options.", nested=True) if cls.Options else
               "This method has no `options:`.\n")
    results = "".join(f"\n<!-- xlt:pivot file={file} metric={metric} where=method:zero_shot|{cls.name} "
                      f"by=dataset,method langs={langs} -->\n"
                      for file, metric, langs in METHOD_TABLES if cls.name != "zero_shot" and has_rows(file, cls.name))
    return f"""# {cls.name}

*{cls.description}*{f' — {cls.paper}' if cls.paper else ''}.

{_module_doc(cls)}

## Options

{options}
## Run it

```bash
{example}
```

Shipped configs with this method: {', '.join(f'`{c}`' for c in configs) or 'none (any config takes `train.method=' + cls.name + '`)'}.
{_fidelity_section(cls)}
## Results

{_results_links(cls.name)}{results}"""


def stage_page(cls: type) -> str:
    configs = configs_using("stage", cls.name)
    example = "\n".join(f"xlt pretrain {c}" for c in configs) or f"# a config with stage: {cls.name}"
    options = field_table(cls.Options, "options.", nested=True) if cls.Options else "This stage has no `options:`.\n"
    return f"""# {cls.name}

*{cls.description}* — {cls.paper}.

{_module_doc(cls)}

## Options

{options}
Phases, corpora and the model are set as for every stage: see [configuration](../reference/config.md#stages).

## Run it

```bash
{example}
{FINETUNE_ON.get(cls.name, 'xlt train xsid-zero-shot')} model.name=runs/{configs[0] if configs else 'RUN'}/model   # fine-tune on it
```
{_fidelity_section(cls)}
## Results

{_results_links(cls.name)}"""


def task_page(cls: type, datasets: list) -> str:
    rows = "\n".join(f"| `{d.name}` | {d.description} | {d.notes or ''} |" for d in datasets)
    configs = sorted({c for d in datasets for c in CONFIGS.glob(f"{d.name}-zero-shot.yaml")})
    example = "\n".join(f"xlt train {c.stem} data.data_dir=../shared/data" for c in configs)
    return f"""# {cls.name}

*{cls.description}*

{_module_doc(cls)}

## Datasets

| dataset (`data.dataset`) | what | notes |
|---|---|---|
{rows}

## Run it

```bash
{example}
```

## Results

{_results_links(cls.name)}"""


def registry_pages() -> dict[str, str]:
    from xlt.data.datasets import DATASETS
    from xlt.methods import METHODS
    from xlt.stages import STAGES
    from xlt.tasks import TASKS

    pages = {}
    datasets = [d for _, d in DATASETS.items()]
    for name, cls in TASKS.items():
        pages[f"tasks/{name}.md"] = task_page(cls, [d for d in datasets if d.task == name])
    for name, cls in METHODS.items():
        pages[f"methods/{name}.md"] = method_page(cls)
    for name, cls in STAGES.items():
        pages[f"stages/{name}.md"] = stage_page(cls)
    return pages


def config_reference() -> str:
    from xlt.config import (CorpusConfig, DataConfig, ModelConfig, PhaseConfig, RunConfig, StageConfig,
                            StageModelConfig, TrainConfig, TranslationConfig)

    parts = ["# Configuration reference\n",
             "Configs are YAML files read with `safe_load` into these dataclasses (`xlt/config.py`); a dotted "
             "`key=value` on the command line overrides one setting (`train.lr=1e-4`, `data.eval_langs=[en,de]`). "
             "Unknown keys, wrong types and out-of-range numbers are one-line errors before anything is written. "
             "Every run writes the resolved config to `RUN_DIR/config.yaml`. Generated from the code.\n",
             "## Fine-tuning (`xlt train`)\n", field_table(RunConfig)]
    for section, cls in (("model", ModelConfig), ("data", DataConfig), ("train", TrainConfig),
                         ("translation", TranslationConfig)):
        parts += [f"### `{section}`\n", field_table(cls, f"{section}.")]
    parts += ["`options:` holds the method's own settings: see each method's page.\n",
              "## Stages\n", "Pre-training configs (`xlt pretrain`).\n", field_table(StageConfig)]
    for section, cls in (("model", StageModelConfig), ("corpus", CorpusConfig), ("phases.N", PhaseConfig)):
        parts += [f"### `{section}`\n", field_table(cls, f"{section}.")]
    parts += ["`options:` holds the stage's own settings: see each stage's page.\n"]
    return "\n".join(parts)


def cli_reference() -> str:
    from xlt.cli import build_parser

    parser = build_parser(with_catalog=False)
    parts = ["# Command line\n", "Generated from xlt's argument parser (`xlt --help`, `xlt COMMAND --help`). A user "
             "error prints one line `xlt: error: ...` and exits with status 2.\n",
             "```text\n" + parser.format_help() + "```\n"]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, child in sub.choices.items():
        parts += [f"## `xlt {name}`\n", "```text\n" + child.format_help() + "```\n"]
    return "\n".join(parts)


def http_reference() -> str:
    from xlt.serve.app import create_app

    stub = types.SimpleNamespace(info={"task": "TASK", "model": "MODEL"}, backend="onnx", pair=False)
    schema = create_app(stub).openapi()
    parts = ["# HTTP API\n", "`xlt serve RUN_OR_EXPORT` (FastAPI + uvicorn). Generated from the server's OpenAPI "
             "schema; a running server also serves it at `/openapi.json` and an interactive page at `/docs`.\n",
             "| method | path | what |", "|---|---|---|"]
    for path, ops in schema["paths"].items():
        for verb, op in ops.items():
            parts.append(f"| `{verb.upper()}` | `{path}` | {op.get('summary', '')} |")
    body = schema["components"]["schemas"]["PredictBody"]
    parts += ["", "## `POST /predict` request body\n", "| field | type |", "|---|---|"]
    for key, spec in body["properties"].items():
        kinds = [s.get("type", "") + (f" of {s['items'].get('type', 'str | [str, str]')}" if "items" in s else "")
                 for s in spec.get("anyOf", [spec])]
        parts.append(f"| `{key}` | {' or '.join(k for k in kinds if k)} |")
    parts += ["", "Unknown keys are refused (422). Give exactly one of `text` and `texts`; a pair model takes "
              "`[\"first\", \"second\"]` for each text; `lang` names the input language where the model needs it "
              "(translate-test, FILTER, TALL). The answer is `{\"predictions\": [...]}`, one object per text, the "
              "same JSON as `xlt predict` prints (see [Using a model](../using-a-model.md)). Errors are "
              "`{\"error\": ...}`: 413 with `limit` and `max` for a request over a limit, 422 for everything the "
              "server cannot read or the model cannot take.\n"]
    return "\n".join(parts)


def index_pages(pages: dict[str, str]) -> dict[str, str]:
    """tasks/index.md, methods/index.md, stages/index.md: a table of what the registry holds."""
    from xlt.methods import METHODS
    from xlt.stages import STAGES
    from xlt.tasks import TASKS

    intro = {"tasks": "A task is the only place a label type lives: label space, encoding, heads, loss, decoding, "
                      "scoring and how labels cross a translation (`xlt/tasks/`).",
             "methods": "A method is how fine-tuning uses the source data (and translations of it): one small class "
                        "in `xlt/methods/`, chosen with `train.method=NAME`; every method runs on every task where "
                        "it makes sense.",
             "stages": "A stage pre-trains the encoder before fine-tuning (`xlt pretrain CONFIG`): phases of "
                       "objectives on the same training loop, ending in a model folder that `xlt train` takes as "
                       "`model.name`."}
    out = {}
    for kind, registry in (("tasks", TASKS), ("methods", METHODS), ("stages", STAGES)):
        rows = [f"| [{n}]({n}.md) | {c.description} | {getattr(c, 'paper', '') or ''} |" for n, c in registry.items()]
        out[f"{kind}/index.md"] = (f"# {kind.capitalize()}\n\n{intro[kind]}\n\n| name | what | paper |\n|---|---|---|\n"
                                   + "\n".join(rows) + "\n")
    return out


# generated pages also committed under docs/ (so that links to them resolve on a code host; tests/test_docs.py keeps
# them equal to what the code generates): all but the command-line and HTTP references, whose text comes from
# argparse's and FastAPI's own formatting (library versions would make a committed copy differ between machines)
SITE_ONLY = {"reference/cli.md", "reference/http.md"}
DOCS = ROOT / "docs"


def committed_pages() -> dict[str, str]:
    return {path: text for path, text in generated_pages().items() if path not in SITE_ONLY}


def write_committed_pages() -> list[Path]:
    """Write the generated pages into docs/ (``python scripts/docgen/pages.py``)."""
    written = []
    for path, text in committed_pages().items():
        target = DOCS / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            written.append(target)
    return written


# a docs page named in a docstring or comment ("docs/benchmarks/serving.md", not in backticks or a link already)
DOCS_PATH = re.compile(r"(?<!\]\()(?<![`/\w\[])docs/([\w/-]+\.md)(#[\w-]+)?")


def link_docs_paths(text: str, page: str) -> str:
    """Turn the docs pages the code's text names into links relative to ``page`` (they would show as plain text)."""
    up = "../" * page.count("/")
    return DOCS_PATH.sub(lambda m: f"[{m.group(1)}]({up}{m.group(1)}{m.group(2) or ''})", text)


def generated_pages() -> dict[str, str]:
    pages = registry_pages()
    pages["methods/choosing.md"] = choosing_page()
    pages["benchmarks/fidelity.md"] = fidelity_page()
    pages.update(index_pages(pages))
    pages["reference/config.md"] = config_reference()
    pages["reference/cli.md"] = cli_reference()
    pages["reference/http.md"] = http_reference()
    return {path: link_docs_paths(text, path) for path, text in pages.items()}


if __name__ == "__main__":
    for written in write_committed_pages():
        print(f"wrote {written}")
