#!/usr/bin/env bash
# Run `make gpu-proof` on a lent GPU machine that has no network: tools/gpu_proof.sh with the machine's
# own python3 (its CUDA torch), the carried wheels from tools/device_wheels.sh, the project from the
# working tree. One device call:  run(command="bash tools/gpu_proof_device.sh", carry=[".whl"], timeout_s=590)
# Everything lands in $OUT as it is made (each proof's JSON and summary.json after every step), so
# whatever stops the call keeps what was measured; the whole script ends by DEVICE_LIMIT_S (570 s).
# Unpack $OUT into data/reference-runs/<gpu>/ and commit.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
start=$SECONDS
OUT="${OUT:-./gpu-proof-results}"
LIMIT="${DEVICE_LIMIT_S:-570}"
mkdir -p "$OUT"
nvidia-smi -L 2>&1 | tee "$OUT/nvidia-smi-L.txt"
GPU_PYTHON=python3 GPU_PROOF_LIMIT_S=$((LIMIT - (SECONDS - start) - 80)) OUT="$OUT/gpu-proof" \
  bash tools/gpu_proof.sh --bundle "$OUT/gpu-proof.tar.gz" 2>&1 | tee "$OUT/gpu-proof.log"
rc=${PIPESTATUS[0]}
# the serving load generator's own overhead on this machine's cores (about 10 s), when time is left
left=$((LIMIT - (SECONDS - start) - 5))
HPY=python3
if [ -x .venv-gpu/bin/python ]; then HPY=.venv-gpu/bin/python; fi  # where gpu_proof.sh installed aiohttp
if [ "$left" -gt 20 ]; then
  PYTHONPATH="$PWD:$PWD/.gpu-site${PYTHONPATH:+:$PYTHONPATH}" timeout "$((left < 60 ? left : 60))" \
    "$HPY" benchmarks/bench_serving.py --harness --json "$OUT/bench-serving-harness.json" 2>&1 \
    | tee "$OUT/bench-serving-harness.log"
fi
exit "$rc"
