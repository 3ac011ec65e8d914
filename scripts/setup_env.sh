#!/usr/bin/env bash
# Create (or refresh) the course's virtual environment in .venv.
# torch is installed first and pinned, so that pip never pulls a multi-GB
# CUDA build onto a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
# The torch version comes from constraints.txt, the one place it is written.
TORCH_VERSION=$(sed -n 's/^torch==\([0-9.]*\).*/\1/p' constraints.txt)
[ -n "$TORCH_VERSION" ] || { echo "[setup] constraints.txt names no torch==VERSION" >&2; exit 1; }
stamp="$VENV/.nodecourse-installed"

if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && [ "$stamp" -nt scripts/setup_env.sh ] \
   && [ "$stamp" -nt constraints.txt ]; then
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)

if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
  if [ "$(uname -s)" = Darwin ]; then
    echo "[setup] macOS: installing torch==$TORCH_VERSION (CPU and MPS)"
    "${pip[@]}" "torch==$TORCH_VERSION"
  elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "[setup] GPU found: installing torch==$TORCH_VERSION (CUDA build)"
    "${pip[@]}" "torch==$TORCH_VERSION"
  else
    echo "[setup] no GPU: installing the CPU build of torch==$TORCH_VERSION"
    # The CPU build from pip's configured sources (a local wheel here) first,
    # PyTorch's CPU index otherwise; never PyPI's default (CUDA) build.
    "${pip[@]}" "torch==$TORCH_VERSION+cpu" 2>/dev/null \
      || "${pip[@]}" "torch==$TORCH_VERSION+cpu" --index-url https://download.pytorch.org/whl/cpu \
           --extra-index-url https://pypi.org/simple
  fi
fi
echo "[setup] installing nodecourse and its test dependencies"
# The constraints keep every later install on the same torch.
"${pip[@]}" -c constraints.txt -e ".[test]"
touch "$stamp"
