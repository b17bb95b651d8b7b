"""Dynamic guardrails: what candidate code did to the runner, checked at run time.

The static guardrails (src/eval/guardrails.cc) read the source; these checks look at what
happened. Each finding is one line ``"[check-id] what was seen"`` in the candidate result's
``tampering`` list; the orchestrator turns any finding into status ``guardrail``.

- ``timer-patch``: the clock functions and the runner's own timing functions are bound when this
  module is imported (before any candidate code loads); a candidate that rebinds one of them
  (``time.perf_counter_ns = ...``, ``torch.cuda.Event.elapsed_time = ...``, the runner's
  ``timing.measure``) is found by identity.
- ``thread-injection``: a Python thread still alive after a call whose target (or ``run``) is
  code from the candidate's file.
- ``output-late-write``: an output that changed after the call returned (and the device was
  synchronised): work finished behind the timer's back, by a thread or a side stream.
"""

import threading
import time
from typing import Any, Callable, List, Optional, Tuple

import torch

from kforge_runner import input_guard
from kforge_runner import timing as _timing

LATE_WRITE_DELAY_S = 0.02
# Bound before any candidate code loads: the late-write delay cannot be shortened by patching them.
_cuda_synchronize = torch.cuda.synchronize
_monotonic = time.monotonic
_sleep = time.sleep


def now() -> float:
    """``time.monotonic()`` as bound at import: the ``since`` of ``late_writes``."""
    return _monotonic()


def synchronizer(device: torch.device) -> Callable[[], None]:
    """Waits for all work on ``device`` with the synchronize bound before candidates load."""
    if device.type == "cuda":
        return lambda: _cuda_synchronize(device)
    return lambda: None


def _watched(modules) -> List[Tuple[str, Any, str]]:
    """(shown name, owner, attribute) of everything a timing result depends on: the clocks, and
    the functions defined in each of ``modules`` (the runner's timing code; its API may grow)."""
    items = [("time.perf_counter_ns", time, "perf_counter_ns"),
             ("time.perf_counter", time, "perf_counter"),
             ("time.monotonic", time, "monotonic"),
             ("time.monotonic_ns", time, "monotonic_ns"),
             ("time.time", time, "time")]
    for module in modules:
        # Every callable it holds: its own functions and the clocks it bound at import
        # (``_perf_counter_ns = time.perf_counter_ns``), which a candidate could rebind there.
        for name, value in sorted(vars(module).items()):
            if callable(value) and not name.startswith("__"):
                items.append((f"{module.__name__}.{name}", module, name))
    if hasattr(torch, "cuda"):
        items += [("torch.cuda.synchronize", torch.cuda, "synchronize"),
                  ("torch.cuda.Event", torch.cuda, "Event")]
        event = getattr(torch.cuda, "Event", None)
        if event is not None:
            for attr in ("record", "elapsed_time", "synchronize", "query"):
                if hasattr(event, attr):
                    items.append((f"torch.cuda.Event.{attr}", event, attr))
    return items


def _bound(owner: Any, attr: str) -> Any:
    return owner.__dict__.get(attr, getattr(owner, attr, None))


class ClockWatch:
    """The clocks and the timing functions of ``modules`` as bound when the watch was made
    (before any candidate code loads); ``replaced`` names each one that is another object now."""

    def __init__(self, modules):
        self._originals = [(shown, owner, attr, _bound(owner, attr))
                           for shown, owner, attr in _watched(modules)]

    def replaced(self) -> List[str]:
        return [f"[timer-patch] {shown} was replaced by candidate code"
                for shown, owner, attr, original in self._originals
                if _bound(owner, attr) is not original]


_WATCH = ClockWatch([_timing])


def replaced_clocks() -> List[str]:
    """Findings for every watched function that is no longer the one bound at import."""
    return _WATCH.replaced()


def _code_file(fn: Any) -> Optional[str]:
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return code.co_filename if code is not None else None


def injected_threads(candidate_file: Optional[str]) -> List[str]:
    """Findings for live Python threads that run code from ``candidate_file``."""
    if not candidate_file:
        return []
    found = []
    for t in threading.enumerate():
        if t is threading.current_thread() or not t.is_alive():
            continue
        files = {_code_file(getattr(t, "_target", None)), _code_file(type(t).run)}
        if candidate_file in files:
            found.append(f"[thread-injection] thread {t.name!r} started by the candidate is still "
                         "running after the call returned")
    return found


def snapshot(outputs: List[Any]) -> List[Optional[torch.Tensor]]:
    """Copies of the plain-tensor outputs, taken as soon as the call has returned."""
    return [o.detach().clone() if type(o) is torch.Tensor else None for o in outputs]


def late_writes(outputs: List[Any], copies: List[Optional[torch.Tensor]],
                sync: Callable[[], None], delay_s: float = LATE_WRITE_DELAY_S,
                since: Optional[float] = None) -> List[str]:
    """Findings for outputs that differ from their snapshot at least ``delay_s`` after it was taken
    (``since``: ``now()`` when the snapshot was taken; default: at this call), after a sync."""
    if not any(c is not None for c in copies):
        return []
    wait = delay_s if since is None else delay_s - (_monotonic() - since)
    if wait > 0:
        _sleep(wait)
    sync()
    found = []
    for i, (live, copy) in enumerate(zip(outputs, copies)):
        if copy is not None and not input_guard.identical(copy, live):
            found.append(f"[output-late-write] output {i} changed after the call had returned: "
                         "work went on behind the timer's back (a thread or another stream)")
    return found

