"""Observes, from inside the runner, which isolation the orchestrator's sandbox actually provides.

Reported in the candidate result (``observed_isolation``) so that a run can show it was sandboxed.
Probes are made before candidate code is loaded and leave nothing behind.
"""

import os
import pwd
import socket
from typing import Any, Dict

_PROBE_HOST = ("1.1.1.1", 53)
_CONNECT_TIMEOUT_S = 0.5
_WRITE_PROBE_DIRS = ("/", "/usr")


def _network_blocked() -> bool:
    """True unless a TCP connection to 1.1.1.1:53 succeeds within the timeout.

    A UDP connect only needs a route, so it is tried first: when even that fails, the TCP
    attempt (and its timeout) is skipped.
    """
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        try:
            with socket.socket(socket.AF_INET, kind) as s:
                s.settimeout(_CONNECT_TIMEOUT_S)
                s.connect(_PROBE_HOST)
        except OSError:
            return True
    return False


def _root_read_only() -> bool:
    """True when no file can be created in / or /usr; a created probe file is removed at once."""
    for directory in _WRITE_PROBE_DIRS:
        path = os.path.join(directory, f".kforge_isolation_probe_{os.getpid()}")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except OSError:
            continue
        os.close(fd)
        os.unlink(path)
        return False
    return True


def _user() -> str:
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


_observed: Dict[str, Any] = {}


def observe() -> Dict[str, Any]:
    """``{"network_blocked": bool, "root_read_only": bool, "user": effective user name}``.

    Probed once per process (the sandbox does not change while it runs; a warm runner probes
    while waiting for its job, before any candidate code loads); each call returns a fresh dict.
    """
    if not _observed:
        _observed.update({"network_blocked": _network_blocked(),
                          "root_read_only": _root_read_only(),
                          "user": _user()})
    return dict(_observed)
