#!/usr/bin/env bash
# Download, here, the wheels the lent GPU machine lacks, for its Python:
#   bash tools/device_wheels.sh [PYVER] [DEST]      # PYVER default 3.12 (the lent machine's), DEST .whl
# Its python3 has torch, numpy, typer, tqdm, psutil, nvidia-ml-py, pandas, safetensors, but not
# pydantic, nor aiohttp for the serving proof's embedded server and load generator, nor Babel for
# the messages' catalogues. The wheels land
# in DEST (.whl/ is ignored by git) and travel with the device call's `carry: [".whl"]`;
# tools/gpu_proof.sh installs them with `pip install --target .gpu-site --no-index`.
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER="${1:-3.12}"
DEST="${2:-.whl}"
if ! [[ "$PYVER" =~ ^3\.[0-9]+$ ]]; then
  echo "device_wheels: PYVER must look like 3.12 (the target machine's python3 --version), not '$PYVER'" >&2
  exit 2
fi
get() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$DEST" "$@"
}
rm -rf "$DEST" && mkdir -p "$DEST"
get "pydantic==2.*" "pydantic-core" "annotated-types" "typing-inspection" "typing-extensions>=4.16" \
  "aiohttp>=3.9" "aiohappyeyeballs>=2.5" "aiosignal>=1.4" "attrs>=17.3" "frozenlist>=1.1.1" \
  "multidict>=4.5,<8" "propcache>=0.2.1" "yarl>=1.17,<2" "idna>=2.0" "babel>=2.12"
# pydantic pins one pydantic-core version: keep only the one it asks for
want=$(unzip -p "$DEST"/pydantic-2*.whl '*/METADATA' | sed -n 's/^Requires-Dist: pydantic-core==\([0-9.]*\).*/\1/p')
if [ -n "$want" ] && ! ls "$DEST"/pydantic_core-"$want"-* >/dev/null 2>&1; then
  rm -f "$DEST"/pydantic_core-*
  get "pydantic-core==$want"
fi
ls -1 "$DEST"
