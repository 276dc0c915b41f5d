"""Mixed precision (``train.mixed_precision``) and devices: the training loss runs under autocast in the asked
dtype, weights and checkpoints stay fp32, an interrupted run resumes to the identical result, fp16 without CUDA and
more processes than GPUs are user errors.  On a CPU this covers bf16; on a CUDA machine the same tests cover fp16
(and its loss-scaler state) too."""
import json

import pytest
import torch
from safetensors.torch import load_file

from xlt.errors import XltError
from xlt.methods import Method
from xlt.finetune import train

CUDA = torch.cuda.is_available()
PRECISIONS = ["bf16", "fp16"] if CUDA else ["bf16"]


@pytest.fixture
def deterministic():
    """Bit-exact comparisons on a GPU need deterministic kernels (CUDA's embedding backward adds atomically)."""
    if not CUDA:
        yield
        return
    import os

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_loss_runs_under_autocast_and_weights_stay_fp32(tiny_cfg, monkeypatch, precision):
    seen = []
    original = Method.loss

    def spy(self, model, batch):
        device = "cuda" if CUDA else "cpu"
        seen.append((torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)))
        return original(self, model, batch)

    monkeypatch.setattr(Method, "loss", spy)
    run = train(tiny_cfg(f"name={precision}", "train.max_steps=4", "train.eval_every=2",
                         f"train.mixed_precision={precision}"))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    assert seen and all(enabled and d == dtype for enabled, d in seen)
    summary = json.loads((run / "train_summary.json").read_text())
    assert summary["mixed_precision"] == precision
    assert all(v.dtype == torch.float32 for v in load_file(str(run / "best" / "model.safetensors")).values()
               if v.is_floating_point())
    log = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert all(torch.isfinite(torch.tensor(r["loss"])) for r in log)
    state = json.loads((run / "last" / "trainer_state.json").read_text())
    assert ("grad_scaler" in state) == (precision == "fp16")  # fp16's dynamic loss scale is resumed too


@pytest.mark.parametrize("precision", PRECISIONS)
def test_mixed_precision_resume_reaches_identical_parameters(tiny_cfg, deterministic, precision):
    common = ("train.max_steps=6", "train.eval_every=2", f"train.mixed_precision={precision}")
    straight = train(tiny_cfg("name=straight", *common))
    cfg = tiny_cfg("name=interrupted", *common)
    train(cfg, stop_after=3)
    train(cfg, resume=True)
    a = load_file(str(straight / "last" / "model.safetensors"))
    b = load_file(str(cfg.run_dir / "last" / "model.safetensors"))
    for k in a:
        assert torch.equal(a[k], b[k]), k


@pytest.mark.skipif(CUDA, reason="fp16 is allowed on a CUDA machine")
def test_fp16_without_cuda_is_a_user_error(tiny_cfg):
    with pytest.raises(XltError, match="fp16 needs a CUDA GPU"):
        train(tiny_cfg("name=fp16", "train.max_steps=2", "train.mixed_precision=fp16"))


def test_unknown_precision_is_a_config_error(tiny_cfg):
    assert tiny_cfg("train.mixed_precision=fp32").train.mixed_precision == "fp32"
    for bad in ("fp8", "no"):  # YAML reads a bare no as false: the default is spelled fp32
        with pytest.raises(XltError, match="mixed_precision"):
            tiny_cfg(f"train.mixed_precision={bad}")


def test_one_process_may_switch_precision_between_runs():
    from xlt.core.loop import make_accelerator

    assert make_accelerator("bf16").mixed_precision == "bf16"
    assert make_accelerator("fp32").mixed_precision == "no"


def test_a_stage_trains_in_mixed_precision_and_exports_fp32(tmp_path, xlt_home):
    from tests.conftest import write_lines
    from tests.test_stages import LINES, stage_cfg
    from xlt.stages import run_stage

    corpus = tmp_path / "data"
    write_lines(corpus / "mono" / "xx" / "a.txt", LINES * 6)
    out = run_stage(stage_cfg(corpus, tmp_path, "mixed_precision=bf16"))
    results = json.loads((out.parent / "results.json").read_text())
    assert [p["summary"]["mixed_precision"] for p in results["phases"]] == ["bf16", "bf16"]
    assert all(v.dtype == torch.float32 for v in load_file(str(out / "model.safetensors")).values()
               if v.is_floating_point())


def test_more_processes_than_gpus_is_a_user_error(monkeypatch):
    from xlt.core.loop import make_accelerator

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    with pytest.raises(XltError, match="2 processes on this machine but 1 GPU"):
        make_accelerator()


def test_cuda_attention_leaves_out_cudnn(monkeypatch):
    """On a GPU, training (make_accelerator) and inference (inference_device) turn cuDNN attention off: it plans
    every new batch shape (xlt/core/attention.py).  Without a GPU nothing is touched."""
    from xlt.core.batching import inference_device
    from xlt.core.loop import make_accelerator

    calls = []
    monkeypatch.setattr(torch.backends.cuda, "enable_cudnn_sdp", calls.append)
    make_accelerator("fp32")
    assert calls == ([False] if CUDA else [])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert inference_device() == torch.device("cuda") and calls[-1] is False


@pytest.mark.skipif(CUDA, reason="on a CUDA machine auto follows the GPU")
@pytest.mark.parametrize("flags, chosen", [("fpu sse2 avx2 avx512f", "fp32"), ("fpu avx512f avx512_bf16", "bf16"),
                                           ("fpu avx2 amx_bf16 amx_tile", "bf16")])
def test_auto_precision_is_bf16_only_where_the_cpu_multiplies_bf16(tiny_cfg, monkeypatch, tmp_path, flags, chosen):
    from xlt.core import precision

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    real_path = precision.Path
    monkeypatch.setattr(precision, "Path", lambda p: cpuinfo if p == "/proc/cpuinfo" else real_path(p))
    assert precision.resolve_precision("auto") == chosen and precision.resolve_precision("fp32") == "fp32"
    run = train(tiny_cfg(f"name=auto-{chosen}", "train.max_steps=2", "train.eval_every=2",
                         "train.mixed_precision=auto"))
    assert json.loads((run / "train_summary.json").read_text())["mixed_precision"] == chosen  # what ran
