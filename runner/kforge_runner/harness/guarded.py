"""Running candidate code from the harness: every exception becomes a protocol status.

``run_guarded`` calls into candidate code (or the task's, for the baselines) inside
``process_guard.candidate_code()`` (a forked child that returns into harness code exits with
status 70) and turns whatever it raises into ``CandidateFailure`` with the status of
runner/PROTOCOL.md "Statuses from exceptions" and diagnostics trimmed for an LLM.
"""

from typing import Any, Callable, Iterable

from kforge_runner import errors, process_guard


class CandidateFailure(Exception):
    """Candidate code raised; carries the protocol status and trimmed diagnostics."""

    def __init__(self, status: str, diagnostics: str):
        super().__init__(diagnostics)
        self.status = status
        self.diagnostics = diagnostics


def run_guarded(stage: str, own_files: Iterable[str], context: str, fn: Callable[..., Any],
                *args) -> Any:
    """``fn(*args)`` as candidate code; ``stage`` is errors.LoadStage.LOAD or RUN."""
    try:
        with process_guard.candidate_code():
            return fn(*args)
    except (Exception, SystemExit) as e:  # pylint: disable=broad-except
        raise CandidateFailure(errors.classify(e, stage),
                               errors.format_diagnostics(e, list(own_files), context)) from None
