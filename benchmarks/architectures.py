"""Which encoder families run which task, method and stage: the registry harness on a tiny random model of each
family (issue 50; tests/test_architectures.py and, for BERT, tests/test_registry.py and tests/test_trelm.py).

Runs those tests (pytest, ~5 min on 2 CPU cores) and writes one row per (architecture, task | method | stage):
``status: ok`` when the harness passed (finite loss, gradients exactly on trainable parameters, save/load identical,
batch = one by one, end to end; a stage: a few steps, its export fine-tuned; export: the ONNX graph predicts what
PyTorch predicts), ``unsupported`` with the one-line
``reason`` xlt gives at config time (the test checked that refusal), ``failed`` when the test failed.

    python benchmarks/architectures.py        # -> benchmarks/results/architectures.{json,md}
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from jobqueue import RESULTS, git_commit  # noqa: E402

from tests.test_architectures import ARCHITECTURES, STAGES, why_not  # noqa: E402
from tests.test_registry import DATASETS  # noqa: E402
from xlt.methods import METHODS  # noqa: E402

TESTS = ["tests/test_architectures.py", "tests/test_registry.py::test_method_on_task",
         "tests/test_trelm.py::test_trelm_end_to_end", "tests/test_serve.py::test_export_runtime_predicts_what_pytorch_predicts"]


def test_id(arch: str, kind: str, name: str) -> str:
    if arch == "bert" and kind in ("task", "method"):
        dataset, method = (name, "zero_shot") if kind == "task" else ("xsid", name)
        return f"test_registry.py::test_method_on_task[{dataset}-{method}]"
    if arch == "bert" and name == "trelm":
        return "test_trelm.py::test_trelm_end_to_end"
    if kind == "export":
        return ("test_serve.py::test_export_runtime_predicts_what_pytorch_predicts" if arch == "bert" else
                f"test_architectures.py::test_export_on_architecture[{arch}]")
    if kind == "task":
        return f"test_architectures.py::test_task_on_architecture[{arch}-{name}]"
    if kind == "method" and name == "zero_shot":
        return f"test_architectures.py::test_task_on_architecture[{arch}-xsid]"
    return f"test_architectures.py::test_{kind}_on_architecture[{arch}-{name}]"


def outcomes(junit: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname').split('.')[-1]}.py::{case.get('name')}"
        failed = case.find("failure") is not None or case.find("error") is not None
        out[name] = "skipped" if case.find("skipped") is not None else "failed" if failed else "passed"
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                        *TESTS], cwd=ROOT, check=False)
        seen = outcomes(junit)
    names = {"task": list(DATASETS), "method": METHODS.names(), "stage": list(STAGES), "export": ["onnx"]}
    rows = []
    for arch in ["bert", *ARCHITECTURES]:
        for kind, items in names.items():
            for name in items:
                outcome = seen.get(test_id(arch, kind, name), "not run")
                reason = None if kind in ("task", "export") else why_not(arch, kind, name)
                status = ("unsupported" if reason else "ok") if outcome == "passed" else outcome
                rows.append({"architecture": arch, "kind": kind, "name": name, "status": status,
                             "reason": reason or "", "test": test_id(arch, kind, name)})
    out = {"benchmark": "architectures", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "git_commit": git_commit(), "machine": "2 CPU cores, no GPU", "model": "tiny random models (2 layers, "
           "hidden 32) of each family, built from its transformers config class (xlt/zoo/tiny_random.py)",
           "notes": "tasks run zero-shot on each dataset family; methods on xSID; stages a few steps, then a "
                    "fine-tuning on the export. ok = the harness passed; unsupported = refused at config time "
                    "with the reason given (the refusal itself is tested).", "rows": rows}
    (RESULTS / "architectures.json").write_text(json.dumps(out, indent=1) + "\n")
    archs = ["bert", *ARCHITECTURES]
    lines = ["| kind | name | " + " | ".join(archs) + " |", "|---|---|" + "---|" * len(archs)]
    for kind, items in names.items():
        for name in items:
            cells = [r["status"] for a in archs for r in rows if (r["architecture"], r["kind"], r["name"]) ==
                     (a, kind, name)]
            lines.append(f"| {kind} | {name} | " + " | ".join(cells) + " |")
    reasons = sorted({f"- {r['architecture']}, {r['kind']} {r['name']}: {r['reason']}" for r in rows if r["reason"]})
    print("\n".join(lines + ["", *reasons]))
    bad = [r for r in rows if r["status"] not in ("ok", "unsupported")]
    if bad:
        raise SystemExit(f"{len(bad)} pair(s) neither ok nor refused: {[(r['architecture'], r['name']) for r in bad]}")


if __name__ == "__main__":
    main()
