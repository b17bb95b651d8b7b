"""Tensors as raw files plus manifest entries (runner/PROTOCOL.md, "Tensor files").

A file holds the C-contiguous little-endian element bytes of one tensor; its manifest entry is
``{"name", "file", "dtype", "shape"}`` with ``file`` relative to the directory holding it.
bfloat16 travels as its raw 16-bit patterns (numpy has no bfloat16), bool as one byte 0/1.
Python int/float values are stored as 0-d float64 tensors whose entry carries ``"scalar"``.
"""

import json
import os
import sys
from typing import Any, Dict, List, Union

import numpy as np
import torch

if sys.byteorder != "little":
    raise ImportError("kforge_runner tensor files are little-endian; this host is big-endian")

TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float64": torch.float64, "int32": torch.int32, "int64": torch.int64, "int16": torch.int16,
    "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
DTYPE_NAMES = {dtype: name for name, dtype in TORCH_DTYPES.items()}

# numpy types used to hold each dtype's bytes on the host; bfloat16 as int16 bit patterns.
NUMPY_DTYPES = {
    "float32": np.float32, "float16": np.float16, "bfloat16": np.int16, "float64": np.float64,
    "int32": np.int32, "int64": np.int64, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
    "bool": np.bool_,
}

Value = Union[torch.Tensor, int, float]


def dtype_name(dtype: torch.dtype) -> str:
    """The protocol name of a torch dtype; raises ValueError for dtypes the protocol lacks."""
    if dtype not in DTYPE_NAMES:
        raise ValueError(f"dtype {dtype} is not supported by the runner protocol")
    return DTYPE_NAMES[dtype]


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype for a protocol dtype name; raises ValueError for unknown names."""
    if name not in TORCH_DTYPES:
        raise ValueError(f"unknown dtype name {name!r}")
    return TORCH_DTYPES[name]


def to_host_array(tensor: torch.Tensor) -> np.ndarray:
    """The tensor's elements as a C-contiguous host numpy array (bfloat16 as int16 bit patterns)."""
    t = tensor.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return np.ascontiguousarray(t.numpy())


def from_host_array(array: np.ndarray, name: str) -> torch.Tensor:
    """Inverse of ``to_host_array``: a CPU tensor of protocol dtype ``name`` copied from it."""
    t = torch.from_numpy(np.array(array, dtype=NUMPY_DTYPES[name], copy=True))
    return t.view(torch.bfloat16) if name == "bfloat16" else t


def write_tensor(directory: str, name: str, value: Value) -> Dict[str, Any]:
    """Writes ``value`` to ``directory/name.bin`` and returns its manifest entry.

    A Python int/float becomes a 0-d float64 tensor with ``"scalar": "int"|"float"``; bool counts
    as int. Any other non-tensor raises TypeError.
    """
    entry: Dict[str, Any] = {"name": name, "file": name + ".bin"}
    if isinstance(value, (bool, int, float)) and not isinstance(value, torch.Tensor):
        entry["scalar"] = "float" if isinstance(value, float) else "int"
        value = torch.tensor(float(value), dtype=torch.float64)
    elif not isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: expected a tensor or a Python number, got {type(value).__name__}")
    entry["dtype"] = dtype_name(value.dtype)
    entry["shape"] = list(value.shape)
    to_host_array(value).tofile(os.path.join(directory, entry["file"]))
    return entry


def read_tensor(directory: str, entry: Dict[str, Any]) -> torch.Tensor:
    """Reads the entry's tensor as a CPU tensor; raises ValueError if the file size is wrong.

    The file's bytes go straight into the tensor's storage (one copy, no intermediate array).
    """
    name = entry["dtype"]
    shape = tuple(entry["shape"])
    path = os.path.join(directory, entry["file"])
    expected = int(np.prod(shape, dtype=np.int64))
    tensor = torch.empty(shape, dtype=torch_dtype(name))
    nbytes = expected * tensor.element_size()
    size = os.path.getsize(path)
    if size != nbytes:
        raise ValueError(f"{path}: holds {size // max(tensor.element_size(), 1)} elements, "
                         f"manifest says shape {list(shape)}")
    if nbytes:
        host = tensor.view(torch.int16) if name == "bfloat16" else tensor
        view = memoryview(host.numpy().reshape(-1)).cast("B")
        with open(path, "rb", buffering=0) as f:
            done = 0
            while done < nbytes:
                n = f.readinto(view[done:])
                if not n:
                    raise ValueError(f"{path}: ended after {done} of {nbytes} bytes")
                done += n
    return tensor


def read_value(directory: str, entry: Dict[str, Any]) -> Value:
    """Like ``read_tensor``, but scalar entries come back as Python int/float."""
    tensor = read_tensor(directory, entry)
    if entry.get("scalar") == "int":
        return int(tensor.item())
    if entry.get("scalar") == "float":
        return float(tensor.item())
    return tensor


def write_manifest(directory: str, entries: List[Dict[str, Any]]) -> None:
    """Writes ``directory/manifest.json``: ``{"tensors": [entries]}``."""
    with open(os.path.join(directory, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({"tensors": entries}, f, indent=1)


def read_manifest(directory: str) -> List[Dict[str, Any]]:
    """The entries of ``directory/manifest.json``."""
    with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)["tensors"]
