"""Keeps candidate-spawned processes out of runner code.

Candidate code runs inside the runner process and may fork. Only the process that started the runner
(the *original* process) may continue runner work or write the result; a forked child that returns
from candidate code into runner code exits at once with status 70.

``os.getpid`` and ``os._exit`` are bound at import time, before any candidate code runs, so that a
candidate rebinding them in the ``os`` module does not disable the guard.
"""

import contextlib
import os

_getpid = os.getpid
_exit = os._exit
_ORIGINAL_PID = _getpid()

FORKED_CHILD_EXIT_CODE = 70

_candidate_ran = False


def candidate_ran() -> bool:
    """True once candidate code has run in this process (loaded or called): from then on the
    process, its descriptors and its scratch folder are the candidate's as much as the runner's."""
    return _candidate_ran


def is_original_process() -> bool:
    """True in the process that imported the runner, false in any process forked from it."""
    return _getpid() == _ORIGINAL_PID


def exit_if_forked() -> None:
    """Ends the calling process with status 70 unless it is the original runner process."""
    if not is_original_process():
        _exit(FORKED_CHILD_EXIT_CODE)


@contextlib.contextmanager
def candidate_code():
    """Wraps a call into candidate code: on every way out of it, forked children exit."""
    global _candidate_ran
    _candidate_ran = True
    try:
        yield
    finally:
        exit_if_forked()
