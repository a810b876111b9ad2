"""The storage and cost sections of an Estimate: checkpoint plan, input rate, $ and joules per token.

They combine the roofline (how fast) with Assumptions (how reliable, how expensive); see
storage.py and cost.py for the formulas themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiworkbook.sizing import cost, storage
from aiworkbook.sizing.assumptions import Assumptions
from aiworkbook.sizing.sections import Cost, Dataloader, RunCost, Section, Storage, from_mapping
from aiworkbook.sizing.workload import Workload

if TYPE_CHECKING:
    from aiworkbook.sizing.onepass import SizingPass
    from aiworkbook.specs.gpu import GPUSpec
    from aiworkbook.specs.protocol import ModelSpecLike


def storage_section(
    spec: ModelSpecLike,
    w: Workload,
    roof: Mapping[str, Any] | Section,
    a: Assumptions,
    p: SizingPass | None = None,
) -> Storage:
    """Checkpoint sizes and times (always), Young/Daly and goodput for training, the loader rate.
    `p`: the workload's SizingPass (trainable parameters, optimizer bytes, served weights)."""
    gpus = w.dp * w.tp
    if w.training:
        if p is not None:
            trainable, opt = p.trainable, p.optimizer_bytes
        else:
            from aiworkbook.sizing.states import trainable_and_optimizer

            trainable, opt, _ = trainable_and_optimizer(spec, w)
        plan = storage.checkpoint_plan(
            spec,
            w.recipe,
            w.precision,
            a.storage_write_bps,
            a.storage_read_bps,
            a.gpu_mtbf_hours * 3600.0,
            gpus,
            a.restart_s,
            trainable,
            opt,
        )
        step = roof.get("step_time_s")
        loader = None
        if step:
            rate = storage.dataloader_rate(w.batch * w.dp, step, w.seq_len * a.bytes_per_token)
            loader = from_mapping(Dataloader, rate)
        return from_mapping(Storage, plan, mode="train", dataloader=loader)
    from aiworkbook.sizing.states import inference_weight_bytes

    served = p.weight_bytes if p is not None else None
    weights, _ = (
        served if served is not None else inference_weight_bytes(spec, w.weights_dtype)
    )  # at its dtype
    return Storage(
        mode="infer",
        weights_bytes=int(weights),
        load_s=storage.transfer_time(int(weights), a.storage_read_bps),
    )


def cost_section(
    spec: ModelSpecLike,
    w: Workload,
    gpu: GPUSpec | None,
    roof: Mapping[str, Any] | Section,
    a: Assumptions,
    storage_plan: Mapping[str, Any] | Section | None = None,
) -> Cost:
    """$ per million tokens (prefill and decode apart for serving), J per million tokens, run cost.

    `storage_plan` is the estimate's storage section (its waste fraction prices the run); computed here
    only when not given."""
    if gpu is None:
        return Cost()
    price = cost.gpu_hour_price(a.price_per_gpu_hour, gpu)
    watts = gpu.tdp_watts or None  # at TDP: an upper bound on power
    gpus = w.tp * (w.dp if w.training else 1)
    out: dict[str, Any] = {"price_per_gpu_hour": price or None, "gpus": gpus, "watts_per_gpu_at_tdp": watts}
    if not price:  # a measured spec has no list price: say so instead of printing $0
        out["note"] = "no price for this GPU: pass a price per GPU-hour (--price) for $ figures"
        return from_mapping(Cost, out)
    if w.training:
        tps = roof.get("tokens_per_s")
        if not tps:
            return from_mapping(Cost, out)
        out["usd_per_mtok_trained"] = cost.usd_per_million_tokens(price, gpus, tps)
        if watts:
            out["joules_per_mtok_trained"] = cost.joules_per_million_tokens(watts, gpus, tps, a.pue)
        if a.train_tokens:
            hours_ideal = a.train_tokens / tps / 3600.0 * gpus
            ckpt = storage_plan if storage_plan is not None else storage_section(spec, w, roof, a)
            run = cost.training_run_cost(hours_ideal, price, min(ckpt["waste_fraction"], 0.99))
            total = {
                "train_tokens": a.train_tokens,
                "days": run["gpu_hours"] / gpus / 24.0,
                **run,
                "waste_fraction": ckpt["waste_fraction"],
            }
            if watts:
                kwh = watts * gpus * a.pue * run["gpu_hours"] / gpus / 1000.0
                total["energy_kwh"] = kwh
                total["energy_usd"] = cost.energy_usd(kwh, a.usd_per_kwh)
            out["run"] = from_mapping(RunCost, total)
        return from_mapping(Cost, out)
    ttft = roof.get("ttft_s")
    decode_tps = roof.get("decode_tokens_per_s")  # None for an encoder-only model: it does not decode
    if not ttft or (not decode_tps and spec.is_decoder):
        return from_mapping(Cost, out)
    prefill_tps = w.concurrency * w.seq_len / ttft
    out.update(cost.serving_cost(price, gpus, prefill_tps, decode_tps, a.utilization, a.headroom))
    out["prefill_tokens_per_s"] = prefill_tps
    if watts:
        if decode_tps:
            out["decode_joules_per_mtok"] = cost.joules_per_million_tokens(watts, gpus, decode_tps, a.pue)
        out["prefill_joules_per_mtok"] = cost.joules_per_million_tokens(watts, gpus, prefill_tps, a.pue)
    return from_mapping(Cost, out)
