"""A small fake parent for the harness protocol (runner/HARNESS.md), for the runner's tests.

It does what the C++ parent (src/eval) does at the edges: a SOCK_SEQPACKET socket pair and a
memfd arena handed to ``python3 -m kforge_runner --harness`` at fds 3 and 4, one command and one
reply at a time, tensors put into and read back from arena regions. It judges nothing (no
freeze, no comparison): the tests do that with the values it reads back.
"""

import json
import mmap
import os
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

import torch

RUNNER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALIGN = 64
DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
               torch.float64: "float64", torch.int32: "int32", torch.int64: "int64",
               torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool"}
TORCH_DTYPES = {v: k for k, v in DTYPE_NAMES.items()}

# Starts the harness with the channel at fd 3 and the arena at fd 4, whatever numbers they had.
_TRAMPOLINE = ("import os, sys; c, a = int(sys.argv[1]), int(sys.argv[2]); "
               "os.dup2(c, 3); os.dup2(a, 4); [os.close(f) for f in (c, a) if f > 4]; "
               "os.execv(sys.executable, [sys.executable, '-m', 'kforge_runner', '--harness'])")


class FakeParent:
    def __init__(self, arena_bytes: int = 16 << 20, cwd: Optional[str] = None,
                 env_extra: Optional[Dict[str, str]] = None, python: str = sys.executable):
        self.sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        memfd = os.memfd_create("kforge-arena")
        os.ftruncate(memfd, arena_bytes)
        self.arena_bytes = arena_bytes
        self.map = mmap.mmap(memfd, arena_bytes)
        env = dict(os.environ)
        env["PYTHONPATH"] = RUNNER_ROOT
        env.update(env_extra or {})
        self.log_path = os.path.join(cwd or "/tmp", f"harness-{os.getpid()}-{id(self)}.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [python, "-c", _TRAMPOLINE, str(child.fileno()), str(memfd)],
            pass_fds=(child.fileno(), memfd), env=env, cwd=cwd, stdout=self._log,
            stderr=subprocess.STDOUT)
        child.close()
        os.close(memfd)
        self._next = 0

    # -- the arena ---------------------------------------------------------------------------

    def reset_arena(self) -> None:
        """Forgets every region (the next ones start at offset 0 again)."""
        self._next = 0

    def region(self, nbytes: int) -> Dict[str, int]:
        offset = self._next
        self._next = (offset + nbytes + ALIGN - 1) // ALIGN * ALIGN
        assert self._next <= self.arena_bytes, "the test's arena is too small"
        return {"offset": offset, "bytes": nbytes}

    def view(self, desc: Dict[str, Any]) -> torch.Tensor:
        dtype = TORCH_DTYPES[desc["dtype"]]
        numel = 1
        for d in desc["shape"]:
            numel *= d
        if numel == 0:
            return torch.empty(desc["shape"], dtype=dtype)
        return torch.frombuffer(self.map, dtype=dtype, count=numel,
                                offset=desc["region"]["offset"]).view(desc["shape"])

    def put(self, value: Any) -> Dict[str, Any]:
        """Writes a tensor (or a Python number, as a 0-d float64 scalar) into a new region."""
        desc = self.empty_like(value)
        view = self.view(desc)
        view.copy_(value if isinstance(value, torch.Tensor) else torch.tensor(float(value)))
        return desc

    def empty_like(self, value: Any) -> Dict[str, Any]:
        if isinstance(value, torch.Tensor):
            return self.output(DTYPE_NAMES[value.dtype], list(value.shape))
        desc = self.output("float64", [])
        desc["scalar"] = "int" if isinstance(value, int) else "float"
        return desc

    def output(self, dtype: str, shape: List[int]) -> Dict[str, Any]:
        numel = 1
        for d in shape:
            numel *= d
        size = torch.empty((), dtype=TORCH_DTYPES[dtype]).element_size()
        return {"dtype": dtype, "shape": list(shape), "region": self.region(numel * size)}

    def get(self, desc: Dict[str, Any]) -> torch.Tensor:
        """A private copy of a region's tensor."""
        return self.view(desc).clone()

    # -- the channel -------------------------------------------------------------------------

    def send(self, command: str, timeout: float = 120.0, **fields) -> Optional[Dict[str, Any]]:
        """Sends one command and returns its reply (None for ``quit``)."""
        message = {"command": command, **fields}
        self.sock.sendall(json.dumps(message).encode())
        if command == "quit":
            return None
        self.sock.settimeout(timeout)
        data = self.sock.recv(65536 + 1)
        assert data, f"the harness closed the channel; its log:\n{self.log()}"
        return json.loads(data)

    def send_raw(self, data: bytes, timeout: float = 60.0) -> Dict[str, Any]:
        self.sock.sendall(data)
        self.sock.settimeout(timeout)
        return json.loads(self.sock.recv(65536 + 1))

    def hello(self, device: str = "cpu", **fields) -> Dict[str, Any]:
        return self.send("hello", arena_bytes=self.arena_bytes, device=device, protocol=2,
                         **fields)

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def close(self, timeout: float = 30.0) -> int:
        """Sends ``quit`` (if the harness still runs) and returns its exit status."""
        if self.proc.poll() is None:
            try:
                self.send("quit")
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.proc.poll() is None:
            self.proc.kill()
        self.sock.close()
        self._log.close()
        return self.proc.wait()


