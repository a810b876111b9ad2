#!/usr/bin/env bash
# Download, here, the wheels the lent GPU machine lacks (its python3 3.12 has torch, numpy, typer,
# tqdm, psutil, nvidia-ml-py, pandas, safetensors, but not pydantic, nor aiohttp for the serving proof's
# embedded server and load generator). They land in .whl/ (ignored by
# git) and travel with the device call's `carry: [".whl"]`; tools/gpu_proof_device.sh installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .whl && mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl "pydantic==2.*" "pydantic-core" "annotated-types" "typing-inspection" "typing-extensions>=4.16" \
  "aiohttp>=3.9" "aiohappyeyeballs>=2.5" "aiosignal>=1.4" "attrs>=17.3" "frozenlist>=1.1.1" \
  "multidict>=4.5,<8" "propcache>=0.2.1" "yarl>=1.17,<2" "idna>=2.0"
# pydantic pins one pydantic-core version: keep only the one it asks for
want=$(unzip -p .whl/pydantic-2*.whl '*/METADATA' | sed -n 's/^Requires-Dist: pydantic-core==\([0-9.]*\).*/\1/p')
if [ -n "$want" ] && ! ls .whl/pydantic_core-"$want"-* >/dev/null 2>&1; then
  rm -f .whl/pydantic_core-*
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "pydantic-core==$want"
fi
ls -1 .whl
