"""Record what a real Prometheus answers for a two-node fleet, one node stopped (data/prometheus/), so
notebook 08 and its tests show the fleet view without a server. Needs Debian's prometheus.

    .venv/bin/python tools/record_prometheus_fleet.py [OUT.json]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from prometheus_fleet import Fleet, prometheus_binary, wait_for  # noqa: E402

from aiworkbook.telemetry.prometheus import PrometheusReader, record_fleet  # noqa: E402


def main(out: Path) -> None:
    binary = prometheus_binary()
    if binary is None:
        sys.exit("needs /usr/bin/prometheus (apt-get install prometheus)")
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Fleet(tmp=Path(tmp), binary=binary)
        try:
            for node in ("a", "b"):
                fleet.start_exporter(node)
            fleet.start_prometheus()
            reader = PrometheusReader(fleet.url, node_label="node")
            wait_for(lambda: len(reader.fleet(window_s=60).nodes()) == 2, "both nodes")
            time.sleep(20)
            fleet.stop_exporter("b")  # its series end here: "no data since"
            time.sleep(25)
            view = record_fleet(reader, out, window_s=90)
        finally:
            fleet.close()
    print(f"recorded {len(view.series)} series of {view.nodes()} to {out}; notes: {view.notes()}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "data" / "prometheus" / "fleet-two-nodes.json")
