"""Maps exceptions to protocol statuses and renders them as short diagnostics for an LLM.

Status rules (runner/PROTOCOL.md): out-of-memory errors -> ``out_of_memory``; permission,
read-only-filesystem and network errors (including a socket timing out) -> ``sandbox_violation``;
EAGAIN from fork/thread creation and similar process limits, exhausted descriptors and a full or
size-limited file system (EMFILE, ENFILE, ENOSPC, EDQUOT, EFBIG) -> ``resource_limit``; build/load
failures of the candidate -> ``compile_error``; anything else -> ``runtime_error``. The exception,
its ``__cause__`` and its unsuppressed ``__context__`` are inspected, outermost first, so wrapping
an error does not hide it.
"""

import errno
import os
import socket
import traceback
from typing import Iterable, List, Optional

STATUS_OK = "ok"
STATUS_COMPILE_ERROR = "compile_error"
STATUS_RUNTIME_ERROR = "runtime_error"
STATUS_SANDBOX_VIOLATION = "sandbox_violation"
STATUS_RESOURCE_LIMIT = "resource_limit"
STATUS_OUT_OF_MEMORY = "out_of_memory"
STATUS_INFRA_ERROR = "infra_error"
STATUS_REFERENCE_ERROR = "reference_error"

MAX_LINES = 60
MAX_BYTES = 4096
_MAX_MESSAGE_LINES = 30
_MAX_MESSAGE_BYTES = 2000

_SANDBOX_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENETUNREACH, errno.ECONNREFUSED,
                   errno.EHOSTUNREACH, errno.ENETDOWN}
_RESOURCE_ERRNOS = {errno.EAGAIN, errno.EMFILE, errno.ENFILE, errno.ENOSPC, errno.EDQUOT,
                    errno.EFBIG}
# OpenCL status codes: CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_HOST_MEMORY.
_OPENCL_OOM_CODES = {-4, -6}
_OOM_MESSAGES = ("CUDA out of memory", "HIP out of memory", "out of memory")


class CompileError(Exception):
    """The candidate could not be built or loaded; the message has the build log or the error."""


class LoadStage:
    """Marks where an exception arose: while loading the candidate or while running it."""

    LOAD = "load"
    RUN = "run"


def _chain(exc: BaseException) -> List[BaseException]:
    seen, order, pending = set(), [], [exc]
    while pending:
        e = pending.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        order.append(e)
        pending.append(e.__cause__)
        if not e.__suppress_context__:
            pending.append(e.__context__)
    return order


def _opencl_code(exc: BaseException) -> Optional[int]:
    if not type(exc).__module__.startswith("pyopencl"):
        return None
    try:
        return int(exc.code)
    except Exception:  # pyopencl errors built from a plain string carry no code.
        return None


def _is_build_failure(exc: BaseException) -> bool:
    name = type(exc).__name__
    if isinstance(exc, (CompileError, SyntaxError, ImportError)) or name == "CompilationError":
        return True
    return isinstance(exc, RuntimeError) and "Error building extension" in str(exc)


def _classify_one(exc: BaseException, stage: str) -> Optional[str]:
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return STATUS_OUT_OF_MEMORY
    if isinstance(exc, RuntimeError) and any(m in str(exc) for m in _OOM_MESSAGES):
        return STATUS_OUT_OF_MEMORY
    if _opencl_code(exc) in _OPENCL_OOM_CODES:
        return STATUS_OUT_OF_MEMORY
    if isinstance(exc, (PermissionError, socket.gaierror)):
        return STATUS_SANDBOX_VIOLATION
    # A connect into a firewall that drops packets times out.
    if isinstance(exc, socket.timeout) and str(exc) == "timed out":
        return STATUS_SANDBOX_VIOLATION
    if isinstance(exc, OSError) and exc.errno is not None:
        if exc.errno in _SANDBOX_ERRNOS:
            return STATUS_SANDBOX_VIOLATION
        if exc.errno in _RESOURCE_ERRNOS:
            return STATUS_RESOURCE_LIMIT
        if exc.errno == errno.ENOMEM:
            return STATUS_OUT_OF_MEMORY
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        return STATUS_RESOURCE_LIMIT
    if stage == LoadStage.LOAD and _is_build_failure(exc):
        return STATUS_COMPILE_ERROR
    if type(exc).__name__ == "CompilationError":  # Triton compiles lazily, at the first launch.
        return STATUS_COMPILE_ERROR
    return None


