#!/usr/bin/env bash
# How the suite is run on a lent GPU machine. No network there: kornia, kornia-rs and duckdb travel as
# wheels in .whl/ (README.md of the device tool); the machine's own torch/torchvision are used.
# Usage there: bash docs/gpu-runs/run.sh SUITE_SECONDS TESTS_SECONDS [extra `conformance run` args...]
# (TESTS_K=EXPR runs only the harness tests that -k EXPR selects; SWEEP_CASES=N adds the nvJPEG sweep)
# The wheels, made here first (the machine's Python is 3.12; .whl/ is ignored by git, carried by the call):
#   echo /.whl/ >> .git/info/exclude
#   for w in kornia==0.9.0 kornia-rs duckdb; do python3 -m pip download --no-deps --only-binary=:all: \
#     --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "$w"; done
set -u
suite_s=${1:-360}; tests_s=${2:-150}; shift 2 || true
# into the interpreter's own environment, so that the harness tests' child processes see them too (installed
# with --target and PYTHONPATH, four of those tests could not import kornia); --target where it is read-only
if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl; then
  export PYTHONPATH=$PWD
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1
# the pytest11 entry point, for the harness tests' pytester runs (offline: no build isolation, no index)
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . > /tmp/editable.log 2>&1 || tail -5 /tmp/editable.log
out=${OUT:-/tmp/out}; mkdir -p "$out"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc
  python3 -c "import torch, torchvision, kornia, hypothesis, numpy; print(torch.__version__, torch.version.cuda, torchvision.__version__, kornia.__version__, hypothesis.__version__, numpy.__version__)"; } > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
python3 docs/gpu-runs/nvjpeg_repro.py 2>&1 | tee -a "$out/machine.txt"
for repro in docs/gpu-runs/repro_*.py; do timeout 60 python3 "$repro" 2>&1 | tee -a "$out/machine.txt"; done
if [ -n "${SWEEP_CASES:-}" ]; then
  timeout 200 python3 benchmarks/nvjpeg_sweep.py --cases "$SWEEP_CASES" --json "$out/nvjpeg_sweep.json" > "$out/nvjpeg_sweep.log" 2>&1
  echo "sweep exit $?"; head -c 3000 "$out/nvjpeg_sweep.log"
fi
start=$(date +%s)
timeout "$suite_s" python3 -m conformance run -p no:cacheprovider --reports-dir /tmp/reports "$@" > "$out/suite.log" 2>&1
echo "suite exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/suite.log"
run=$(readlink -f /tmp/reports/latest)
for f in summary.json summary.md index.html; do cp "$run/$f" "$out/$f" 2>/dev/null; done
(cd "$run" && tar czf "$out/outcomes.tgz" outcomes examples environment) 2>/dev/null
[ "$(stat -c %s "$out/outcomes.tgz" 2>/dev/null || echo 0)" -gt 15000000 ] && rm -f "$out/outcomes.tgz"
tail -70 "$out/suite.log"
if [ "$tests_s" -gt 0 ]; then
  start=$(date +%s)
  timeout "$tests_s" python3 -m pytest tests -p no:cacheprovider -n 14 -v -rfE ${TESTS_K:+-k "$TESTS_K"} > "$out/tests.log" 2>&1
  echo "tests exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/tests.log"
  tail -30 "$out/tests.log"
fi
