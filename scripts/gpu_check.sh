#!/usr/bin/env bash
# Run the course's device paths on a CUDA machine and keep the figures (for benchmarks/README.md).
#
#   bash scripts/gpu_check.sh [OUT_DIR]        # default OUT_DIR: gpu-check/
#
# Steps (each writes into OUT_DIR; the script goes on after a failed step and exits 1 at the end):
#   1. environment: nvidia-smi, torch and CUDA versions
#   2. the device-path tests on the real GPU (tests/test_device_paths.py, NODECOURSE_DEVICE_TESTS=real):
#      every solver, the three explorers' compute and figure paths, lesson helpers, physionet CLI
#   3. the explorers and `nodecourse physionet` on cpu and cuda side by side (scripts/gpu_check.py)
#   4. every lesson notebook executed in quick mode with cuda available (copies; the repo is untouched)
#   5. the solver benchmark on the CPU (as published) and with torch's default device set to cuda
#   6. `nodecourse physionet --device cuda` in full mode for the ODE models (the lesson's sizes)
# Copy OUT_DIR/report.md's tables, dated, into benchmarks/README.md.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu-check}
mkdir -p "$OUT/notebooks"
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || { bash scripts/setup_env.sh && PY=.venv/bin/python; }
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fail=0
step() { echo "== $1"; }

step "environment"
{ date -u; nvidia-smi || true
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available()); print(torch.cuda.get_device_name(0))"
} > "$OUT/environment.txt" 2>&1 || fail=1
cat "$OUT/environment.txt"
"$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())" \
  || { echo "torch sees no CUDA device: this script needs a GPU (see $OUT/environment.txt)"; exit 1; }

step "device-path tests on the GPU"
NODECOURSE_DEVICE_TESTS=real NODECOURSE_QUICK=1 "$PY" -m pytest tests/test_device_paths.py -q -p no:cacheprovider \
  > "$OUT/device_tests.txt" 2>&1 || fail=1
tail -5 "$OUT/device_tests.txt"

step "explorers and physionet: cpu and cuda side by side"
NODECOURSE_QUICK=1 "$PY" scripts/gpu_check.py --out "$OUT" > "$OUT/gpu_check.log" 2>&1 || fail=1
tail -40 "$OUT/gpu_check.log"

step "lesson notebooks in quick mode (cuda available)"
for nb in notebooks/[0-9][0-9]_*.ipynb; do
  name=$(basename "$nb" .ipynb)
  start=$(date +%s)
  if NODECOURSE_QUICK=1 "$PY" -m jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=1200 \
       --output-dir "$OUT/notebooks" "$nb" > "$OUT/notebooks/$name.log" 2>&1; then
    echo "$name: ok in $(( $(date +%s) - start )) s" | tee -a "$OUT/notebooks/summary.txt"
  else
    echo "$name: FAILED (see $OUT/notebooks/$name.log)" | tee -a "$OUT/notebooks/summary.txt"; fail=1
  fi
done

step "solver benchmark"
"$PY" benchmarks/bench_dopri5.py --repeats 15 > "$OUT/bench_dopri5_cpu.md" 2>&1 || fail=1
# Same script with every tensor on the GPU (torch's default device); the step controllers read
# their error norms on the host each step, which synchronises, so wall times are complete.
"$PY" -c "import runpy, sys, torch; torch.set_default_device('cuda'); sys.argv=['bench_dopri5.py','--repeats','15']; runpy.run_path('benchmarks/bench_dopri5.py', run_name='__main__')" \
  > "$OUT/bench_dopri5_cuda.md" 2>&1 || fail=1
tail -12 "$OUT/bench_dopri5_cuda.md"

step "nodecourse physionet --device cuda (full mode, ODE models)"
for model in odernn latent-ode; do
  "$PY" -m nodecourse.course.cli physionet --model "$model" --device cuda --seed 0 --json \
    > "$OUT/physionet_full_${model}_cuda.json" 2> "$OUT/physionet_full_${model}_cuda.log" || fail=1
  cat "$OUT/physionet_full_${model}_cuda.json"
done

echo "== done: figures in $OUT/ (report.md, bench_dopri5_*.md, physionet_*.json, notebooks/summary.txt); exit $fail"
exit $fail