def classify(exc: BaseException, stage: str = LoadStage.RUN) -> str:
    """The protocol status for an exception raised by candidate code during ``stage``."""
    for e in _chain(exc):
        status = _classify_one(e, stage)
        if status is not None:
            return status
    return STATUS_RUNTIME_ERROR


def classify_runner_failure(exc: BaseException) -> Optional[str]:
    """The candidate's status for a failure of the runner's own work (reading inputs, writing
    outputs) after candidate code ran in the process, or None when it is the runner's (infra).

    Candidate code may change what the runner relies on: the permissions of its scratch folder,
    the process's descriptors, the space left in its quota. An operating-system error from the
    runner's own I/O at that point is the candidate's doing (sandbox_violation, resource_limit,
    out_of_memory); anything else stays an infrastructure error."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno is not None:
            if e.errno in _SANDBOX_ERRNOS:
                return STATUS_SANDBOX_VIOLATION
            if e.errno in _RESOURCE_ERRNOS:
                return STATUS_RESOURCE_LIMIT
            if e.errno == errno.ENOMEM:
                return STATUS_OUT_OF_MEMORY
        if isinstance(e, MemoryError):
            return STATUS_OUT_OF_MEMORY
    return None


def _trim_text(text: str, max_lines: int, max_bytes: int) -> str:
    lines = text.splitlines()
    trimmed = len(lines) > max_lines
    text = "\n".join(lines[:max_lines])
    if len(text.encode("utf-8")) > max_bytes:
        text = text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")
        trimmed = True
    return text + ("\n... (trimmed)" if trimmed else "")


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _headline(exc: BaseException) -> str:
    message = str(exc)
    head = _type_name(exc) + (": " + message if message else "")
    return _trim_text(head, _MAX_MESSAGE_LINES, _MAX_MESSAGE_BYTES)


def format_diagnostics(exc: BaseException, own_files: Iterable[str] = (), context: str = "") -> str:
    """A trimmed report of ``exc``: at most ~60 lines and 4 KB.

    Order: ``context`` (e.g. "trial 2"), the exception type and message, the frames that lie in
    ``own_files`` (the candidate's or task's source), the causes, then as many of the innermost
    traceback frames as fit. A CompileError (a build log) gets no traceback.
    """
    own = {os.path.realpath(f) for f in own_files if f}
    sections = []
    sections.append((context + ": " if context else "") + _headline(exc))
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if os.path.realpath(f.filename) in own]
    if mine:
        sections.append("Frames in " + ", ".join(sorted(os.path.basename(f) for f in own))
                        + " (most recent call last):\n"
                        + "".join(traceback.format_list(mine)).rstrip())
    for cause in _chain(exc)[1:3]:
        sections.append("Caused by / during: " + _headline(cause))
    if isinstance(exc, CompileError):  # the build log is the whole story; runner frames are noise
        return _trim_text("\n".join(sections), MAX_LINES, MAX_BYTES)
    head = "\n".join(sections)
    remaining_lines = max(MAX_LINES - head.count("\n") - 3, 0)
    remaining_bytes = max(MAX_BYTES - len(head.encode("utf-8")) - 80, 0)
    tail_lines = "".join(traceback.format_tb(exc.__traceback__)).rstrip().splitlines()
    tail_lines = tail_lines[-remaining_lines:] if remaining_lines else []
    while tail_lines and len("\n".join(tail_lines).encode("utf-8")) > remaining_bytes:
        tail_lines = tail_lines[1:]
    if tail_lines:
        head += "\nTraceback (most recent call last, innermost frames):\n" + "\n".join(tail_lines)
    return _trim_text(head, MAX_LINES, MAX_BYTES)
