"""A trained run folder as a ``Predictor`` in eager PyTorch, and what a run says about itself (``run_info``)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from xlt.serve.predictor import Predictor


def public_name(model: str) -> str:
    """A model as ``GET /info`` shows it: a zoo name as it is, a folder by its last two parts (never the server's
    absolute paths)."""
    return "/".join(Path(model).parts[-2:]) if Path(model).is_absolute() else model


def run_info(run_dir: Path, run) -> dict:
    """Model, task, dataset, method, labels and the languages evaluated with their test metrics (results.json)."""
    cfg = run.ctx.cfg
    info = {"model": public_name(cfg.model.name), "task": run.ctx.task.name, "dataset": cfg.data.dataset,
            "method": cfg.train.method, "labels": run.labels, "run": Path(run_dir).resolve().name}
    results = Path(run_dir) / "results.json"
    if results.exists():
        r = json.loads(results.read_text())
        info["results"] = {"split": r.get("split"), "selection": r.get("selection"),
                           "per_language": r.get("per_language", {})}
    return info


class TorchPredictor(Predictor):
    backend = "pytorch"

    def __init__(self, run_dir: Path, batch_size: int = 32, threads: int = 0) -> None:
        from xlt.trained import load_trained

        run = load_trained(Path(run_dir))
        if threads:
            torch.set_num_threads(threads)
        self.model = run.model.eval()
        max_tokens = run.max_tokens
        if hasattr(run.model, "decoder"):  # TALL: the decoder reads the language token + the input's tokens
            max_tokens = min(max_tokens, run.model.decoder.settings.max_positions)
        super().__init__(run.tokenizer, run.labels, run.ctx.task.serving_spec(), max_tokens, run.pad,
                         run_info(run_dir, run), batch_size, translation_of(run, run_dir), language_token_of(run))
        self.run, self.folder = run, Path(run_dir) / "serving"

    @torch.inference_mode()
    def run_batch(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = self.model(model_batch({k: torch.from_numpy(v) for k, v in feed.items()}))
        return {name: out[name].float().numpy() for name in self.spec["outputs"]}


def model_batch(t: dict[str, torch.Tensor]) -> dict:
    """Graph inputs by name (``input_ids``, ``attention_mask`` (B, T); fusion: ``pair_input_ids``,
    ``pair_attention_mask`` (B, T'); TALL: ``language`` (B,)) -> the batch dict the task models read."""
    batch: dict = {"input_ids": t["input_ids"], "attention_mask": t["attention_mask"]}
    if "pair_input_ids" in t:
        batch["pair"] = {"input_ids": t["pair_input_ids"], "attention_mask": t["pair_attention_mask"]}
    if "language" in t:
        batch["language"] = t["language"]
    return batch


def language_token_of(run) -> dict | None:
    """TALL: the decoder's languages and how other languages are read (the run's ``options.other_languages``)."""
    if not run.method.serve_with_language:
        return None
    return {"languages": list(run.model.decoder.settings.languages), "source_lang": run.ctx.cfg.data.source_lang,
            "other_languages": run.ctx.cfg.options.other_languages}


def translation_of(run, run_dir: Path) -> dict | None:
    """What the runtime must translate with: FILTER, the run's translator for its target language; translate-test,
    the run's translator per language and aligner priors (built once into ``RUN/serving/``)."""
    if run.method.serve_via_translation:
        from xlt.serve.translate_test import build_priors

        folder, cfg = Path(run_dir) / "serving", run.ctx.cfg
        meta = folder / "translation.json"
        if not meta.exists():
            folder.mkdir(exist_ok=True)
            langs = cfg.translation.languages or [x for x in cfg.data.eval_langs if x != cfg.data.source_lang]
            meta.write_text(json.dumps(build_priors(cfg, run.ctx.task, langs, folder), indent=1))
        return json.loads(meta.read_text())
    if not run.method.serve_with_translation:
        return None
    from xlt.translate.resources import backend_name

    target = run.method.target_language()
    return {"mode": "fusion", "backend": backend_name(run.ctx.cfg, target),
            "source_lang": run.ctx.cfg.data.source_lang, "target_lang": target}
