"""A real fleet on loopback for the fleet-view tests: two `aiworkbook monitor --serve` endpoints replaying
different constant traces (two "nodes"), scraped every second by Debian's Prometheus started with a
temporary configuration and temporary storage. Everything binds to 127.0.0.1; every wait is bounded;
`close()` ends every process it started."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROMETHEUS = "/usr/bin/prometheus"
WAIT_S = 60.0  # the most any start-up or first data may take

#: what each node's GPU 0 reports, constant over its trace (field -> value in the project's unit)
NODES: dict[str, dict[str, float]] = {
    "a": {"util_gpu_pct": 17.0, "mem_used_bytes": 10 * 2**30, "power_w": 150.0, "temp_gpu_c": 41.0},
    "b": {"util_gpu_pct": 83.0, "mem_used_bytes": 60 * 2**30, "power_w": 610.0, "temp_gpu_c": 72.0},
}


def prometheus_binary() -> str | None:
    """Debian's prometheus, installed with apt-get when missing and this is root (as `make test` does);
    None when it is absent and cannot be installed here."""
    if Path(PROMETHEUS).exists():
        return PROMETHEUS
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        try:
            subprocess.run(
                ["apt-get", "install", "-y", "-qq", "prometheus"], env=env, timeout=300, capture_output=True
            )
        except (OSError, subprocess.TimeoutExpired):
            pass
    return PROMETHEUS if Path(PROMETHEUS).exists() else None


def free_port() -> int:
    from aiworkbook.cli.app_cmds import free_port as _free

    return _free("127.0.0.1")


def write_trace(path: Path, node: str) -> Path:
    """A short constant trace for `node` (its own GPU identity), labelled as what it is: synthetic."""
    from aiworkbook.telemetry.export import to_jsonl
    from aiworkbook.telemetry.sample import Sample

    values = NODES[node]
    total = 80 * 2**30
    gpu = {
        "index": 0,
        **values,
        "mem_total_bytes": total,
        "mem_free_bytes": total - int(values["mem_used_bytes"]),
    }
    header = {
        "source": "synthetic",
        "gpu": f"Test GPU {node}",
        "recorded_at": "2026-01-01T00:00:00+00:00",
        "interval_s": 1.0,
        "gpu_status": "synthetic",
        "gpus": [{"index": 0, "name": f"Test GPU {node}", "uuid": f"GPU-test-{node}"}],
        "capabilities": [],
        "host": {"hostname": f"node-{node}", "os": "test"},
        "note": "SYNTHETIC: constant values for the fleet-view tests",
        "label": f"synthetic trace (not measured), node {node}",
    }
    samples = [Sample(t=float(i), wall=1767225600.0 + i, gpus=(dict(gpu),)) for i in range(3)]
    return to_jsonl(samples, path, header)


def _get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (loopback test servers)
            return r.status, r.read()
    except OSError:
        return 0, b""


def wait_for(predicate: Any, what: str, timeout: float = WAIT_S, every: float = 0.5) -> Any:
    """`predicate()`'s first truthy answer within `timeout` seconds, else AssertionError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(every)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@dataclass
class Fleet:
    tmp: Path
    binary: str
    exporters: dict[str, tuple[subprocess.Popen, str]] = field(
        default_factory=dict
    )  # node -> (proc, host:port)
    prometheus: subprocess.Popen | None = None
    url: str = ""

    def start_exporter(self, node: str) -> str:
        trace = write_trace(self.tmp / f"trace-{node}.jsonl", node)
        port = free_port()
        argv = [sys.executable, "-m", "aiworkbook", "monitor", "--serve", f"127.0.0.1:{port}"]
        argv += ["--replay", str(trace), "--no-host", "--quiet", "--interval", "0.5"]
        log = open(self.tmp / f"exporter-{node}.log", "wb")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        target = f"127.0.0.1:{port}"
        self.exporters[node] = (proc, target)
        wait_for(
            lambda: b"DCGM_FI_DEV_GPU_UTIL" in _get(f"http://{target}/metrics")[1] or proc.poll() is not None,
            f"the exporter of node {node}",
        )
        assert proc.poll() is None, (self.tmp / f"exporter-{node}.log").read_text()
        return target

    def start_prometheus(self) -> str:
        # each target also carries a `node` label, as a Kubernetes relabelling would (reader: node_label="node")
        static = [
            {"targets": [t], "labels": {"node": f"gpu-node-{n}"}} for n, (_p, t) in self.exporters.items()
        ]
        config = self.tmp / "prometheus.yml"
        config.write_text(
            json.dumps(  # YAML is a superset of JSON
                {
                    "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
                    "scrape_configs": [{"job_name": "aiworkbook", "static_configs": static}],
                }
            )
        )
        port = free_port()
        argv = [
            self.binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={self.tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=1h",
            "--log.level=warn",
        ]
        log = open(self.tmp / "prometheus.log", "wb")  # noqa: SIM115 (closed with the process)
        self.prometheus = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp)
        log.close()
        self.url = f"http://127.0.0.1:{port}"
        proc = self.prometheus
        wait_for(lambda: _get(f"{self.url}/-/ready")[0] == 200 or proc.poll() is not None, "Prometheus ready")
        assert proc.poll() is None, (self.tmp / "prometheus.log").read_text()[-3000:]
        return self.url

    def stop_exporter(self, node: str) -> None:
        stop(self.exporters[node][0])

    def close(self) -> None:
        for proc, _t in self.exporters.values():
            stop(proc)
        if self.prometheus is not None:
            stop(self.prometheus)
