"""A Prometheus/OpenMetrics text endpoint for the latest sample, with dcgm-exporter's metric names
and labels (gpu, UUID, device, modelName, Hostname), so a fleet's existing Prometheus and Grafana
dashboards scrape this node as if it ran dcgm-exporter. Metrics that are NA are left out, which is
what Prometheus expects of a missing series. Host metrics use the `aiworkbook_host_` prefix.
"""

from __future__ import annotations

import platform
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric, UnknownMetricFamily

from aiworkbook.errors import SpecError
from aiworkbook.telemetry.exposition import CONTENT_TYPE, label_value, registry, text
from aiworkbook.telemetry.na import is_number
from aiworkbook.telemetry.sample import Sample
from aiworkbook.units import MiB

#: (dcgm-exporter name, type, help, sample field, scale)
GPU_METRICS: tuple[tuple[str, str, str, str, float], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "sm_clock_mhz", 1),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", "mem_clock_mhz", 1),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "temp_gpu_c", 1),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power_w", 1),
    ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Enforced power limit (in W).", "power_limit_w", 1),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", "energy_mj", 1),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "util_gpu_pct", 1),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "util_mem_pct", 1),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "mem_free_bytes", 1 / MiB),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "mem_used_bytes", 1 / MiB),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", "mem_reserved_bytes", 1 / MiB),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge", "Current clock throttle reasons (bit mask).", "throttle_mask", 1),
    ("DCGM_FI_DEV_PSTATE", "gauge", "Performance state (0 fastest).", "pstate", 1),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Volatile single-bit ECC errors.", "ecc_volatile_corrected", 1),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Volatile double-bit ECC errors.", "ecc_volatile_uncorrected", 1),
    ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Aggregate single-bit ECC errors.", "ecc_aggregate_corrected", 1),
    ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Aggregate double-bit ECC errors.", "ecc_aggregate_uncorrected", 1),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Rows remapped for correctable errors.", "remapped_correctable", 1),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Rows remapped for uncorrectable errors.", "remapped_uncorrectable", 1),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed.", "remap_failure", 1),
    ("DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", "PCIe current link generation.", "pcie_gen", 1),
    ("DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", "PCIe current link width.", "pcie_width", 1),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "PCIe transmit throughput (in B/s).", "pcie_tx_bps", 1),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "PCIe receive throughput (in B/s).", "pcie_rx_bps", 1),
)  # fmt: skip

HOST_METRICS: tuple[tuple[str, str, str], ...] = (
    ("aiworkbook_host_cpu_utilization_pct", "CPU utilization over all cores (in %).", "cpu_pct"),
    ("aiworkbook_host_load1", "1-minute load average.", "load_1m"),
    ("aiworkbook_host_ram_used_bytes", "RAM in use (total - available).", "ram_used_bytes"),
    ("aiworkbook_host_ram_total_bytes", "RAM installed.", "ram_total_bytes"),
    ("aiworkbook_host_swap_used_bytes", "Swap in use.", "swap_used_bytes"),
    ("aiworkbook_host_disk_read_bytes_per_second", "Disk read throughput.", "disk_read_bps"),
    ("aiworkbook_host_disk_write_bytes_per_second", "Disk write throughput.", "disk_write_bps"),
    ("aiworkbook_host_net_rx_bytes_per_second", "Network receive throughput.", "net_rx_bps"),
    ("aiworkbook_host_net_tx_bytes_per_second", "Network transmit throughput.", "net_tx_bps"),
)


def _gpu_labels(g: dict[str, Any], ids: dict[Any, dict[str, Any]], host: str) -> list[str]:
    """dcgm-exporter's labels of one GPU, in LABELS' order."""
    i = g.get("index", 0)
    ident = ids.get(i, {})
    return [
        str(i),
        label_value(ident.get("uuid", "")),
        f"nvidia{i}",
        label_value(ident.get("name", "")),
        host,
    ]


#: dcgm-exporter's GPU labels
LABELS = ["gpu", "UUID", "device", "modelName", "Hostname"]


def _family(name: str, typ: str, help_: str, labels: list[str]) -> GaugeMetricFamily | UnknownMetricFamily:
    """A gauge, or for dcgm-exporter's counters an untyped family: their names lack the `_total` that
    prometheus_client's text format appends to a counter's TYPE line, and the series names stay
    dcgm-exporter's (dashboards and alerts query them by name; PromQL's rate() takes untyped series)."""
    if typ == "gauge":
        return GaugeMetricFamily(name, help_, labels=labels)
    return UnknownMetricFamily(name, help_, labels=labels)


