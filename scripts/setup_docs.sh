#!/usr/bin/env bash
# The documentation toolchain, pinned, into .venv (after scripts/setup.sh): MkDocs (BSD-2), Material for MkDocs
# (MIT), mkdocstrings + its Python handler (ISC). Then: .venv/bin/mkdocs serve | .venv/bin/mkdocs build --strict
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
.venv/bin/python -m pip install -q "mkdocs==1.6.1" "mkdocs-material==9.8.2" "mkdocstrings==1.0.8" \
  "mkdocstrings-python==2.0.11" 2>&1 | grep -v -i "warning" || true
.venv/bin/python -c "import mkdocs, material, mkdocstrings; print('docs setup ok: mkdocs', mkdocs.__version__)"
