"""Timing of decode steps, shared by the profile and measure phases: each step between two
device synchronisations, so a step's time is its whole cost (host and device)."""

import time
from typing import List

import torch


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_steps(session, steps: int, device: torch.device) -> List[float]:
    """Seconds of each of `steps` calls of `session.step()`."""
    samples = []
    for _ in range(steps):
        sync(device)
        start = time.perf_counter()
        session.step()
        sync(device)
        samples.append(time.perf_counter() - start)
    return samples
