#!/usr/bin/env bash
# Create (or refresh) the course's virtual environment in .venv, from the lock.
#   bash scripts/setup_env.sh          the course: what every lesson needs (make course)
#   bash scripts/setup_env.sh test     the course and the tools only the tests use (make test)
# constraints.txt is the lock (make lock writes it): every package at the version
# that executed the committed notebooks. torch is installed first, on its own,
# so that pip never pulls a multi-GB CUDA build onto a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
EXTRAS=${1:-}
case "$EXTRAS" in
  ""|test) ;;
  *) echo "[setup] unknown extra '$EXTRAS': use no argument (the course) or 'test' (the course and its tests)" >&2
     exit 2 ;;
esac
LOCK=constraints.txt
# The torch version comes from the lock, the one place it is written.
TORCH_VERSION=$(sed -n 's/^torch==\([0-9.]*\).*/\1/p' "$LOCK")
[ -n "$TORCH_VERSION" ] || { echo "[setup] $LOCK names no torch==VERSION" >&2; exit 1; }
MIN_PYTHON=$(sed -n 's/^# requires-python: >=\([0-9.]*\).*/\1/p' "$LOCK")
stamp="$VENV/.nodecourse-installed${EXTRAS:+-$EXTRAS}"

if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && [ "$stamp" -nt scripts/setup_env.sh ] \
   && [ "$stamp" -nt "$LOCK" ]; then
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
# The locked packages need this Python (a pin may have no build for an older one).
if ! "$VENV/bin/python" -c "import sys; sys.exit(sys.version_info[:3] < tuple(map(int, '${MIN_PYTHON:-3}'.split('.'))))"; then
  echo "[setup] $VENV runs Python $("$VENV/bin/python" -c 'import platform; print(platform.python_version())'), older" \
       "than the $MIN_PYTHON the locked packages ($LOCK) need: remove $VENV and run again with" \
       "PYTHON=python3.11 (or newer) make ..." >&2
  exit 1
fi
# pip byte-compiles every module it installs (about 30 s of CPU for the test extra's 17,000). Keep
# it: the grader's sandbox mounts this environment read-only and never writes bytecode, so a module
# without its .pyc is compiled again in every learner's kernel (with --no-compile, CI's grading
# tests took up to twice as long and the whole run 225 s more).
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
if [ -n "$EXTRAS" ]; then
  echo "[setup] installing nodecourse and its $EXTRAS tools at the locked versions ($LOCK)"
else
  echo "[setup] installing nodecourse at the locked versions ($LOCK)"
fi
# -c: every package at its locked version; torch==VERSION there also matches the
# +cpu build installed above, so this keeps it.
"${pip[@]}" -c "$LOCK" -e ".${EXTRAS:+[$EXTRAS]}"
touch "$stamp"
