"""Where a training step makes the host wait for the device: on a GPU, reading a value back (``.item()``, ``bool()``,
``.tolist()``, a boolean mask's index) stops the host from queuing the next kernels until the device catches up.
On a CPU nothing waits, but the same calls pass through PyTorch's dispatcher, so tests can find them here."""
from __future__ import annotations

import collections
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# ops whose result size or value the host needs before it can go on
_READS = {torch.ops.aten._local_scalar_dense.default, torch.ops.aten.nonzero.default,
          torch.ops.aten.is_nonzero.default, torch.ops.aten.masked_select.default}


class HostSyncs(TorchDispatchMode):
    """Counts device -> host reads by the innermost frame outside PyTorch that caused them (``path:line``)."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: collections.Counter[str] = collections.Counter()

    def __enter__(self):
        # Tensor.tolist reads a CPU tensor's memory without the dispatcher (on a GPU it copies to the host first)
        self._tolist = torch.Tensor.tolist
        original, record = self._tolist, self._record

        def tolist(tensor):
            record()
            return original(tensor)
        torch.Tensor.tolist = tolist
        return super().__enter__()

    def __exit__(self, *exc):
        torch.Tensor.tolist = self._tolist
        return super().__exit__(*exc)

    def _record(self) -> None:
        frames = [f for f in traceback.extract_stack()[:-2] if "/torch/" not in f.filename
                  and not f.filename.endswith("host_syncs.py")]
        site = frames[-1] if frames else None
        self.sites[f"{site.filename}:{site.lineno}" if site else "?"] += 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        boolean_index = func is torch.ops.aten.index.Tensor and any(
            getattr(i, "dtype", None) == torch.bool for i in args[1] if i is not None)
        if func in _READS or boolean_index:
            self._record()
        return func(*args, **(kwargs or {}))

    def ours(self) -> dict[str, int]:
        """The reads caused by xlt's own code (``xlt/...``)."""
        return {k: v for k, v in self.sites.items() if "/xlt/" in k.replace("\\", "/")}
