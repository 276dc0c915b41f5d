"""Checkpoints as safetensors + JSON only (nothing is ever unpickled).

A training checkpoint folder holds ``model.safetensors``, ``optimizer.safetensors`` (tensors of the optimizer
state and the RNG state) and ``trainer_state.json`` (step, schedule, best score, optimizer param groups).  Folders
are written under a temporary name and renamed, so an interruption never leaves a half-written checkpoint.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def _atomic_dir(target: Path, write) -> None:
    tmp = target.with_name(target.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    write(tmp)
    old = target.with_name(target.name + ".old")
    if target.exists():
        target.rename(old)
    os.replace(tmp, target)
    if old.exists():
        shutil.rmtree(old)


def save_model(model: torch.nn.Module, folder: Path) -> None:
    atomic_save(model.state_dict(), folder)


def atomic_save(state: dict[str, torch.Tensor], folder: Path) -> None:
    """``folder/model.safetensors`` holding ``state``, written whole or not at all."""
    state = {k: v.detach().cpu().contiguous() for k, v in state.items()}
    _atomic_dir(folder, lambda d: save_file(state, str(d / "model.safetensors")))


def load_model_state(model: torch.nn.Module, folder: Path) -> None:
    model.load_state_dict(load_file(str(folder / "model.safetensors")))


def save_training(folder: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler,
                  trainer_state: dict, rng_states: list[torch.Tensor] | None = None,
                  cuda_rng_states: list[torch.Tensor] | None = None) -> None:
    """``rng_states``: the torch RNG state of every process (rank order); default: this process's.
    ``cuda_rng_states``: likewise for each process's CUDA generator (runs on GPUs)."""
    model_state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    opt = optimizer.state_dict()
    states = rng_states if rng_states is not None else [torch.get_rng_state()]
    tensors = {"rng.torch": states[0].clone(), **{f"rng.torch.{rank}": s for rank, s in enumerate(states)}}
    tensors.update({f"rng.cuda.{rank}": s.cpu() for rank, s in enumerate(cuda_rng_states or [])})
    for idx, param_state in opt["state"].items():
        for key, value in param_state.items():
            tensors[f"state.{idx}.{key}"] = torch.as_tensor(value).detach().cpu().contiguous()
    meta = dict(trainer_state, param_groups=opt["param_groups"], scheduler=scheduler.state_dict())

    def write(d: Path) -> None:
        save_file(model_state, str(d / "model.safetensors"))
        save_file(tensors, str(d / "optimizer.safetensors"))
        (d / "trainer_state.json").write_text(json.dumps(meta, indent=1))

    _atomic_dir(folder, write)


def load_training(folder: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler,
                  rank: int = 0) -> dict:
    """Restore model, optimizer, scheduler and this process's torch RNG; return the trainer state dict."""
    load_model_state(model, folder)
    meta = json.loads((folder / "trainer_state.json").read_text())
    tensors = load_file(str(folder / "optimizer.safetensors"))
    state: dict[int, dict] = {}
    for name, value in tensors.items():
        if name.startswith("state.") and not name.startswith("state.rng"):
            _, idx, key = name.split(".", 2)
            state.setdefault(int(idx), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": meta.pop("param_groups")})
    scheduler.load_state_dict(meta.pop("scheduler"))
    torch.set_rng_state(tensors.get(f"rng.torch.{rank}", tensors["rng.torch"]))
    if f"rng.cuda.{rank}" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors[f"rng.cuda.{rank}"])
    return meta
