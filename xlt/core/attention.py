"""Which attention kernels xlt lets PyTorch pick on a CUDA GPU.

On Hopper GPUs (H100, H200) PyTorch's ``scaled_dot_product_attention`` prefers cuDNN's fused attention, which builds
an execution plan for every new input shape — tens of milliseconds of CPU time per call.  xlt's batches have a new
shape nearly every step (length-bucketed, dynamic padding; back-translation and generation lengths vary), so the
GPU waits on those plans: on an H200 (torch 2.11, ``benchmarks/profile_steps.py`` at commit 3d3baa3, xSID
fine-tuning, batch 512, bf16) ``_cudnn_attention_forward`` / ``_backward`` took 27.7 / 19.7 ms of CPU per call, 82 %
of a step's CPU time, while the GPU was busy for 0.35 s of a 15 s run.  The same run's TALL pre-training spent about
1 s per step at batch 320.  PyTorch's flash and memory-efficient kernels need no per-shape plan, so xlt turns the
cuDNN backend off wherever it places a model on a GPU (training and inference).  A program that wants cuDNN attention
back calls ``torch.backends.cuda.enable_cudnn_sdp(True)`` after xlt has set up its device.
"""
from __future__ import annotations

import torch


def configure_cuda_attention() -> None:
    """Turn off PyTorch's cuDNN scaled-dot-product-attention backend when a CUDA GPU is present (see above)."""
    if torch.cuda.is_available():
        torch.backends.cuda.enable_cudnn_sdp(False)
