#!/usr/bin/env bash
# Run `make gpu-proof` on a lent GPU machine that has no network, and bring everything back in four
# files. One device call:
#   run(command="bash tools/gpu_proof_device.sh", carry=[".whl"], timeout_s=590)
# (.whl/ from `bash tools/device_wheels.sh 3.12` here). `--dry-run` (and any other argument) goes on to
# benchmarks/gpu_proof.py: the same script end to end on the CPU (tests/test_gpu_kit_offline.py).
#
# Order: the checks that decide whether the rest is worth reading (benchmarks/gpu_checks.py: sys.prefix
# against sys.base_prefix, NVML total less reserved against torch.cuda.mem_get_info(), the attention
# backend), then every proof (tools/gpu_proof.sh with $GPU_PYTHON, default python3: the machine's own
# interpreter and CUDA torch, the missing packages installed with --target into .gpu-site), then the
# serving harness's overhead on this machine's cores with the same interpreter and PYTHONPATH.
#
# A device call brings back at most 8 files, each under 16 MiB, no deeper than two folders; this
# leaves exactly four, directly under $OUT: summary.json (the proofs' summary), gpu-proof.tar.gz
# (everything: each proof's JSON, the checks, the trace, the harness rows, the log so far),
# gpu-proof.log (all output), nvidia-smi-q.txt (nvidia-smi -q, or why there is none). Everything is
# measured into $GPU_PROOF_WORK (default ./gpu-proof-work) and packed at the end; the whole script ends
# by DEVICE_LIMIT_S (570 s). Unpack the tar.gz into data/reference-runs/<gpu>/ and commit.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
start=$SECONDS
OUT="${OUT:-./gpu-proof-results}"
WORK="${GPU_PROOF_WORK:-./gpu-proof-work}"
LIMIT="${DEVICE_LIMIT_S:-570}"
PY="${GPU_PYTHON:-python3}"
SITE="${GPU_PROOF_SITE:-$PWD/.gpu-site}"
MAX_BYTES=$((16 * 1024 * 1024))
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
LOG="$OUT/gpu-proof.log"
: >"$LOG"
say() { "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }

say nvidia-smi -L
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" say "$PY" benchmarks/gpu_checks.py --json "$WORK/checks.json"
GPU_PYTHON="$PY" GPU_PROOF_SITE="$SITE" GPU_PROOF_LIMIT_S=$((LIMIT - (SECONDS - start) - 80)) \
  OUT="$WORK/gpu-proof" say bash tools/gpu_proof.sh "$@"
rc=$?
# the serving load generator's own overhead on this machine's cores (about 10 s), when time is left
left=$((LIMIT - (SECONDS - start) - 15))
if [ "$left" -gt 20 ]; then
  PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}" say timeout "$((left < 60 ? left : 60))" \
    "$PY" benchmarks/bench_serving.py --harness --json "$WORK/bench-serving-harness.json"
fi

# the four files
if [ -f "$WORK/gpu-proof/summary.json" ]; then
  cp "$WORK/gpu-proof/summary.json" "$OUT/summary.json"
else
  printf '{"complete": false, "error": "gpu_proof.sh wrote no summary (exit %s); see gpu-proof.log"}\n' \
    "$rc" >"$OUT/summary.json"
fi
if [ -f "$WORK/gpu-proof/nvidia-smi-q.txt" ]; then
  cp "$WORK/gpu-proof/nvidia-smi-q.txt" "$OUT/nvidia-smi-q.txt"
elif command -v nvidia-smi >/dev/null 2>&1; then
  timeout 10 nvidia-smi -q >"$OUT/nvidia-smi-q.txt" 2>&1
else
  echo "nvidia-smi not found on this machine (no NVIDIA driver: a CPU dry run)" >"$OUT/nvidia-smi-q.txt"
fi
cp "$LOG" "$WORK/gpu-proof.log"
tar -czf "$OUT/gpu-proof.tar.gz" -C "$WORK" .
if [ "$(stat -c %s "$OUT/gpu-proof.tar.gz")" -ge "$MAX_BYTES" ]; then  # the telemetry trace is the bulk
  say echo "gpu-proof: the bundle passes 16 MiB; packed again without trace.jsonl"
  tar -czf "$OUT/gpu-proof.tar.gz" --exclude=trace.jsonl -C "$WORK" .
fi
for f in "$OUT"/*; do
  if [ "$(stat -c %s "$f")" -ge "$MAX_BYTES" ]; then say echo "gpu-proof: $f passes 16 MiB: it will not come back"; fi
done
say echo "gpu-proof-device: exit $rc in $((SECONDS - start)) s; $OUT holds: $(cd "$OUT" && ls | tr '\n' ' ')"
exit "$rc"
