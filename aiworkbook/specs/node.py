"""NodeProfile: a machine (GPUs, CPU, RAM, storage, network), declared in data/nodes or detected."""

from __future__ import annotations

from functools import cache
from os import PathLike
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aiworkbook.errors import SpecError
from aiworkbook.message import Msg
from aiworkbook.paths import data_dir
from aiworkbook.specs.gpu import GPUSpec, get_gpu

Pattern = Literal["classical-ml-cpu", "dl-training", "llm-inference", "hybrid"]
PATTERNS: tuple[str, ...] = ("classical-ml-cpu", "dl-training", "llm-inference", "hybrid")

#: The header NodeProfile.save writes, checked by load_node_file when a file carries it.
NODE_KIND = "node-profile"
NODE_SCHEMA_VERSION = 1


class DetectedGPU(BaseModel):
    """One GPU as NVML reports it on this machine."""

    model_config = ConfigDict(frozen=True)
    index: int
    name: str
    uuid: str = ""
    memory_total_bytes: int = 0
    compute_capability: str = ""
    mig_mode: str = "n/a"
    catalogue_name: str | None = None


class NodeProfile(BaseModel):
    """A machine. `gpu` names a catalogue entry; `pools` split a hybrid node into roles."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)  # rates must be finite

    name: str
    pattern: Pattern | None = None
    description: str = ""
    gpu: str | None = None
    gpu_count: int = Field(default=0, ge=0, le=1024)
    interconnect: str = ""
    interconnect_bps: float = Field(default=0.0, ge=0)
    network_bps: float = Field(default=0.0, ge=0)
    cpu_model: str = ""
    cpu_cores: int = Field(ge=1)
    cpu_threads: int | None = Field(default=None, ge=1)
    ram_bytes: int = Field(gt=0)
    local_storage_bytes: int = Field(default=0, ge=0)
    storage_type: str = ""
    storage_read_bps: float = Field(default=0.0, ge=0)
    storage_write_bps: float = Field(default=0.0, ge=0)
    price_per_hour_usd: float = Field(default=0.0, ge=0)
    pools: tuple[NodeProfile, ...] = ()
    #: measured ceilings (aiworkbook prove roofline) that replace the catalogue's datasheet peaks
    gpu_calibrated: GPUSpec | None = None
    # detected-only facts
    detected: bool = False
    gpus_detected: tuple[DetectedGPU, ...] = ()
    gpu_status: str = ""
    #: records of the text fields above that are messages (aiworkbook.message.record: the detected
    #: node's name, its GPU status), so a stored profile says them in a report's language
    messages: dict[str, Any] = {}
    disk_free_bytes: int | None = None
    os: str = ""
    python: str = ""
    torch_version: str | None = None
    cuda_version: str | None = None
    driver_version: str | None = None

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.model_dump_json()))

    def gpu_spec(self) -> GPUSpec | None:
        """The calibrated (measured) spec when there is one, else the catalogue entry."""
        if self.gpu_calibrated is not None:
            return self.gpu_calibrated
        return get_gpu(self.gpu) if self.gpu else None

    def pool(self, name: str | None = None, *, gpu_given: bool = False) -> NodeProfile:
        """The pool called `name` (its exact name, the name before its " (" details, or its first word);
        with no name, this node itself, unless it has pools and no GPU of its own (and no GPU is given
        elsewhere): then a SpecError lists the pools to choose from."""
        names = [p.name for p in self.pools]
        if name is None:
            if self.pools and self.gpu is None and self.gpu_calibrated is None and not gpu_given:
                raise SpecError(
                    "pool",
                    None,
                    f"one of the pools of {self.name} (it has no GPU of its own): "
                    + ", ".join(repr(n) for n in names)
                    + "; pass --pool NAME (the first word is enough), or --gpu",
                )
            return self
        for p in self.pools:
            if name in (p.name, p.name.split(" (")[0], p.name.split()[0]):
                return p
        raise SpecError(
            "pool", name, ", ".join(repr(n) for n in names) if names else f"none: {self.name} has no pools"
        )

    def calibrated(self, measured: GPUSpec) -> NodeProfile:
        """This node with measured ceilings: the one loop of the design, through data."""
        return self.model_copy(update={"gpu_calibrated": measured})

    def save(self, path: str | PathLike[str]) -> None:
        """Write the profile as JSON (kind node-profile, schema 1), atomically."""
        from aiworkbook.persist import write_json

        write_json(
            path,
            self.model_dump(mode="json", exclude_defaults=True),
            kind=NODE_KIND,
            schema_version=NODE_SCHEMA_VERSION,
        )


@cache
def _reference() -> dict[str, NodeProfile]:
    out: dict[str, NodeProfile] = {}
    for path in sorted((data_dir() / "nodes").glob("*.json")):
        out[path.stem] = load_node_file(path)
    return out


def load_node_file(path: str | PathLike[str]) -> NodeProfile:
    """Read a node profile JSON; a bad field raises SpecError naming the file and the field. `kind`
    and `schema_version`, when present (save() writes both), must be node-profile and 1."""
    from pathlib import Path

    from aiworkbook.persist import check_header, read_json, validation_error

    p = Path(path)
    doc = read_json(p, what=Msg("file.node"))
    check_header(
        doc,
        p,
        NODE_KIND if "kind" in doc else None,
        NODE_SCHEMA_VERSION if "schema_version" in doc else None,
    )
    doc.pop("kind", None)
    doc.pop("schema_version", None)
    try:
        node = NodeProfile.model_validate(doc)
    except ValidationError as exc:
        raise validation_error(exc, source=str(p)) from None
    if node.gpu:
        get_gpu(node.gpu)  # unknown GPU names fail here, not later
    return node


def list_nodes() -> list[NodeProfile]:
    """Copies of the reference profiles: changing one cannot change the reference."""
    return [n.model_copy(deep=True) for n in _reference().values()]


def get_node(name: str) -> NodeProfile:
    """A reference profile by name, or a node profile JSON file (e.g. a calibrated one)."""
    from pathlib import Path

    nodes = _reference()
    if name in nodes:
        return nodes[name].model_copy(deep=True)
    if str(name).endswith(".json") and Path(name).is_file():
        return load_node_file(name)
    raise SpecError("node", name, Msg("allowed.node_names", names=", ".join(nodes)))
