"""xlt: cross-lingual transfer of natural-language-understanding models.

The Python API (``xlt.api``): ``xlt.train``, ``xlt.evaluate``, ``xlt.pretrain``, ``xlt.export``, ``xlt.load``
(-> ``Model.predict``), ``xlt.Run``; errors ``xlt.XltError`` / ``xlt.ConfigError`` / ``xlt.DataError``.  Imported on
first use, so ``import xlt`` stays light (the CLI and the ONNX server do not load torch through it)."""
__version__ = "0.1.0"

_API = ("train", "evaluate", "pretrain", "export", "load", "Run", "Model")
_ERRORS = ("XltError", "ConfigError", "DataError")
__all__ = [*_API, *_ERRORS]


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


def __getattr__(name: str):
    if name in _API:
        from xlt import api

        return getattr(api, name)
    if name in _ERRORS:
        from xlt import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'xlt' has no attribute {name!r}")
