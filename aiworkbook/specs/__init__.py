"""Specs: ModelSpec, GPUSpec, NodeProfile and their loaders from data/. No torch, no Jupyter."""

from aiworkbook.specs.catalog import list_presets, load_model
from aiworkbook.specs.families import FAMILIES
from aiworkbook.specs.gpu import GPUSpec, MIGProfile, get_gpu, list_gpus, load_gpu
from aiworkbook.specs.model import ModelSpec
from aiworkbook.specs.node import PATTERNS, NodeProfile, get_node, list_nodes, load_node_file
from aiworkbook.specs.reader import spec_from_config


def detect(path: str = ".") -> NodeProfile:
    """This machine as a NodeProfile (see aiworkbook.specs.detection)."""
    from aiworkbook.specs.detection import detect as _detect

    return _detect(path)


__all__ = [
    "FAMILIES",
    "PATTERNS",
    "GPUSpec",
    "MIGProfile",
    "ModelSpec",
    "NodeProfile",
    "detect",
    "get_gpu",
    "get_node",
    "list_gpus",
    "list_nodes",
    "list_presets",
    "load_gpu",
    "load_model",
    "load_node_file",
    "spec_from_config",
]
