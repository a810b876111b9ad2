"""GPUSpec: one accelerator's datasheet ceilings, read from data/gpus/gpus.json."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.paths import data_dir


class MIGProfile(BaseModel):
    """One GPU instance profile as `nvidia-smi mig -lgip` names it: `<compute slices>g.<memory>gb`."""

    model_config = ConfigDict(frozen=True)
    name: str = Field(pattern=r"^[1-9][0-9]*g\.[0-9]+gb(\+me)?$")
    memory_gib: float = Field(gt=0)
    max_instances: int = Field(ge=1)

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * 2**30)

    @property
    def compute_slices(self) -> int:
        """The compute slices (GPCs) the instance gets: the number before `g.` in its name."""
        return int(self.name.split("g.", 1)[0])


class GPUSpec(BaseModel):
    """Datasheet figures; `calibrated` replaces them with measured ceilings (proofs.roofline)."""

    # measured ceilings divide: NaN, Infinity, zero or negative would print `nan/s` or a negative crossover
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)

    name: str
    vendor: str = "NVIDIA"
    marketed: str = ""
    #: the names NVML (nvidia-smi's "Name") gives this board; detection matches them, nothing else
    nvml_names: tuple[str, ...] = ()
    memory_type: str = ""
    memory_bytes: int = Field(gt=0, description="marketed capacity")
    usable_memory_bytes: int = Field(gt=0, description="driver-reported total")
    cuda_memory_bytes: int | None = Field(
        default=None, gt=0, description="what cudaMemGetInfo / torch reports as total (vLLM's total)"
    )
    memory_bandwidth_bps: float = Field(gt=0)
    peak_flops_dense: dict[str, Annotated[float, Field(gt=0)]]
    peak_flops_sparse: dict[str, Annotated[float, Field(gt=0)]] = {}
    tdp_watts: float = Field(
        default=0.0, ge=0, description="board power at TDP; 0 = unknown (measured specs)"
    )
    scale_up: str = ""
    scale_up_bps: float = 0.0
    #: GPUs one scale-up domain joins (one 8-GPU HGX board or 8-slot PCIe server; an NVL72 rack: 72):
    #: tensor parallelism never spans more, its all-reduces would leave the link `scale_up_bps` gives
    scale_up_gpus: int = Field(default=8, ge=1)
    l2_cache_bytes: int = 0
    compute_capability: str = ""
    #: streaming multiprocessors (NVIDIA) or compute units (AMD), as the vendor's datasheet or
    #: architecture whitepaper gives them; 0 = not recorded. vLLM 0.19's sampler sizes a buffer by it.
    sm_count: int = Field(default=0, ge=0)
    mig_profiles: tuple[MIGProfile, ...] = ()
    #: compute slices the whole GPU has (NVIDIA's MIG user guide, "fraction of SMs": 7 on A100, H100,
    #: H200, B200; 4 on A30; docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html):
    #: a profile's share of the GPU's compute is its slices over these. 0 with profiles: the largest
    #: profile's (the whole-GPU profile, `7g.80gb`, names the total)
    mig_compute_slices: int = Field(default=0, ge=0)
    price_per_hour_usd: float = Field(default=0.0, ge=0)
    #: where the price comes from and when it was taken (the catalogue's, or a --prices file's)
    price_source: str = ""
    price_date: str = ""
    source: str = ""
    measured: bool = False
    #: which figures are measured ("memory_bandwidth_bps", "peak_flops_dense.bf16", ...); every other
    #: figure of a calibrated spec is still the datasheet's
    measured_figures: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _slices(self) -> GPUSpec:
        if not self.mig_profiles:
            return self
        most = max(p.compute_slices for p in self.mig_profiles)
        if not self.mig_compute_slices:
            self.__dict__["mig_compute_slices"] = most
        elif most > self.mig_compute_slices:
            raise ValueError(
                f"mig_compute_slices {self.mig_compute_slices} is fewer than a profile's {most} compute slices"
            )
        return self

    @property
    def device_resource(self) -> str:
        """The Kubernetes resource a pod asks for to get one of these GPUs: the vendor's device plugin
        registers `<vendor>.com/gpu` (`nvidia.com/gpu`, `amd.com/gpu`; kubernetes.io/docs/tasks/
        manage-gpus/scheduling-gpus)."""
        return f"{self.vendor.lower()}.com/gpu"

    def __hash__(self) -> int:  # the dict fields are compared by value: memoise results by their inputs
        return hash((type(self).__name__, self.model_dump_json()))

    def peak_flops(self, dtype: str = "bf16", sparse: bool = False, field: str = "dtype") -> float:
        """Peak FLOP/s for a dtype (dense unless asked); a SpecError names `field` (the caller's option,
        e.g. weights_dtype) and lists the dtypes this GPU has."""
        table = self.peak_flops_sparse if sparse else self.peak_flops_dense
        key = _peak_key(dtype)
        if key not in table:
            raise SpecError(field, dtype, ", ".join(table) or "none listed", source=f"GPU {self.name}")
        return table[key]

    def computes(self, dtype: str) -> bool:
        """Whether the GPU has arithmetic in `dtype` (a dense peak recorded for it); a GPU file that
        records no peaks is not judged on them."""
        return not self.peak_flops_dense or _peak_key(dtype) in self.peak_flops_dense

    def calibrated(
        self,
        *,
        memory_bandwidth_bps: float | None = None,
        flops: dict[str, float] | None = None,
        name_suffix: str = " (measured)",
    ) -> GPUSpec:
        """A copy whose ceilings are measured figures instead of datasheet peaks."""
        upd: dict[str, Any] = {"measured": True, "name": self.name + name_suffix}
        marks = list(self.measured_figures)
        if memory_bandwidth_bps:
            upd["memory_bandwidth_bps"] = memory_bandwidth_bps
            marks.append("memory_bandwidth_bps")
        if flops:
            upd["peak_flops_dense"] = {**self.peak_flops_dense, **flops}
            marks += [f"peak_flops_dense.{k}" for k in flops]
        upd["measured_figures"] = tuple(dict.fromkeys(marks))
        return self.model_copy(update=upd)

    def figure_source(self, figure: str) -> str:
        """ "measured" or "datasheet" for one figure ("memory_bandwidth_bps", "peak_flops_dense.bf16",
        or a dtype name for its dense peak)."""
        if figure in self.peak_flops_dense:
            figure = f"peak_flops_dense.{figure}"
        return "measured" if figure in self.measured_figures else "datasheet"

    def sources(self) -> dict[str, str]:
        """Every ceiling with its source: the bandwidth and each dtype's dense peak."""
        out = {"memory_bandwidth_bps": self.figure_source("memory_bandwidth_bps")}
        out.update({f"peak_flops_dense.{k}": self.figure_source(k) for k in self.peak_flops_dense})
        return out


