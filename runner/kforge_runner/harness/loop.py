"""The harness's command loop (runner/HARNESS.md): one reply per command, in order, until
``quit`` or until the parent closes the channel.

State: the arena and device (``hello``), the timing sets (``prepare_timing``: private host copies
of their inputs, read once), and what is served: nothing before ``load`` (``sample`` then takes an
empty call, so that the parent learns the protocol's own cost), then a module candidate, an
OpenCL candidate, or the reference ``Model`` in one of its variants (the baselines; several
reference variants may be loaded in turn, nothing after a candidate).

Replies: a parent mistake (``ProtocolError``, ``ClockError``) is ``infra_error``; what candidate
code raises is its status (guarded.py); anything else raised before a candidate was loaded is
``infra_error``, after it the status its exception classifies as (the candidate may have broken
the device context the harness shares with it). Replies of ``call``, ``sample`` and ``graph``
after a candidate loaded carry ``findings`` when the clocks or the harness's timing functions
are no longer the objects bound before it loaded.
"""

from typing import Any, Dict, List, Optional, Tuple

import torch

from kforge_runner import environment, errors, isolation, tamper_guard, timing
from kforge_runner.current_device import use_device
from kforge_runner.errors import LoadStage
from kforge_runner.harness import messages, sampling, syscall_filter
from kforge_runner.harness.arena import Arena
from kforge_runner.harness.channel import Channel, ChannelError
from kforge_runner.harness.guarded import CandidateFailure, run_guarded
from kforge_runner.harness.messages import ProtocolError
from kforge_runner.harness.sampling import ClockError, DeviceClock
from kforge_runner.harness.served_torch import (TorchServed, load_module_candidate,
                                                load_reference, load_task)

HARNESS_NAME = "kforge_runner"
CANDIDATE_KINDS = ("module", "opencl")

# Bound here, before any candidate code loads (the loop module is imported at start-up).
_WATCH = tamper_guard.ClockWatch([timing, sampling])


def _infra(diagnostics: str) -> Dict[str, Any]:
    return {"ok": False, "status": errors.STATUS_INFRA_ERROR, "diagnostics": diagnostics}


def _regions(command) -> List[Tuple[messages.Region, str]]:
    """Every region a command names, with where it was named."""
    found: List[Tuple[messages.Region, str]] = []
    if isinstance(command, messages.Load):
        found += [(d.region, f"load.state[{i}]") for i, d in enumerate(command.state)]
    elif isinstance(command, messages.Call):
        found += [(d.region, f"call.inputs[{i}]") for i, d in enumerate(command.inputs)]
        found += [(d.region, f"call.outputs[{i}]") for i, d in enumerate(command.outputs)]
        found += [(r, f"call.inputs_after[{i}]") for i, r in enumerate(command.inputs_after)]
    elif isinstance(command, messages.PrepareTiming):
        for k, s in enumerate(command.sets):
            found += [(d.region, f"prepare_timing.sets[{k}].inputs[{i}]")
                      for i, d in enumerate(s.inputs)]
            found += [(d.region, f"prepare_timing.outputs[{k}][{i}]")
                      for i, d in enumerate(s.outputs)]
    return found


