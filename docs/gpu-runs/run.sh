#!/usr/bin/env bash
# How the suite was run on a lent GPU machine (no network there: kornia travels as wheels in .whl/).
# Usage there: bash docs/gpu-runs/run.sh SUITE_SECONDS TESTS_SECONDS [extra run args...]
set -u
suite_s=${1:-360}; tests_s=${2:-150}; shift 2 || true
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}; mkdir -p "$out"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc
  python3 -c "import torch, torchvision, kornia, hypothesis, numpy; print(torch.__version__, torch.version.cuda, torchvision.__version__, kornia.__version__, hypothesis.__version__, numpy.__version__)"; } > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
python3 docs/gpu-runs/nvjpeg_repro.py > "$out/repro.log" 2>&1; cat "$out/repro.log"
if [ -n "${SWEEP_CASES:-}" ]; then
  timeout 200 python3 benchmarks/nvjpeg_sweep.py --cases "$SWEEP_CASES" --json "$out/nvjpeg_sweep.json" > "$out/nvjpeg_sweep.log" 2>&1
  echo "sweep exit $?"; head -c 3000 "$out/nvjpeg_sweep.log"
fi
start=$(date +%s)
timeout "$suite_s" python3 -m conformance run -p no:cacheprovider -n 12 --reports-dir /tmp/reports "$@" > "$out/suite.log" 2>&1
echo "suite exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/suite.log"
run=$(readlink -f /tmp/reports/latest)
cp "$run/summary.json" "$out/summary.json" 2>/dev/null
(cd /tmp/reports && tar czf "$out/run.tgz" "$(basename "$run")") 2>/dev/null
[ "$(stat -c %s "$out/run.tgz" 2>/dev/null || echo 0)" -gt 15000000 ] && rm -f "$out/run.tgz"
tail -60 "$out/suite.log"
if [ "$tests_s" -gt 0 ]; then
  start=$(date +%s)
  timeout "$tests_s" python3 -m pytest tests -p no:cacheprovider -n 12 -q -k "virtual or placement or targets or faults" > "$out/tests.log" 2>&1
  echo "tests exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/tests.log"
  tail -40 "$out/tests.log"
fi
