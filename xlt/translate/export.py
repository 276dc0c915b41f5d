"""``xlt translate``: translate a labelled file and write the translation with projected slot labels."""
from __future__ import annotations

import json
from pathlib import Path

from xlt.config import RunConfig, TranslationConfig
from xlt.data.readers import read_massive_jsonl, read_mtod_tsv, read_xsid_conll, read_xsid_train
from xlt.data.records import DataError, Utterance
from xlt.tasks import get_task
from xlt.translate.train_data import project_rows, translate_examples


def read_labelled(path: Path, lang: str) -> list[Utterance]:
    """xSID ``.text`` (with its ``.label`` beside it), xSID ``.conll``, MASSIVE-style ``.jsonl`` or MTOD ``.tsv``."""
    if not path.exists():
        raise DataError(f"{path}: file not found")
    if path.suffix == ".text":
        rows, rep = read_xsid_train(path, path.with_suffix(".label"), lang)
    elif path.suffix == ".conll":
        rows, rep = read_xsid_conll(path, lang)
    elif path.suffix == ".jsonl":
        rows, rep = read_massive_jsonl(path, lang)
    elif path.suffix == ".tsv":
        rows, rep = read_mtod_tsv(path, lang)
    else:
        raise DataError(f"{path}: unknown format (expected .text+.label, .conll, .jsonl or .tsv)")
    print(rep.summary())
    return rows


def write_labelled(rows: list[Utterance], out: Path, fmt: str) -> list[Path]:
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        path = out.with_suffix(".jsonl")
        path.write_text("".join(json.dumps({"tokens": u.words, "slots": u.slots, "intent": u.intent,
                                            "lang": u.lang, "source": (u.reference or [None])[0]}, ensure_ascii=False) + "\n"
                                for u in rows), encoding="utf-8")
        return [path]
    text, label = Path(f"{out}.text"), Path(f"{out}.label")
    text.write_text("".join(" ".join(u.words) + "\n" for u in rows), encoding="utf-8")
    label.write_text("".join(" ".join(u.slots) + "\t" + u.intent + "\n" for u in rows), encoding="utf-8")
    return [text, label]


def translate_file(path: Path, backend: str, src: str, tgt: str, out: Path, fmt: str = "xsid",
                   data_dir: str = "../shared/data", on_lost_span: str = "skip_utterance") -> dict:
    """Translate every utterance of ``path`` from ``src`` to ``tgt``, project its slots (eflomal), write the result.
    Returns the statistics (also written to ``OUT.stats.json``)."""
    rows = read_labelled(Path(path), src)
    cfg = RunConfig()
    cfg.data.data_dir, cfg.data.source_lang = data_dir, src
    cfg.translation = TranslationConfig(translator=backend, on_lost_span=on_lost_span)
    task = get_task("intent_slot")
    translated, tstats = translate_examples(cfg, task, rows, src, tgt)
    projected, pstats = project_rows(cfg, task, rows, translated, tgt)
    files = write_labelled(projected, Path(out), fmt)
    stats = {"input": str(path), "outputs": [str(f) for f in files], "translation": tstats, "projection": pstats}
    Path(f"{out}.stats.json").write_text(json.dumps(stats, indent=1))
    return stats
