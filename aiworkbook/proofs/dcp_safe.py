"""Read a DCP checkpoint without running code from its folder.

torch.distributed.checkpoint's FileSystemReader reads `.metadata` with a plain `pickle.load`, and its
default planner loads any entry the metadata declares as bytes with `torch.load(weights_only=False)`
(torch/distributed/checkpoint/filesystem.py, default_planner.py). A restore proof pointed at a folder
someone else can write would run whatever that folder's pickles name. This reader unpickles the
metadata with an allow-list of the classes DCP itself writes and accepts only tensor entries, so a
planted `.metadata` is refused (SpecError) before anything in it is called.
"""

from __future__ import annotations

import pickle
from typing import Any

import torch
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta, TensorStorageMetadata

from aiworkbook.errors import SpecError

_MODULES = (
    "torch.distributed.checkpoint.metadata",
    "torch.distributed.checkpoint.filesystem",
    "torch.distributed.checkpoint.planner",
)
_NAMES = {
    ("torch", "Size"),
    ("torch.serialization", "_get_layout"),
    ("pathlib", "PosixPath"),
    ("pathlib", "PurePosixPath"),
    ("collections", "OrderedDict"),
}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        if (module, name) in _NAMES or (module in _MODULES and not name.startswith("__")):
            obj = super().find_class(module, name)
            if isinstance(obj, type) or (module, name) == ("torch.serialization", "_get_layout"):
                return obj
        raise pickle.UnpicklingError(f"{module}.{name} is not a class DCP writes")


def read_metadata(path: str) -> Metadata:
    """The folder's DCP metadata, unpickled through the allow-list; tensor entries only."""
    reader = FileSystemReader(path)
    try:
        with reader.fs.create_stream(reader._get_metadata_path(None), "rb") as f:
            md = _Unpickler(f).load()
    except (
        OSError,
        pickle.UnpicklingError,
        EOFError,
        AttributeError,
        ImportError,
        TypeError,
        ValueError,
    ) as e:
        why = f"a DCP checkpoint whose .metadata holds only DCP's own classes ({e})"
        raise SpecError("dir", path, why) from None
    bad = [] if isinstance(md, Metadata) else ["<root>"]
    if not bad:
        bad = [k for k, v in md.state_dict_metadata.items() if not isinstance(v, TensorStorageMetadata)]
    if bad:
        raise SpecError("dir", path, f"a DCP checkpoint of tensors only (not tensors: {', '.join(bad[:5])})")
    return md


class SafeReader(FileSystemReader):
    """FileSystemReader whose metadata goes through `read_metadata` (the same file, read once)."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        md = read_metadata(str(self.path))
        meta = md.storage_meta if md.storage_meta is not None else StorageMeta()
        meta.load_id = self.load_id
        md.storage_meta = meta
        return md
