#!/usr/bin/env bash
# Run `make gpu-proof` on a lent GPU machine that has no network: the machine's own python3 (with its
# CUDA torch), the carried wheels from tools/device_wheels.sh, the project from the working tree.
# One device call:  run(command="bash tools/gpu_proof_device.sh", carry=[".whl"], timeout_s=590)
# Results come back as $OUT/gpu-proof.tar.gz plus summary.json and the log; unpack them into
# data/reference-runs/<gpu>/ and commit.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-./gpu-proof-results}"
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:${PWD}${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="${PWD}${PYTHONPATH:+:$PYTHONPATH}"
fi
nvidia-smi -L 2>&1 | tee "$OUT/nvidia-smi-L.txt"
python3 -c "import torch, pydantic; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
# the serving load generator's own overhead on this machine's cores (about 10 s, outside the proofs'
# 8 minutes): the 2-core CPU VM misses its 1 ms bar at 64 streams (docs/serving.md, Benchmark)
timeout 60 python3 benchmarks/bench_serving.py --harness --json "$OUT/bench-serving-harness.json" 2>&1 \
  | tee "$OUT/bench-serving-harness.log"
python3 benchmarks/gpu_proof.py --out /tmp/gpu-proof --bundle "$OUT/gpu-proof.tar.gz" 2>&1 | tee "$OUT/gpu-proof.log"
rc=${PIPESTATUS[0]}
cp /tmp/gpu-proof/summary.json "$OUT/" 2>/dev/null
exit "$rc"
