"""Where a price comes from, in words a CFO reads: the kind (list price, the user's price file, a price
given for a node or on the command line), its source and date, and that it is a lower bound at roofline
throughput. The answer, `fit`'s lowest-cost option, the sizer and the report say it beside every price.
"""

from __future__ import annotations

from typing import Any

from aiworkbook.message import Msg


def provenance(assumptions: Any, gpu: Any = None) -> Msg:
    """Where a price comes from, in words a CFO reads, in every language: "list price, <source>, <date>;
    a lower bound at roofline throughput" for a catalogue price (the catalogue's own source translated),
    the user's price file's source and date, or the price the user or node gave."""
    if assumptions is not None and assumptions.price_per_gpu_hour is not None:
        return Msg("price.given", source=str(assumptions.source))
    if gpu is None or not gpu.price_source:
        return Msg("price.catalogue")
    from aiworkbook.catalogue import template
    from aiworkbook.specs.gpu import user_priced

    if user_priced(gpu.name):
        return Msg("price.file", source=gpu.price_source, date=gpu.price_date)
    ours = gpu.price_source == template("price.catalogue_source")  # the catalogue's words, translated
    source = Msg("price.catalogue_source") if ours else gpu.price_source
    return Msg("price.list", source=source, date=gpu.price_date)


def list_provenance(gpus: Any) -> list[Msg]:
    """The distinct provenances of the list prices of `gpus` (GPUSpecs; unpriced ones left out), in
    order: what a table of catalogue prices says beside it (one line when they share a source)."""
    out: list[Msg] = []
    for g in gpus:
        if g.price_per_hour_usd and (m := provenance(None, g)) not in out:
            out.append(m)
    return out
