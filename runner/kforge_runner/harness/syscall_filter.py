"""A seccomp filter for the harness process, installed before candidate code loads.

Candidate code may do anything inside its own process, so the filter does not guard the process
itself: it keeps the candidate from reaching *out* of it, where the judge lives, while leaving
what compilers need (fork, exec, pipes, threads: Triton runs ptxas and a C compiler as child
processes, PoCL its linker). Denied with EPERM, for this process and every thread and child
(the filter is inherited and cannot be removed):

- ``setsid``: every process of the candidate stays in the harness's session (``setpgid`` stays
  allowed: ninja, which ``load_inline`` builds with, puts each compiler it spawns in a process
  group of its own; the parent kills and freezes by process tree or cgroup, not by group);
- ``ptrace``, ``process_vm_readv`` and ``process_vm_writev``: no reading or writing the memory of
  another process (the parent, another evaluation's harness) even where the user and the
  ptrace scope would allow it;
- ``kill``, ``tkill``, ``tgkill`` and ``pidfd_open`` aimed at the parent (``getppid()`` when the
  filter is installed) and ``kill(-1, ...)``: the candidate cannot stop or signal the judge;
- ``unshare``, ``setns``, ``mount``, ``umount2``, ``pivot_root``, ``chroot``: no new namespaces
  or mounts (a sandbox that already denies them loses nothing).

Installed through libseccomp (Debian's libseccomp2, loaded with ctypes); where it is missing,
``install`` reports why and the harness runs without it (``observed_isolation.seccomp``).
"""

import ctypes
import ctypes.util
import errno
import os
from typing import Dict, List, Optional, Tuple

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_MASKED_EQ = 7
SCMP_FLTATR_CTL_TSYNC = 4
_LOW_32_BITS = 0xFFFFFFFF

DENIED = ("setsid", "ptrace", "process_vm_readv", "process_vm_writev", "unshare",
          "setns", "mount", "umount2", "pivot_root", "chroot")
# (syscall, argument index) aimed at the parent process.
AIMED_AT_PARENT = (("kill", 0), ("tkill", 0), ("tgkill", 0), ("pidfd_open", 0))


class _ArgCmp(ctypes.Structure):
    """``struct scmp_arg_cmp``."""

    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0x0000FFFF)


def _library() -> Optional[ctypes.CDLL]:
    for name in (ctypes.util.find_library("seccomp"), "libseccomp.so.2"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_init.argtypes = [ctypes.c_uint32]
        lib.seccomp_release.argtypes = [ctypes.c_void_p]
        lib.seccomp_load.argtypes = [ctypes.c_void_p]
        lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                               ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
        return lib
    return None


def _rules(parent: int) -> List[Tuple[str, List[Tuple[int, int]]]]:
    """(syscall, [(argument, 32-bit value)]) for every rule; an empty list matches any call."""
    rules: List[Tuple[str, List[Tuple[int, int]]]] = [(name, []) for name in DENIED]
    rules += [(name, [(arg, parent & _LOW_32_BITS)]) for name, arg in AIMED_AT_PARENT]
    rules.append(("kill", [(0, -1 & _LOW_32_BITS)]))
    return rules


_installed: Dict[str, object] = {}


def install() -> Dict[str, object]:
    """Installs the filter once per process; returns ``{"seccomp": True}`` or
    ``{"seccomp": False, "seccomp_problem": why}`` (for ``observed_isolation``)."""
    if _installed:
        return dict(_installed)
    lib = _library()
    if lib is None:
        _installed.update(seccomp=False, seccomp_problem="libseccomp is not installed")
        return dict(_installed)
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        _installed.update(seccomp=False, seccomp_problem="seccomp_init failed")
        return dict(_installed)
    try:
        # Every thread (torch's pools, the CUDA driver's) gets the filter, not only this one.
        lib.seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)
        action = _act_errno(errno.EPERM)
        for name, conditions in _rules(os.getppid()):
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                continue  # not a system call on this architecture
            array = (_ArgCmp * max(len(conditions), 1))(
                *[_ArgCmp(arg, SCMP_CMP_MASKED_EQ, _LOW_32_BITS, value)
                  for arg, value in conditions])
            status = lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array)
            if status != 0:
                _installed.update(seccomp=False,
                                  seccomp_problem=f"seccomp_rule_add({name}): {os.strerror(-status)}")
                return dict(_installed)
        status = lib.seccomp_load(ctx)
        if status != 0:
            _installed.update(seccomp=False,
                              seccomp_problem=f"seccomp_load: {os.strerror(-status)}")
        else:
            _installed.update(seccomp=True)
    finally:
        lib.seccomp_release(ctx)
    return dict(_installed)
