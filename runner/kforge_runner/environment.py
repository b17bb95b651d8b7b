"""The software and device a phase ran on, for the ``environment`` field of every result.

Versions are read from package metadata, so reporting Triton's version does not import Triton.
"""

import functools
import importlib.metadata
import platform
from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch


def _package_version(name: str) -> Optional[str]:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def device_name(device: torch.device) -> str:
    """The accelerator's marketing name for cuda devices, else the device type ("cpu")."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return device.type


def describe(device: torch.device) -> Dict[str, Any]:
    """``{"python", "torch", "numpy", "device_name", "triton"}``; triton None if not installed.

    Worked out once per process and device (a warm runner does it while waiting for its job);
    each call returns a fresh dict.
    """
    return dict(_describe(str(device)))


@functools.lru_cache(maxsize=None)
def _describe(device: str) -> Tuple[Tuple[str, Any], ...]:
    return (("python", platform.python_version()),
            ("torch", torch.__version__),
            ("numpy", np.__version__),
            ("device_name", device_name(torch.device(device))),
            ("triton", _package_version("triton")))
