#!/usr/bin/env bash
# `make gpu-proof`: every proof on this machine's own CUDA torch, offline, inside a time limit.
#
# Python: $GPU_PYTHON, else the first of python3/python that imports torch (the machine's CUDA build;
# the kit never installs a torch). It is used as it is, whatever it is (a system python, a conda env, a
# venv): the kit never makes a venv from it, because a venv made from a venv sees the base interpreter's
# packages, not the parent venv's, and torch would vanish. Packages: only the proofs'
# (benchmarks/gpu_proof.py PROOF_DEPS), and only those missing, with `pip install --target` into
# $GPU_PROOF_SITE (default .gpu-site), which goes on PYTHONPATH; from carried wheels in $GPU_PROOF_WHEELS
# (default .whl, made by tools/device_wheels.sh) with --no-index when they are there, else from the
# index. The project runs from this tree (PYTHONPATH), not installed. Time: the whole run, set-up
# included, ends by GPU_PROOF_LIMIT_S (default 540 s) less GPU_PROOF_MARGIN_S (default 30 s): the
# proofs get what is left as their budget, under a `timeout` that interrupts (SIGINT: the script writes
# what it measured), then kills. summary.json is rewritten after every step, so it survives the kill.
# Extra arguments go to benchmarks/gpu_proof.py (e.g. --only vram-smoke, --dry-run).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
OUT="${OUT:-./gpu-proof-results}"
LIMIT_S="${GPU_PROOF_LIMIT_S:-540}"
MARGIN_S="${GPU_PROOF_MARGIN_S:-30}"
SITE="${GPU_PROOF_SITE:-$PWD/.gpu-site}"
WHEELS="${GPU_PROOF_WHEELS:-.whl}"

PY=""
for cand in "${GPU_PYTHON:-}" python3 python; do
  if [ -n "$cand" ] && command -v "$cand" >/dev/null 2>&1 && "$cand" -c "import torch" 2>/dev/null; then
    PY="$cand"
    break
  fi
done
if [ -z "$PY" ]; then
  echo "gpu-proof: no python here imports torch; install this machine's CUDA build of torch first" \
    "(e.g. make install TORCH_INDEX=--index-url https://download.pytorch.org/whl/cu128)" >&2
  exit 1
fi
export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
missing=$("$PY" benchmarks/gpu_proof.py --missing)
if [ -n "$missing" ]; then
  src=()
  if ls "$WHEELS"/*.whl >/dev/null 2>&1; then src=(--no-index --find-links "$WHEELS"); fi
  echo "gpu-proof: installing the proofs' missing packages into $SITE: $(echo $missing)" \
    "(${src[*]:-from the package index})"
  # shellcheck disable=SC2086  # one requirement per word
  if ! "$PY" -m pip install -q --no-cache-dir --disable-pip-version-check --target "$SITE" "${src[@]}" \
    $missing; then
    echo "gpu-proof: could not install $(echo $missing); without network, run tools/device_wheels.sh" \
      "where there is one and bring .whl/ along" >&2
    exit 1
  fi
  missing=$("$PY" benchmarks/gpu_proof.py --missing)
  if [ -n "$missing" ]; then
    echo "gpu-proof: installed, yet $PY still cannot import: $(echo $missing)" >&2
    exit 1
  fi
fi
left=$((LIMIT_S - (SECONDS - start) - MARGIN_S))
if [ "$left" -lt 60 ]; then
  echo "gpu-proof: ${left} s left of GPU_PROOF_LIMIT_S=${LIMIT_S} after set-up: too little to prove anything" >&2
  exit 1
fi
echo "gpu-proof: $PY ($("$PY" -c 'import sys, torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "prefix", sys.prefix, "base", sys.base_prefix)')), budget ${left} s"
# the script's own budget ends the run; SIGINT 10 s after it, SIGKILL 15 s later: within the margin
timeout -s INT -k 15 $((left + 10)) "$PY" benchmarks/gpu_proof.py --out "$OUT" --budget-s "$left" "$@"
