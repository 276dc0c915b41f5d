"""Open what ``xlt serve`` / ``xlt predict`` / ``xlt.load`` are given: an export folder on ONNX Runtime (no torch
import), or a trained run folder in PyTorch."""
from __future__ import annotations

from pathlib import Path

from xlt.serve.predictor import OnnxPredictor, Predictor


def load_predictor(path: Path, graph: str | None = None, batch_size: int = 32, spinning: bool = True) -> Predictor:
    """An export folder (``xlt_export.json``) on ONNX Runtime, or a trained run folder in PyTorch.  ``spinning``:
    whether ONNX Runtime's idle threads spin (``OnnxPredictor``); the server turns it off, as its event loop and
    HTTP handling share the cores with the graph (benchmarks/serving.py: as fast or faster under load)."""
    path = Path(path)
    if (path / "xlt_export.json").exists():
        return OnnxPredictor(path, graph, batch_size, spinning=spinning)
    if graph:
        from xlt.errors import ConfigError

        raise ConfigError(f"--graph {graph}: {path} is a run folder (served with PyTorch); --graph picks a graph of "
                          f"an `xlt export` folder")
    from xlt.serve.torch_predictor import TorchPredictor

    return TorchPredictor(path, batch_size=batch_size)
