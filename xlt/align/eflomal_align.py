"""Word alignment with eflomal (Östling & Tiedemann 2016), run through its ``eflomal-align`` command (eflomal is
GPL-3.0; xlt, Apache-2.0, talks to it as a separate program), symmetrized with grow-diag-final-and (Koehn et al.).

eflomal is fit on the sentence pairs to align plus any extra parallel text (more data = better alignments); the
extra pairs are only used for fitting.  It samples, seeded from /dev/urandom (it has no seed option), so two fits
of the same pairs differ slightly (up to 3.3 points of a translate-train run's metrics, the reproducibility study in
``benchmarks/studies``): it is the aligner of ``translation.aligner=eflomal``; the default, ``similarity``
(``xlt.align.similarity``), samples nothing.  ``cache`` keeps the links of a fit under a key hashed from everything
that goes into it (the pairs, the extra text, the settings, the priors, eflomal's version), so the same inputs on
the same machine give the same links again; the key is recorded in the run's data report.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from xlt.align.cache import cached_links, parse_links
from xlt.errors import XltError

Links = set[tuple[int, int]]  # (source word index, target word index)
_NEIGHBOURS = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]


class AlignerUnavailable(XltError, RuntimeError):
    pass


def _eflomal_command() -> str:
    found = shutil.which("eflomal-align") or str(Path(sys.executable).parent / "eflomal-align")
    if not Path(found).exists():
        raise AlignerUnavailable("eflomal is not installed: pip install eflomal==2.0.0 (GPL-3.0)")
    return found


def grow_diag_final_and(forward: Links, reverse: Links) -> Links:
    """Symmetrize two directional alignments: start from their intersection, grow into neighbouring union links
    that cover a still-unaligned word, then add union links whose both words are unaligned."""
    union = forward | reverse
    links = forward & reverse
    src_done = {i for i, _ in links}
    tgt_done = {j for _, j in links}
    grown = True
    while grown:
        grown = False
        for i, j in sorted(links):
            for di, dj in _NEIGHBOURS:
                cand = (i + di, j + dj)
                if cand in union and cand not in links and (cand[0] not in src_done or cand[1] not in tgt_done):
                    links.add(cand)
                    src_done.add(cand[0])
                    tgt_done.add(cand[1])
                    grown = True
    for direction in (forward, reverse):
        for i, j in sorted(direction):
            if i not in src_done and j not in tgt_done:
                links.add((i, j))
                src_done.add(i)
                tgt_done.add(j)
    return links


def _write_corpus(d: Path, pairs: list[tuple[list[str], list[str]]], lowercase: bool) -> None:
    """``d/src`` and ``d/tgt``: one sentence per line, as eflomal reads them."""
    norm = (lambda w: w.lower()) if lowercase else (lambda w: w)
    for name, side in (("src", 0), ("tgt", 1)):
        # eflomal reads whitespace-separated tokens: a token containing whitespace is impossible here
        (d / name).write_text("".join(" ".join(norm(w) for w in p[side]) + "\n" for p in pairs), encoding="utf-8")


def alignment_key(src: list[list[str]], tgt: list[list[str]], extra, lowercase: bool, priors: Path | None) -> str:
    """sha256 over everything an eflomal fit depends on."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        eflomal_version = version("eflomal")
    except PackageNotFoundError:
        eflomal_version = "unknown"
    h = hashlib.sha256(json.dumps(["xlt-align-1", eflomal_version, lowercase, src, tgt, [list(p) for p in extra]],
                                  ensure_ascii=False).encode())
    if priors:
        h.update(Path(priors).read_bytes())
    return h.hexdigest()


def align(src: list[list[str]], tgt: list[list[str]], extra: list[tuple[list[str], list[str]]] = (),
          lowercase: bool = True, priors: Path | None = None, cache: Path | None = None,
          record: dict | None = None) -> list[Links]:
    """Align ``src[k]`` with ``tgt[k]`` for every k; returns one set of (i, j) links per pair.
    ``extra`` parallel sentences are appended for fitting only.  Empty sentences get no links.  ``priors``: an
    eflomal priors file (``make_priors``) that carries what a large corpus taught, so that a few pairs align well
    without re-fitting on it (serving translate-test models).  ``cache``: a folder of earlier fits by
    ``alignment_key`` (read if the key is there, written otherwise); ``record`` gets ``cache_key`` and ``reused``."""
    if len(src) != len(tgt):
        raise ValueError(f"{len(src)} source but {len(tgt)} target sentences")
    return cached_links(alignment_key(src, tgt, extra, lowercase, priors) if cache is not None else "",
                        lambda: _fit(src, tgt, extra, lowercase, priors), cache, record, len(src))


def _fit(src: list[list[str]], tgt: list[list[str]], extra, lowercase: bool, priors: Path | None) -> list[Links]:
    """One eflomal fit (forward and reverse), symmetrized."""
    pairs = list(zip(src, tgt)) + [p for p in extra if p[0] and p[1]]
    keep = [k for k, (s, t) in enumerate(pairs) if s and t]
    if not keep:
        return [set() for _ in src]
    with tempfile.TemporaryDirectory(prefix="xlt-eflomal-") as tmp:
        d = Path(tmp)
        _write_corpus(d, [pairs[k] for k in keep], lowercase)
        done = subprocess.run([_eflomal_command(), "-s", str(d / "src"), "-t", str(d / "tgt"), "-f",
                               str(d / "fwd"), "-r", str(d / "rev"), "--overwrite",
                               *(["-p", str(priors)] if priors else [])], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"eflomal-align failed: {done.stderr[-2000:]}")
        fwd = (d / "fwd").read_text().splitlines()
        rev = (d / "rev").read_text().splitlines()
    result: list[Links] = [set() for _ in src]
    for row, k in enumerate(keep):
        if k < len(src):
            result[k] = grow_diag_final_and(parse_links(fwd[row]), parse_links(rev[row]))
    return result


def make_priors(pairs: list[tuple[list[str], list[str]]], out: Path, lowercase: bool = True) -> int:
    """Align ``pairs`` and write eflomal priors (lexical, distortion, fertility) learnt from them to ``out``;
    returns the number of pairs used."""
    pairs = [p for p in pairs if p[0] and p[1]]
    if not pairs:
        raise ValueError("make_priors: no non-empty sentence pairs")
    with tempfile.TemporaryDirectory(prefix="xlt-eflomal-") as tmp:
        d = Path(tmp)
        _write_corpus(d, pairs, lowercase)
        for cmd in ([_eflomal_command(), "-s", str(d / "src"), "-t", str(d / "tgt"), "-f", str(d / "fwd"), "-r",
                     str(d / "rev"), "--overwrite"],
                    [str(Path(_eflomal_command()).with_name("eflomal-makepriors")), "-s", str(d / "src"), "-t",
                     str(d / "tgt"), "-f", str(d / "fwd"), "-r", str(d / "rev"), "-p", str(out)]):
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{Path(cmd[0]).name} failed: {done.stderr[-2000:]}")
    return len(pairs)
