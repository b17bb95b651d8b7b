"""Wall-clock seconds per named step of a phase, reported as the result's ``steps`` object.

Diagnostic only (runner/PROTOCOL.md, "Step times"): nothing decides on these figures, so a
candidate that tampers with the clock gains nothing here (tamper_guard reports the tampering).
"""

import contextlib
import time
from typing import Dict, Iterator


class PhaseClock:
    """Accumulates the seconds spent in each named step; a step may be entered many times."""

    def __init__(self) -> None:
        self._seconds: Dict[str, float] = {}

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - started)

    def add(self, name: str, seconds: float) -> None:
        self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    def as_dict(self) -> Dict[str, float]:
        """``{step: seconds}``, rounded to microseconds, in the order the steps first ran."""
        return {name: round(seconds, 6) for name, seconds in self._seconds.items()}
