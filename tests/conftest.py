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


NLI = [("a man plays music", "a person plays music", "entailment"),
       ("the weather is cold in berlin", "it is warm in berlin", "contradiction"),
       ("set an alarm for the morning", "the alarm is for tomorrow", "neutral"),
       ("remind me to call mom", "call mom", "entailment"),
       ("show all reminders", "no reminders are shown", "contradiction"),
       ("play music at 7 pm", "music plays in the evening", "neutral")]
PAWS = [("the alarm is set for 7 am", "for 7 am the alarm is set", "1"),
        ("music in berlin", "berlin in music", "0"),
        ("remind me tomorrow", "tomorrow remind me", "1"),
        ("the weather for the morning", "the morning for the weather", "0")]
NER = [("Anna lives in Berlin", "B-PER O O B-LOC"), ("Queen played in Paris today", "B-ORG O O B-LOC O"),
       ("the Berlin Music Club", "O B-ORG I-ORG I-ORG"), ("Tom and Anna", "B-PER O B-PER")]
NER_DE = [("Anna wohnt in Berlin", "B-PER O O B-LOC"), ("Queen spielte in Paris", "B-ORG O O B-LOC")]
POS = [("Anna lives in Berlin", "PROPN VERB ADP PROPN"), ("set an alarm for me", "VERB DET NOUN ADP PRON"),
       ("the weather is cold", "DET NOUN AUX ADJ"), ("play all music", "VERB DET NOUN")]
POS_DE = [("Anna wohnt in Berlin", "PROPN VERB ADP PROPN"), ("das Wetter ist kalt", "DET NOUN AUX ADJ")]


def write_lines(path: Path, lines: list[str]) -> None:
    """A text file of one sentence a line (a corpus, one side of a parallel text), its folder made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_tsv(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(r) + "\r\n" for r in rows), encoding="utf-8")


def write_tagged(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = ["".join(f"{w}\t{t}\n" for w, t in zip(text.split(), tags.split())) for text, tags in rows]
    path.write_text("\n".join(blocks), encoding="utf-8")


def write_task_data(root: Path) -> None:
    """Miniature XNLI / PAWS-X / PAN-X / UD POS folders in the shared data layout (en train, en + de eval)."""
    write_tsv(root / "nli-en" / "snli.tsv", NLI * 5)
    write_tsv(root / "nli-en" / "sick.tsv", NLI[:3] * 2)
    write_tsv(root / "pawsx" / "train-en.tsv", PAWS * 8)
    for split in ("dev", "test"):
        for lang in ("en", "de"):
            write_tsv(root / "xnli" / f"{split}-{lang}.tsv", NLI)
            write_tsv(root / "pawsx" / f"{split}-{lang}.tsv", PAWS)
    write_tagged(root / "panx" / "train-en.tsv", NER * 8)
    write_tagged(root / "panx" / "dev-en.tsv", NER + NER)
    write_tagged(root / "panx" / "dev-de.tsv", NER_DE)
    write_tagged(root / "udpos" / "train-en.tsv", POS * 8)
    write_tagged(root / "udpos" / "dev-en.tsv", POS + POS)
    write_tagged(root / "udpos" / "test-de.tsv", POS_DE)


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
    write_task_data(root)
    return root


@pytest.fixture
def tiny_cfg(tiny_data, xlt_home, tmp_path):
    from xlt.config import find_config, load_config

    def make(*overrides: str):
        return load_config(find_config("tiny"), [f"data.data_dir={tiny_data}", f"output_dir={tmp_path / 'runs'}",
                                                 "data.train_subset=0", "data.dedup=false",
                                                 "data.eval_langs=[en,de,ja]", *overrides])
    return make


@pytest.fixture(scope="session")
def served(tiny_data, xlt_home, tmp_path_factory):
    """A tiny intent + slot run, its PyTorch predictor and its ONNX export (fp32 + int8)."""
    from xlt.config import find_config, load_config
    from xlt.evaluation import evaluate_run
    from xlt.serve.export import export_run
    from xlt.serve.predictor import OnnxPredictor
    from xlt.serve.torch_predictor import TorchPredictor
    from xlt.finetune import train

    root = tmp_path_factory.mktemp("serve")
    cfg = load_config(find_config("tiny"), [f"data.data_dir={tiny_data}", f"output_dir={root}", "name=served",
                                            "data.train_subset=0", "data.dedup=false", "data.eval_langs=[en,de,ja]",
                                            "train.max_steps=6", "train.eval_every=3"])
    run_dir = train(cfg)
    evaluate_run(run_dir)  # results.json: what GET /info and the export's metadata show
    report = export_run(run_dir, root / "export", int8=True)
    return {"run": run_dir, "export": root / "export", "report": report, "torch": TorchPredictor(run_dir),
            "onnx": OnnxPredictor(root / "export", "model.onnx"), "int8": OnnxPredictor(root / "export")}


def setup_run(cfg):
    """(ctx, method, data, model, tokenizer) of a run config, as ``xlt.finetune.train`` builds them."""
    from xlt.finetune import Run

    run = Run.from_config(cfg)
    data = run.data()
    model, tok = run.model(data)
    return run.ctx, run.method, data, model, tok


def make_tall_model(root: Path, model: str = "tiny-random") -> Path:
    """A tiny TALL pre-training run (en-de, ``model``; a few steps) -> its exported model folder."""
    from xlt.config import find_config, load_stage_config
    from xlt.stages import run_stage

    name = "tall-stage" if model == "tiny-random" else f"tall-stage-{model}"
    if (root / name / "model" / "decoder.json").exists():
        return root / name / "model"
    data = root / "tall-data"
    for lang, rows in (("en", TRAIN), ("de", EVAL["de"])):
        write_lines(data / "mono" / lang / "a.txt", [r[0] for r in rows * 6])
    cfg = load_stage_config(find_config("pretrain-tall-en-ja"), [
        f"model.name={model}", f"corpus.data_dir={data}", "corpus.heldout_lines=2", f"output_dir={root}",
        f"name={name}", "corpus.langs={en: [mono/en/*.txt], de: [mono/de/*.txt]}", "options.languages=[en,de]",
        "options.reference={}", "phases.0.steps=1", "phases.0.eval_every=1", "phases.1.steps=2",
        "phases.1.eval_every=2", "phases.0.batch_size=4", "phases.1.batch_size=4", "options.decoder_heads=2",
        "options.decoder_ffn=64", "options.max_decode_length=8", "options.eval_sentences=2"])
    return run_stage(cfg)
