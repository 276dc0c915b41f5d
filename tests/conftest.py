import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("XLT_DATA_DIR", ROOT.parent / "shared" / "data"))

needs_shared_data = pytest.mark.skipif(not (SHARED_DATA / "xsid").is_dir(),
                                       reason=f"benchmark data not found at {SHARED_DATA} (set XLT_DATA_DIR)")

TRAIN = [
    ("set an alarm for 7 am", "O O O O B-datetime I-datetime", "alarm/set_alarm"),
    ("remind me to call mom tomorrow", "O O O B-reminder/todo I-reminder/todo B-datetime", "reminder/set_reminder"),
    ("what is the weather in berlin", "O O O O O B-location", "weather/find"),
    ("play music by queen", "O O O B-artist", "PlayMusic"),
    ("show all reminders", "O B-reference O", "reminder/show_reminders"),
]
EVAL = {
    "en": [("set alarm for 6 pm", "O O O B-datetime I-datetime", "alarm/set_alarm"),
           ("weather in paris", "O O B-location", "weather/find")],
    "de": [("Wecker für morgen", "O O B-datetime", "alarm/set_alarm"),
           ("Wetter in Berlin", "O O B-location", "weather/find")],
    "ja": [("明天 早上 七点 的 闹钟", "B-datetime I-datetime I-datetime O O", "alarm/set_alarm"),
           ("東京 の 天気", "B-location O O", "weather/find")],
}


def write_conll(path: Path, rows) -> None:
    out = []
    for text, tags, intent in rows:
        out += [f"# text = {text}", f"# intent = {intent}"]
        out += [f"{i}\t{w}\t{intent}\t{t}" for i, (w, t) in enumerate(zip(text.split(), tags.split()), 1)]
        out.append("")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


@pytest.fixture(scope="session")
def xlt_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("xlt_home")
    old = os.environ.get("XLT_HOME")
    os.environ["XLT_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("XLT_HOME", None)
    else:
        os.environ["XLT_HOME"] = old


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory) -> Path:
    """A miniature xSID folder: 5 English training utterances (x8), dev/test for en, de, ja."""
    root = tmp_path_factory.mktemp("data")
    d = root / "xsid"
    (d / "train").mkdir(parents=True)
    rows = TRAIN * 8
    (d / "train" / "en.text").write_text("".join(t + "\n" for t, _, _ in rows))
    (d / "train" / "en.label").write_text("".join(f"{tags}\t{intent}\n" for _, tags, intent in rows))
    for lang, eval_rows in EVAL.items():
        write_conll(d / f"{lang}.valid.conll", eval_rows)
        write_conll(d / f"{lang}.test.conll", eval_rows)
    return root


@pytest.fixture
def tiny_cfg(tiny_data, xlt_home, tmp_path):
    from xlt.config import find_config, load_config

    def make(*overrides: str):
        return load_config(find_config("tiny"), [f"data.data_dir={tiny_data}", f"output_dir={tmp_path / 'runs'}",
                                                 "data.train_subset=0", "data.dedup=false",
                                                 "data.eval_langs=[en,de,ja]", *overrides])
    return make


def setup_run(cfg):
    """(ctx, method, data, model, tokenizer) of a run config, as ``xlt.train.train`` builds them."""
    from xlt import zoo
    from xlt.core.vocab import prepare_tokenizer
    from xlt.pipeline import build_model, make_run, prepare_data

    ctx, method = make_run(cfg)
    ctx.tokenizer = prepare_tokenizer(zoo.load_tokenizer(zoo.resolve(cfg.model.name)))
    data = prepare_data(ctx, method)
    model, tok = build_model(ctx, method, data.labels, data.trim)
    return ctx, method, data, model, tok
