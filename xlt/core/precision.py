"""Which autocast precision a run trains in: ``mixed_precision: auto`` chooses bf16 where the hardware multiplies
bf16 natively and fp32 elsewhere (measured: bf16 autocast on an ``avx512_bf16`` CPU trains 1.44x the
Hugging Face Trainer's fp32 default, xSID accuracy within the seed spread; docs/benchmarks/training-speed.md)."""
from __future__ import annotations

from pathlib import Path

import torch


def cpu_multiplies_bf16() -> bool:
    """Whether this CPU has bf16 matrix instructions (``avx512_bf16`` or AMX: Intel Cooper Lake / Sapphire Rapids
    on, AMD Zen 4 on), read from /proc/cpuinfo; False where that file is missing (macOS, Windows: fp32 is safe)."""
    try:
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        return False
    return bool({"avx512_bf16", "amx_bf16"} & set(flags.split()))


def resolve_precision(mixed_precision: str) -> str:
    """``auto`` -> "bf16" where the device multiplies bf16 natively (a CUDA GPU with bf16, a CPU per
    ``cpu_multiplies_bf16``), else "fp32"; any other value as it is."""
    if mixed_precision != "auto":
        return mixed_precision
    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_multiplies_bf16() else "fp32"