class Session:
    """A harness serving one candidate on a ReLU-like task of one input and one output of
    ``shape`` (float32), with two timing sets prepared before the candidate loads."""

    def __init__(self, folder, source_file, kind="module", task_file=None, overrides=None,
                 device="cpu", shape=(8, 64), opencl_platform="Portable Computing Language"):
        cwd = os.path.join(str(folder), "cwd")
        os.makedirs(cwd, exist_ok=True)
        self.parent = FakeParent(cwd=cwd, env_extra={"POCL_CACHE_DIR": str(folder)},
                                 arena_bytes=64 << 20)
        self.device = device
        self.hello = self.parent.hello(device=device)
        assert self.hello["ok"], self.hello
        self.xs = [torch.randn(*shape), torch.randn(*shape) * 2]
        self.outs = [[self.parent.output("float32", list(shape))] for _ in self.xs]
        clock = "opencl-events" if kind == "opencl" else ("cold" if device != "cpu" else "cpu")
        self.parent.send("prepare_timing", sets=[{"inputs": [self.parent.put(x)]}
                                                  for x in self.xs],
                         outputs=self.outs, clock=clock)
        candidate = {"kind": kind, "source_file": source_file}
        if kind == "module":
            candidate.update(task_file=task_file, overrides=overrides or {}, init_seed=1)
        else:
            candidate["opencl_platform"] = opencl_platform
        self.loaded = self.parent.send("load", candidate=candidate, timeout=600)

    def call(self, x, reuse=False):
        """One call on ``x``: (reply, output read back, input as it is after the call)."""
        ins = [self.parent.put(x)]
        out = self.parent.output("float32", list(x.shape))
        after = self.parent.output("float32", list(x.shape))
        reply = self.parent.send("call", inputs=ins, outputs=[out],
                                 inputs_after=[after["region"]], reuse=reuse, timeout=600)
        return reply, self.parent.get(out), self.parent.get(after)

    def samples(self, n, **fields):
        """``n`` samples rotating over the two sets: [(reply, output, relu of the set)]."""
        taken = []
        for k in range(n):
            reply = self.parent.send("sample", set=k % 2, timeout=600, **fields)
            taken.append((reply, self.parent.get(self.outs[k % 2][0]),
                          torch.relu(self.xs[k % 2])))
        return taken

    def close(self):
        status = self.parent.close()
        assert status == 0, self.parent.log()
