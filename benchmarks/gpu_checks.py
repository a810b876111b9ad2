"""The checks that decide whether a lent GPU machine's run is worth reading, printed before any proof.

    python benchmarks/gpu_checks.py [--json FILE]

1. the interpreter: `sys.prefix` against `sys.base_prefix` (a venv holds its own packages; a venv made
   from it would not see them) and where torch was imported from;
2. memory: NVML's total less its reserved memory against `torch.cuda.mem_get_info()`'s total (what CUDA
   can hand out): the pre-flight's and the VRAM proof's baseline assume they agree;
3. attention: the scaled-dot-product backend the proofs pin (aiworkbook.proofs.attention) and whether it
   runs here.

Only the standard library, torch and (when present) nvidia-ml-py: it runs before the kit installs
anything. Without CUDA (the CPU dry run) it says so and still reports 1 and 3. Exit 0 always: it informs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20


def _nvml_memory(uuid: str) -> dict[str, Any]:
    """NVML's memory figures for the GPU with torch's device 0's UUID (NVML index 0 when that fails)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # no library, no driver: say so
        return {"nvml": f"not available ({type(exc).__name__}: {exc})"}
    try:
        try:
            h = pynvml.nvmlDeviceGetHandleByUUID(uuid)
        except pynvml.NVMLError:
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
        m = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
        return {
            "nvml_uuid": str(pynvml.nvmlDeviceGetUUID(h)),
            "nvml_total_bytes": int(m.total),
            "nvml_reserved_bytes": int(m.reserved),
            "nvml_used_bytes": int(m.used),
            "driver": pynvml.nvmlSystemGetDriverVersion(),
        }
    except Exception as exc:
        return {"nvml": f"query failed ({type(exc).__name__}: {exc})"}
    finally:
        pynvml.nvmlShutdown()


def checks() -> dict[str, Any]:
    import torch

    doc: dict[str, Any] = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "sys_prefix": sys.prefix,
        "sys_base_prefix": sys.base_prefix,
        "in_venv": sys.prefix != sys.base_prefix,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "torch_file": torch.__file__,
        "cuda_available": torch.cuda.is_available(),
    }
    if doc["cuda_available"]:
        # totals and reserved memory do not move with torch's context, so the order does not matter
        doc["torch_uuid"] = "GPU-" + str(torch.cuda.get_device_properties(0).uuid)
        doc.update(_nvml_memory(doc["torch_uuid"]))
        free, total = torch.cuda.mem_get_info()
        doc.update(torch_free_bytes=int(free), torch_total_bytes=int(total))
        if "nvml_total_bytes" in doc:
            doc["nvml_total_less_reserved_bytes"] = doc["nvml_total_bytes"] - doc["nvml_reserved_bytes"]
            doc["torch_total_minus_nvml_usable_mib"] = round(
                (total - doc["nvml_total_less_reserved_bytes"]) / MiB, 1
            )
    from aiworkbook.proofs.attention import attention_check

    doc["attention"] = attention_check("cuda" if doc["cuda_available"] else "cpu")
    return doc


def _print(doc: dict[str, Any]) -> None:
    print(f"check 1, interpreter: {doc['executable']} (python {doc['python']})")
    print(f"  sys.prefix      {doc['sys_prefix']}")
    print(f"  sys.base_prefix {doc['sys_base_prefix']}  (a venv: {doc['in_venv']})")
    print(f"  torch {doc['torch']} (CUDA {doc['torch_cuda']}) from {doc['torch_file']}")
    if not doc["cuda_available"]:
        print("check 2, memory: no CUDA here (torch.cuda.is_available() is False)")
    elif "nvml_total_bytes" in doc:
        print(
            f"check 2, memory: NVML total {doc['nvml_total_bytes'] / MiB:.0f} MiB less reserved "
            f"{doc['nvml_reserved_bytes'] / MiB:.0f} MiB = {doc['nvml_total_less_reserved_bytes'] / MiB:.0f} MiB; "
            f"torch.cuda.mem_get_info() total {doc['torch_total_bytes'] / MiB:.0f} MiB, free "
            f"{doc['torch_free_bytes'] / MiB:.0f} MiB (torch - NVML: {doc['torch_total_minus_nvml_usable_mib']} MiB)"
        )
    else:
        print(f"check 2, memory: {doc.get('nvml')}; torch total {doc['torch_total_bytes'] / MiB:.0f} MiB")
    a = doc["attention"]
    print(f"check 3, attention: {a['backend']} ({a['detail']}); policy {' > '.join(a['policy'])}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None, help="also write the checks here")
    args = ap.parse_args(argv)
    doc = checks()
    _print(doc)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
