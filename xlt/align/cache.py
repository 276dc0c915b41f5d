"""Word alignments kept by a hash of everything they depend on (``translation.alignment_cache``): the same inputs
give the same links again, and the key, recorded in the run's data report and results, names them."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Callable

Links = set[tuple[int, int]]


def key_of(parts: list) -> str:
    """sha256 of the JSON of ``parts`` (the aligner, its settings and version, the sentence pairs)."""
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


def parse_links(line: str) -> Links:
    return {tuple(int(x) for x in pair.split("-")) for pair in line.split()}  # type: ignore[misc]


def cached_links(key: str, fit: Callable[[], list[Links]], cache: Path | None, record: dict | None,
                 pairs: int) -> list[Links]:
    """The links stored under ``key`` in ``cache`` (a folder), or ``fit()``'s, then stored (whole or not at all).
    ``record`` gets ``cache_key``, ``reused`` and ``pairs``."""
    if cache is None:
        return fit()
    path = Path(cache) / f"{key}.json.gz"
    reused = path.exists()
    if reused:
        links = [parse_links(line) for line in json.loads(gzip.decompress(path.read_bytes()))["links"]]
    else:
        links = fit()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(gzip.compress(json.dumps({"key": key, "pairs": pairs, "links": [
            " ".join(f"{i}-{j}" for i, j in sorted(x)) for x in links]}).encode()))
        os.replace(tmp, path)
    if record is not None:
        record.update(cache_key=key, reused=reused, pairs=pairs)
    return links
