"""Open what ``xlt serve`` / ``xlt predict`` / ``xlt.load`` are given: an export folder on ONNX Runtime (no torch
import), or a trained run folder in PyTorch."""
from __future__ import annotations

from pathlib import Path

from xlt.serve.predictor import OnnxPredictor, Predictor


def load_predictor(path: Path, graph: str | None = None, batch_size: int = 32, spinning: bool = True,
                   threads: int = 0) -> Predictor:
    """An export folder (``xlt_export.json``) on ONNX Runtime, or a trained run folder in PyTorch.  ``spinning``:
    whether ONNX Runtime's idle threads spin (``OnnxPredictor``); the server turns it off, as its event loop and
    HTTP handling share the cores with the graph.  ``threads``: intra-op threads of either backend (0: one per core).
    benchmarks/serving.py's contention rows: alone, 2 spinning threads are fastest; beside 2 busy processes on 2
    cores, spinning halves the int8 graph's rate and 2 eager PyTorch threads a third of 1 thread's."""
    path = Path(path)
    if (path / "xlt_export.json").exists():
        return OnnxPredictor(path, graph, batch_size, threads=threads, spinning=spinning)
    if graph:
        from xlt.errors import ConfigError

        raise ConfigError(f"--graph {graph}: {path} is a run folder (served with PyTorch); --graph picks a graph of "
                          f"an `xlt export` folder")
    from xlt.serve.torch_predictor import TorchPredictor

    return TorchPredictor(path, batch_size=batch_size, threads=threads)