def families(
    sample: Sample | None,
    identities: list[dict[str, Any]] | None = None,
    events: list[dict[str, Any]] | None = None,
    hostname: str | None = None,
    replay_label: str | None = None,
) -> list[Metric]:
    """The metric families of one sample (only where the readings come from when there is none yet).

    `aiworkbook_telemetry_info` says where the readings come from, so a scraper never mistakes a
    replayed (or synthetic) trace for live readings of this host.
    """
    host = label_value(hostname or platform.node() or "localhost")
    ids = {i.get("index"): i for i in (identities or [])}
    info = GaugeMetricFamily(
        "aiworkbook_telemetry_info",
        "Where the readings come from: live NVML/psutil, or a replayed trace.",
        labels=["source", "label", "Hostname"],
    )
    info.add_metric(["replay" if replay_label else "live", label_value(replay_label or ""), host], 1)
    out: list[Metric] = [info]
    if sample is None:
        return out
    gpus = list(sample.gpus)
    for name, typ, help_, field, scale in GPU_METRICS:
        fam = _family(name, typ, help_, LABELS)
        for g in gpus:
            v = g.get(field)
            if isinstance(v, bool):
                v = int(v)
            if is_number(v):
                fam.add_metric(_gpu_labels(g, ids, host), v * scale if scale != 1 else v)
        if fam.samples:
            out.append(fam)
    last_xid: dict[int, int] = {}
    for e in events or []:
        if e.get("type") == "xid" and e.get("gpu") is not None:
            last_xid[e["gpu"]] = int(e["xid"])
    if gpus:
        xid = GaugeMetricFamily(
            "DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", labels=LABELS
        )
        for g in gpus:
            xid.add_metric(_gpu_labels(g, ids, host), last_xid.get(g.get("index", 0), 0))
        out.append(xid)
    for name, help_, field in HOST_METRICS:
        v = sample.host.get(field)
        if is_number(v):
            fam = GaugeMetricFamily(name, help_, labels=["Hostname"])
            fam.add_metric([host], v)
            out.append(fam)
    return out


def render(
    sample: Sample | None,
    identities: list[dict[str, Any]] | None = None,
    events: list[dict[str, Any]] | None = None,
    hostname: str | None = None,
    replay_label: str | None = None,
) -> str:
    """The exposition text (Prometheus text 0.0.4) of one sample, written by prometheus_client."""
    return text(families(sample, identities, events, hostname, replay_label))


def parse_bind(text: str) -> tuple[str, int]:
    """'127.0.0.1:9400' -> ('127.0.0.1', 9400); a bare port binds to 127.0.0.1."""
    host, _, port = str(text).rpartition(":")
    host = host or "127.0.0.1"
    try:
        p = int(port)
    except ValueError:
        raise SpecError("serve", text, "HOST:PORT, e.g. 127.0.0.1:9400") from None
    if not 0 <= p <= 65535:
        raise SpecError("serve", text, "a port 0..65535")
    return host.strip("[]"), p


#: seconds a connection may sit idle (no request line, a slow body) before its thread lets it go
CONNECTION_TIMEOUT_S = 5.0
#: connections served at once; more are closed at once instead of each holding a thread
MAX_CONNECTIONS = 32


class MetricsServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with the limits a scrape endpoint needs: IPv6 when the host is an IPv6
    address, a cap on concurrent connections, and no traceback on stderr when a client resets (the
    live table is on that terminal)."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # a burst of scrapers waits in the backlog instead of in SYN retries

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):  # full: drop this one rather than add a thread
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that resets or times out is its own business


def serve(sampler: Any, host: str = "127.0.0.1", port: int = 9400) -> ThreadingHTTPServer:
    """Serve GET and HEAD /metrics from `sampler`'s latest sample in a daemon thread; returns the
    server (its `server_address` has the real port when port=0; call `shutdown()` to stop). IPv6
    hosts ('::1', '[::1]') work; idle connections time out after CONNECTION_TIMEOUT_S. An address that
    cannot be bound (unknown host, port in use or privileged) raises SpecError("serve", ...)."""
    reader = sampler.gpu_reader
    identities = reader.identities() if reader.count() else []
    label = getattr(reader, "label", None)
    metrics = registry(lambda: families(sampler.latest(), identities, sampler.events, replay_label=label))

    class Handler(BaseHTTPRequestHandler):
        timeout = CONNECTION_TIMEOUT_S

        def _answer(self, with_body: bool) -> None:
            if self.path.split("?")[0] not in ("/metrics", "/"):
                self.send_error(404, "only /metrics is served")
                return
            body = text(metrics).encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            self._answer(True)

        def do_HEAD(self) -> None:  # noqa: N802 (http.server API)
            self._answer(False)

        def log_message(self, *args) -> None:  # keep the terminal table clean
            pass

    try:
        server = MetricsServer((host, port), Handler)
    except (OSError, OverflowError) as exc:  # gaierror (unknown host), EADDRINUSE, EACCES (port < 1024)
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise SpecError("serve", f"{host}:{port}", f"a local address and a free port ({why})") from None
    threading.Thread(target=server.serve_forever, name="aiworkbook-metrics", daemon=True).start()
    return server