class Harness:
    def __init__(self, channel: Channel):
        self.channel = channel
        self.arena: Optional[Arena] = None
        self.device: Optional[torch.device] = None
        self.clock: Optional[DeviceClock] = None
        self.opencl_device = None
        self.served = None
        self.candidate_loaded = False
        self.sets: List[Tuple[messages.TimingSet, List[Any]]] = []
        self.default_mode = "cpu"
        self._empty: Dict[str, Any] = {}

    # -- the loop ----------------------------------------------------------------------------

    def serve(self) -> int:
        """Answers commands until ``quit`` or the end of the channel; returns the exit status.

        Every reply echoes its command's ``id`` (runner/HARNESS.md "Ids"): the parent takes a
        reply without it, or with another, for a protocol break."""
        while True:
            try:
                message = self.channel.receive()
            except ChannelError as e:
                self.channel.send(_infra(f"channel: {e}"))
                continue
            if message is None:
                return 0
            ident = message.get("id") if isinstance(message, dict) else None

            def send(reply: Dict[str, Any]) -> None:
                if ident is not None:
                    reply["id"] = ident
                self.channel.send(reply)

            try:
                command = messages.parse(message)
            except ProtocolError as e:
                send(_infra(str(e)))
                continue
            except Exception as e:  # pylint: disable=broad-except  # a harness bug: say so
                send(_infra(errors.format_diagnostics(e, context="harness (parse)")))
                continue
            if isinstance(command, messages.Quit):
                return 0
            reply = self._answer(command)
            try:
                send(reply)
            except ChannelError as e:
                send(_infra(f"the reply could not be sent: {e}"))

    def _answer(self, command) -> Dict[str, Any]:
        name = type(command).__name__.lower()
        try:
            if not isinstance(command, messages.Hello):
                if self.arena is None:
                    raise ProtocolError(f"{name} before hello")
                for region, where in _regions(command):
                    self.arena.check(region, where)
            reply = getattr(self, "_" + _HANDLERS[type(command)])(command)
        except (ProtocolError, ClockError) as e:
            return _infra(str(e))
        except CandidateFailure as failure:
            reply = {"ok": False, "status": failure.status, "diagnostics": failure.diagnostics}
        except Exception as e:  # pylint: disable=broad-except
            if not self.candidate_loaded:
                return _infra(errors.format_diagnostics(e, context=f"harness ({name})"))
            reply = {"ok": False, "status": errors.classify(e),
                     "diagnostics": errors.format_diagnostics(
                         e, context=f"{name} (harness code, after the candidate loaded)")}
        if self.candidate_loaded and isinstance(command, (messages.Call, messages.Sample,
                                                          messages.Graph)):
            findings = _WATCH.replaced()
            if findings:
                reply["findings"] = findings
        return reply

    # -- commands ----------------------------------------------------------------------------

    def _hello(self, command: messages.Hello) -> Dict[str, Any]:
        if self.arena is not None:
            raise ProtocolError("a second hello")
        self.device = torch.device(command.device)
        if not _available(self.device.type):
            raise ProtocolError(f"hello.device: {command.device}, but this torch "
                                f"({torch.__version__}) has no such device available")
        self.arena = Arena(command.arena_bytes)
        use_device(command.device)
        self.clock = DeviceClock(self.device)
        if self.device.type == "cuda":
            _warm_device_kernels(self.device)
            self.clock.prepare()
        env = environment.describe(self.device)
        if command.opencl_platform is not None:
            from kforge_runner.harness.served_opencl import OpenCLDevice
            self.opencl_device = OpenCLDevice(command.opencl_platform)
            env["opencl_device"] = self.opencl_device.device.name
        return {"ok": True, "harness": HARNESS_NAME, "protocol": messages.PROTOCOL_VERSION,
                "environment": env, "observed_isolation": isolation.observe()}

    def _load(self, command: messages.Load) -> Dict[str, Any]:
        spec = command.candidate
        if self.candidate_loaded:
            raise ProtocolError("load: a candidate is loaded already; a harness serves one")
        reply: Dict[str, Any] = {"ok": True}
        # The task's code (trusted: its failure is the parent's problem, not the candidate's).
        task = load_task(spec) if spec.kind in ("module", "reference") else None
        if spec.kind in CANDIDATE_KINDS:
            # From here on candidate code may run: the filter goes first, and stays.
            self.candidate_loaded = True
            reply.update(syscall_filter.install())
        state = {d.key if d.key is not None else str(i): self.arena.read(d)
                 for i, d in enumerate(command.state)}
        if spec.kind == "opencl":
            from kforge_runner.harness.served_opencl import OpenCLDevice, OpenCLServed
            platform = spec.opencl_platform or (self.opencl_device.platform
                                                if self.opencl_device else None)
            if platform is None:
                raise ProtocolError("load.candidate.opencl_platform: required (or name it in "
                                    "hello)")
            if self.opencl_device is None or self.opencl_device.platform != platform:
                self.opencl_device = OpenCLDevice(platform)
            self.served = OpenCLServed(self.opencl_device, self.arena, spec.source_file,
                                       list(state.values()))
            reply["environment"] = dict(self.served.environment)
            return reply
        if spec.kind == "module":
            model, fields = run_guarded(LoadStage.LOAD, [spec.source_file],
                                        "loading the candidate", load_module_candidate, spec,
                                        task, state, self.device)
            reply.update(fields)
            own = [spec.source_file]
        else:
            model = run_guarded(LoadStage.LOAD, [spec.task_file], "loading the reference",
                                load_reference, spec, task, state, self.device)
            own = [spec.task_file]
        self.served = TorchServed(self.device, self.clock, self.arena, model, own)
        return reply

    def _call(self, command: messages.Call) -> Dict[str, Any]:
        if self.served is None:
            raise ProtocolError("call before load")
        return self.served.call(command)

    def _prepare_timing(self, command: messages.PrepareTiming) -> Dict[str, Any]:
        self.sets = [(s, [self.arena.read(d) for d in s.inputs]) for s in command.sets]
        self.default_mode = command.clock
        for served in [self.served] + list(self._empty.values()):
            if served is not None:
                served.forget_sets()
        return {"ok": True}

    def _timing_set(self, index: int) -> Tuple[messages.TimingSet, List[Any]]:
        if index >= len(self.sets):
            raise ProtocolError(f"set {index}: prepare_timing prepared {len(self.sets)} sets")
        return self.sets[index]

    def _empty_served(self, mode: str):
        """What an empty sample before ``load`` runs on: the OpenCL path for ``opencl-events``,
        the torch path otherwise."""
        path = "opencl" if mode == "opencl-events" else "torch"
        if path not in self._empty:
            if path == "opencl":
                if self.opencl_device is None:
                    raise ProtocolError("sample: opencl-events before load needs "
                                        "hello.opencl_platform")
                from kforge_runner.harness.served_opencl import OpenCLServed
                self._empty[path] = OpenCLServed(self.opencl_device, self.arena)
            else:
                self._empty[path] = TorchServed(self.device, self.clock, self.arena)
        return self._empty[path]

    def _sample(self, command: messages.Sample) -> Dict[str, Any]:
        tset, host_inputs = self._timing_set(command.set)
        buffers = command.set if command.buffers is None else command.buffers
        other, _ = self._timing_set(buffers)
        def layout(descs):
            return [(d.dtype, d.shape) for d in descs]
        if (layout(other.inputs), layout(other.outputs)) != (layout(tset.inputs),
                                                             layout(tset.outputs)):
            raise ProtocolError(f"sample.buffers: set {buffers}'s inputs or outputs differ in "
                                f"dtype or shape from set {command.set}'s")
        mode = command.mode or self.default_mode
        served = self.served if self.served is not None else self._empty_served(mode)
        return served.sample(command.set, tset, host_inputs, mode, command.spin_s,
                             buffers, self.sets[buffers])

    def _graph(self, command: messages.Graph) -> Dict[str, Any]:
        if self.served is None:
            raise ProtocolError("graph before load")
        tset, host_inputs = self._timing_set(command.set)
        return self.served.graph(command.set, tset, host_inputs, command.calls)


_HANDLERS = {messages.Hello: "hello", messages.Load: "load", messages.Call: "call",
             messages.PrepareTiming: "prepare_timing", messages.Sample: "sample",
             messages.Graph: "graph"}


def _available(device_type: str) -> bool:
    if device_type == "cpu":
        return True
    if device_type == "mps":
        return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    module = getattr(torch, device_type, None)
    return module is not None and module.is_available()


def _warm_device_kernels(device: torch.device) -> None:
    """Loads the kernels the harness itself uses (copies both ways, poison fills, the flush
    read), so that their lazy module loading is not paid inside a sample."""
    x = torch.rand(1024).to(device)
    y = torch.full((1024,), float("nan"), device=device)
    y.copy_(x)
    x.clone().view(torch.uint8).fill_(0x5A)
    torch.zeros(1024, dtype=torch.int32, device=device).sum().item()
    x.to("cpu")
    torch.cuda.synchronize(device)


def main() -> int:
    """``python3 -m kforge_runner --harness``: serves the channel at fd 3 and the arena at fd 4."""
    return Harness(Channel()).serve()