@cache
def _catalogue() -> dict[str, GPUSpec]:
    from aiworkbook.persist import read_json, validation_error

    path = data_dir() / "gpus" / "gpus.json"
    doc = read_json(path, kind="gpu-catalogue", max_version=1)
    out: dict[str, GPUSpec] = {}
    for i, g in enumerate(doc["gpus"]):
        if g.get("price_per_hour_usd"):  # every catalogue price with the catalogue's source and date
            g = {"price_source": doc.get("price_source", ""), "price_date": doc.get("price_date", ""), **g}
        try:
            out[g["name"]] = GPUSpec.model_validate(g)
        except ValidationError as exc:
            raise validation_error(exc, source=str(path), prefix=f"gpus[{i}]") from None
    return out


#: a user's price file (`--prices FILE`, set_prices): GPU name -> (price per GPU-hour, source, date)
_PRICES: dict[str, tuple[float, str, str]] = {}


def set_prices(path: str | None) -> None:
    """Prices from the user's own file override the catalogue's for this process: JSON
    {"source": "...", "date": "YYYY-MM-DD", "prices": {"H100-SXM": 2.5, ...}}. None: the catalogue's."""
    _PRICES.clear()
    if path is None:
        return
    import datetime as dt

    from aiworkbook.persist import read_json

    doc = read_json(path, what=Msg("file.prices"))
    if not isinstance(doc, dict) or not isinstance(doc.get("prices"), dict):
        raise SpecError("prices", path, Msg("allowed.prices_file"))
    source, date = doc.get("source"), doc.get("date")
    if not isinstance(source, str) or not source.strip():
        raise SpecError("prices.source", source, Msg("allowed.prices_source"))
    try:
        dt.date.fromisoformat(str(date))
    except ValueError:
        raise SpecError("prices.date", date, Msg("allowed.prices_date")) from None
    for name, price in doc["prices"].items():
        gpu = get_gpu(name).name  # a GPU the catalogue has
        if isinstance(price, bool) or not isinstance(price, int | float) or not 0 <= price < 1e6:
            raise SpecError(f"prices.{name}", price, Msg("allowed.prices_value"))
        _PRICES[gpu] = (float(price), source.strip(), str(date))


def user_priced(name: str) -> bool:
    """Whether this GPU's price comes from the user's price file (not the catalogue's list price)."""
    return name in _PRICES


def _priced(spec: GPUSpec) -> GPUSpec:
    """A copy of a catalogue entry, at the user's price where a price file gives one."""
    if spec.name not in _PRICES:
        return spec.model_copy(deep=True)
    price, source, date = _PRICES[spec.name]
    return spec.model_copy(update={"price_per_hour_usd": price, "price_source": source, "price_date": date})


def list_gpus() -> list[GPUSpec]:
    """Copies of the catalogue's entries: changing one cannot change the catalogue."""
    return [_priced(g) for g in _catalogue().values()]


def get_gpu(name: str) -> GPUSpec:
    """Look a GPU up by catalogue name, case- and separator-insensitively (h100_sxm == H100-SXM)."""
    norm = _norm(name)
    for key, spec in _catalogue().items():
        if _norm(key) == norm:
            return _priced(spec)
    raise SpecError("gpu", name, ", ".join(_catalogue()))


def load_gpu(name_or_path: str | GPUSpec) -> GPUSpec:
    """A catalogue name, or a JSON file holding measured ceilings: a GPUSpec, a calibrated node
    profile (`gpu_calibrated`), or a roofline ProofResult (`details.calibrated_spec`)."""
    if isinstance(name_or_path, GPUSpec):
        return name_or_path
    from pathlib import Path

    from aiworkbook.persist import read_json, validation_error

    p = Path(str(name_or_path)).expanduser()
    if not (p.suffix == ".json" and p.is_file()):
        return get_gpu(str(name_or_path))
    doc = read_json(p, what=Msg("file.gpu"))
    for path in (("details", "calibrated_spec"), ("gpu_calibrated",), ()):
        node: Any = doc
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and "memory_bandwidth_bps" in node:
            try:
                return GPUSpec.model_validate(node)
            except ValidationError as exc:
                raise validation_error(exc, source=str(p), prefix=".".join(path)) from None
    raise SpecError(
        "gpu", str(p), "a GPUSpec JSON, a calibrated node profile or a roofline proof result", source=str(p)
    )


def _norm(s: str) -> str:
    return "".join(ch for ch in str(s).lower() if ch.isalnum())


def _peak_key(dtype: str) -> str:
    """The peak-table key a dtype computes at (mixed precision computes at its 16-bit half)."""
    return {"bf16-mixed": "bf16", "fp16-mixed": "fp16"}.get(dtype, dtype)
