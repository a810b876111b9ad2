"""NodePicker: the reference node profiles shipped with aiworkbook and this node (detected), side by
side in a capability matrix; picking one makes it the node the next steps size against."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W
import traitlets

from aiworkbook.errors import SpecError
from aiworkbook.i18n_format import money

from .base import Composite, dropdown, html_table, value_html

THIS_NODE = "this-node"


def capability_rows(nodes: list[Any], t: Any) -> list[list[str]]:
    """Rows of the matrix (one per capability, one column per node), formatted by aiworkbook.units."""
    from aiworkbook.units import fmt_bytes, fmt_rate

    def gpu(n: Any) -> str:
        if n.gpu:
            return f"{n.gpu_count} × {n.gpu}"
        if n.pools:
            return "; ".join(f"{p.gpu_count} × {p.gpu}" for p in n.pools if p.gpu) or "—"
        return n.gpu_status or "—"

    def gpu_mem(n: Any) -> str:
        spec = n.gpu_spec() if n.gpu else None
        if spec is not None:
            return fmt_bytes(spec.memory_bytes * max(1, n.gpu_count), "GiB")
        if n.gpus_detected:
            return fmt_bytes(sum(g.memory_total_bytes for g in n.gpus_detected), "GiB")
        return "—"

    rows = [
        (t("gpu"), gpu),
        (t("gpu_memory"), gpu_mem),
        (t("interconnect"), lambda n: n.interconnect or "—"),
        (t("cpu"), lambda n: str(n.cpu_cores)),
        (t("ram"), lambda n: fmt_bytes(n.ram_bytes, "GiB")),
        (t("storage"), lambda n: fmt_bytes(n.local_storage_bytes or n.disk_free_bytes or 0, "TB")),
        (t("storage_read"), lambda n: fmt_rate(n.storage_read_bps) if n.storage_read_bps else "—"),
        (t("price"), lambda n: money(n.price_per_hour_usd) if n.price_per_hour_usd else "—"),
        (t("pattern"), lambda n: n.pattern or "—"),
    ]
    return [[name, *(fn(n) for n in nodes)] for name, fn in rows]


class NodePicker(Composite):
    """`value`: {"node": a reference node's name or "this-node"} (observable and linkable, like every
    widget's `value`, a dict of its fields); `result`: that NodeProfile as JSON."""

    css = "node-picker"
    value = traitlets.Dict()

    def __init__(self, node: str | None = None, lang: str = "en", detect: bool = True) -> None:
        super().__init__(lang=lang)
        from aiworkbook.specs import list_nodes

        self.nodes: dict[str, Any] = {n.name: n for n in list_nodes()}
        if detect:
            from aiworkbook.specs import detect as detect_node

            try:
                self.nodes[THIS_NODE] = detect_node()
            except Exception as exc:  # detection is best effort; say why it is missing
                self.show_error(exc)
        options = [(self.t("this_node") if k == THIS_NODE else k, k) for k in self.nodes]
        first = (
            node if node in self.nodes else (THIS_NODE if THIS_NODE in self.nodes else next(iter(self.nodes)))
        )
        self.picker = dropdown(options, first, self.t("node"))
        self.picker.observe(self.guarded(lambda c: self._select(c["new"])), names="value")
        self.headline = value_html("")
        names = [self.t("this_node") if k == THIS_NODE else k for k in self.nodes]
        self.matrix = W.HTML(
            f"<b>{html.escape(self.t('capabilities'))}</b>"
            + html_table(
                ["", *names], capability_rows(list(self.nodes.values()), self.t), "aiwb-capabilities"
            )
        )
        self.children = [self.picker, self.error_area, self.headline, self.matrix]
        self.guarded(self._select)(first)
        self.ready()

    def _select(self, name: Any) -> None:
        if name not in self.nodes:
            raise SpecError("node", name, ", ".join(self.nodes))
        n = self.nodes[name]
        if self.picker.value != name:
            self.picker.value = name
        self.value = {"node": name}
        desc = n.description or n.gpu_status or ""
        self.headline.value = f"<b>{html.escape(n.name)}</b> {html.escape(desc)}"
        self.result = n.model_dump(mode="json")
        self.error = ""

    @traitlets.observe("value")
    def _value_set(self, change: dict[str, Any]) -> None:
        v = change["new"]
        if v == {"node": self.picker.value}:
            return
        try:
            if set(v) != {"node"}:
                raise SpecError("value", ", ".join(map(str, v)) or "{}", 'a dict {"node": name}')
            self._select(v["node"])
        except Exception as exc:  # a bad name: say so and keep showing the node picked before
            self.show_error(exc)
            self.value = {"node": self.picker.value}

    def node(self) -> Any:
        """The chosen NodeProfile."""
        return self.nodes[self.picker.value]
