"""A few steps of each pre-training stage on a tiny model of any family (for tests/test_architectures.py)."""
from pathlib import Path

from tests.conftest import make_tall_model, write_lines

EN = ["set an alarm for the morning", "play music in berlin", "remind me to call mom tomorrow",
      "the weather is cold", "show all reminders", "what time is it"]
DE = ["stell einen wecker für den morgen", "spiel musik in berlin", "erinnere mich morgen mama anzurufen",
      "das wetter ist kalt", "zeig alle erinnerungen", "wie spät ist es"]
STEPS = ["phases.0.steps=2", "phases.0.eval_every=2", "phases.0.batch_size=4", "phases.1.steps=2",
         "phases.1.eval_every=2", "phases.1.batch_size=4"]
OVERRIDES = {
    "continued_mlm": ("pretrain-mlm-ja", ["corpus.files=[mono/*/*.txt]", "options.eval_sequences=4",
                                          "options.pppl_sequences=2", *STEPS]),
    "unicoder": ("pretrain-unicoder", [
        "corpus.files=[mono/*/*.txt]", "corpus.parallel={de: [parallel/en-de/*.de]}", "corpus.max_length=24",
        "options.document_files=['*']", "options.document_max_length=40", "options.dan_steps=5",
        "options.dan_batch_size=4", "options.eval_examples=4", *STEPS]),
    "trelm": ("pretrain-trelm-es", []),  # refused before any data is read on every family but BERT
}


def corpus(root: Path) -> Path:
    data = root / "stage-data"
    if not data.exists():
        for lang, lines in (("en", EN), ("de", DE)):
            write_lines(data / "mono" / lang / "a.txt", lines * 4)
            write_lines(data / "parallel" / "en-de" / f"p.{lang}", lines * 2)
    return data


def run(stage: str, model: str, root: Path) -> Path:
    """Run ``stage`` for a few steps on ``model``; returns the exported encoder folder."""
    from xlt.config import find_config, load_stage_config
    from xlt.stages import run_stage

    if stage == "tall":
        return make_tall_model(root, model)
    config, extra = OVERRIDES[stage]
    cfg = load_stage_config(find_config(config), [
        f"model.name={model}", f"corpus.data_dir={corpus(root)}", "corpus.heldout_lines=2",
        f"output_dir={root / 'runs'}", f"name={stage}-{model}", *extra])
    return run_stage(cfg)
