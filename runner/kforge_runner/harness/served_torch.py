"""Served torch modules: a module candidate's ``ModelNew``, or the task's reference ``Model`` as
is or through ``torch.compile`` (the baselines), or nothing (the empty samples before ``load``).

All three go through the same ``call``/``sample``/``graph`` code, so the baselines are timed
exactly like candidates (EVAL-PROTOCOL timing rule 6). What surrounds every call, outside the
timed region: inputs at fresh addresses (``call``) or restored from the set's pristine device
copies (``sample``), freed CUDA memory filled with NaN (poison.py), no autograd; after it, each
returned output checked (a plain strided tensor of the reference's dtype, shape and device
type: a subclass is a lazy output, a problem, never an output), copied into its arena region
when it passes (else the region is poisoned), and then refilled with poison itself, so a
tensor the module hands back again without writing it reads as poison.
"""

import dataclasses
from typing import Any, Dict, Iterable, List, Optional, Tuple

import torch

from kforge_runner import input_guard, poison, source_loader, task_loader, tensor_files
from kforge_runner.errors import CompileError, LoadStage
from kforge_runner.harness.arena import Arena
from kforge_runner.harness.guarded import run_guarded
from kforge_runner.harness.messages import (ITEMSIZE, Call, CandidateSpec, ProtocolError,
                                            TensorDesc, TimingSet)
from kforge_runner.harness.sampling import DeviceClock, synchronizer
from kforge_runner.module_candidate import output_problem
from kforge_runner.protocol import TaskSpec

CANDIDATE_MODULE_NAME = "kforge_candidate"


def _as_list(value: Any) -> List[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _describe(value: Any) -> Dict[str, Any]:
    if isinstance(value, torch.Tensor):
        return {"dtype": tensor_files.DTYPE_NAMES.get(value.dtype, str(value.dtype)),
                "shape": list(value.shape)}
    return {"type": type(value).__name__}


def _bytes_of(descs: Iterable[TensorDesc]) -> int:
    return sum(d.numel * ITEMSIZE[d.dtype] for d in descs)


def _shapes_match(model: torch.nn.Module, state: Dict[str, torch.Tensor]) -> bool:
    own = model.state_dict()
    return own.keys() == state.keys() and all(own[k].shape == state[k].shape for k in own)


def load_task(spec: CandidateSpec) -> task_loader.Task:
    """The task module from the task file with the overrides (the task's code, not the
    candidate's: a failure here is the parent's problem)."""
    return task_loader.load_task(TaskSpec(name="task", source_file=spec.task_file,
                                          overrides=spec.overrides))


def load_module_candidate(spec: CandidateSpec, task: task_loader.Task,
                          state: Dict[str, torch.Tensor],
                          device: torch.device) -> Tuple[torch.nn.Module, Dict[str, Any]]:
    """Executes the candidate file and builds ``ModelNew`` as the reference phase built
    ``Model``; loads the reference state when the keys and shapes match. Candidate code: the
    caller runs it guarded. Returns the model and the reply's fields (``state_loaded``)."""
    module = source_loader.load_module(spec.source_file, CANDIDATE_MODULE_NAME)
    if not hasattr(module, "ModelNew"):
        raise CompileError(f"{spec.source_file} does not define class ModelNew")
    model, _ = task_loader.construct(module.ModelNew, task, spec.init_seed, device)
    state_loaded = _shapes_match(model, state)
    if state_loaded:
        model.load_state_dict({k: v.to(device) for k, v in state.items()})
    return model, {"state_loaded": state_loaded}


def load_reference(spec: CandidateSpec, task: task_loader.Task, state: Dict[str, torch.Tensor],
                   device: torch.device):
    """The task's ``Model`` with the reference state, as is (``eager``) or through
    ``torch.compile`` (``compile``: default mode; ``compile-max-autotune``). Compilation itself
    happens at the first call."""
    model, _ = task_loader.construct(task.model_class, task, spec.init_seed, device)
    if state:
        model.load_state_dict({k: v.to(device) for k, v in state.items()})
    if spec.variant == "eager":
        return model
    if not hasattr(torch, "compile"):
        raise RuntimeError(f"torch {torch.__version__} has no torch.compile")
    if spec.variant == "compile-max-autotune":
        return torch.compile(model, mode="max-autotune")
    return torch.compile(model)


@dataclasses.dataclass
class _DeviceSet:
    """One timing set on the device: pristine copies, the working values handed to the module
    (restored from the pristine ones before every sample), and for the empty samples poisoned
    tensors of the set's output shapes (what an empty call "returns")."""

    pristine: List[Any]
    working: List[Any]
    empty_outputs: List[torch.Tensor]
    working_set: int


class TorchServed:
    """Calls, samples and graphs of one torch module on one device (``model`` None: the empty
    call of the samples before ``load``)."""

    def __init__(self, device: torch.device, clock: DeviceClock, arena: Arena,
                 model: Optional[Any] = None, own_files: Iterable[str] = ()):
        self.device = device
        self.clock = clock
        self.arena = arena
        self.model = model
        self.own_files = [f for f in own_files if f]
        self._used_addresses: set = set()
        self._last_handed: Optional[List[Any]] = None
        self._sets: Dict[int, _DeviceSet] = {}
        self._sync = synchronizer(device)

    # -- calls -------------------------------------------------------------------------------

    def _fresh(self, desc: TensorDesc) -> Any:
        if desc.scalar is not None:
            return self.arena.read(desc)
        view = self.arena.view(desc)
        return input_guard.at_new_address(lambda: view.to(self.device, copy=True),
                                          self._used_addresses)

    def _handed_for(self, cmd: Call) -> List[Any]:
        if not cmd.reuse:
            return [self._fresh(d) for d in cmd.inputs]
        handed = self._last_handed
        if handed is None or len(handed) != len(cmd.inputs):
            raise ProtocolError("call.reuse: no earlier call with as many inputs")
        for i, (h, d) in enumerate(zip(handed, cmd.inputs)):
            if isinstance(h, torch.Tensor):
                if d.scalar is not None or list(h.shape) != d.shape or \
                        tensor_files.DTYPE_NAMES.get(h.dtype) != d.dtype:
                    raise ProtocolError(f"call.reuse: input {i} differs in shape or dtype from "
                                        "the earlier call's")
                h.copy_(self.arena.view(d))
            else:
                handed[i] = self.arena.read(d)
        return handed

    def _forward(self, args: List[Any]) -> Any:
        with torch.no_grad():
            value = self.model(*args)
        self._sync(self.device)  # an asynchronous CUDA error surfaces here, as the call's
        return value

    def call(self, cmd: Call) -> Dict[str, Any]:
        if self.model is None:
            raise ProtocolError("call before load")
        handed = self._handed_for(cmd)
        self._last_handed = handed
        poison.poison_freed_cuda_memory(self.device,
                                        _bytes_of(cmd.inputs) + _bytes_of(cmd.outputs))
        value = run_guarded(LoadStage.RUN, self.own_files, "call", self._forward, handed)
        outputs = _as_list(value)
        problems = self._deliver(outputs, cmd.outputs)
        for i, (desc, region) in enumerate(zip(cmd.inputs, cmd.inputs_after)):
            self.arena.write(dataclasses.replace(desc, region=region), handed[i])
        self._refill(outputs)
        return {"ok": True, "output_descs": [_describe(o) for o in outputs],
                "problems": problems}

    def _deliver(self, outputs: List[Any], descs: List[TensorDesc]) -> List[str]:
        """Writes each output that passes its check into its region, poisons the others'
        regions; returns the problems."""
        problems = []
        if len(outputs) != len(descs):
            problems.append(f"{len(outputs)} outputs, expected {len(descs)}")
        for i, desc in enumerate(descs):
            problem = output_problem(i, outputs[i], desc.dtype, desc.shape, self.device) \
                if i < len(outputs) else f"output {i}: missing"
            if problem is None:
                self.arena.write(desc, outputs[i])
            else:
                if i < len(outputs):
                    problems.extend(problem.split("; "))
                self.arena.poison(desc)
        return problems

    @staticmethod
    def _refill(outputs: List[Any]) -> None:
        """Poisons the returned tensors themselves once they are copied out (in inference mode,
        so that inference tensors take it too); overlapping or odd views are left alone."""
        with torch.inference_mode():
            for out in outputs:
                if type(out) is torch.Tensor and out.layout == torch.strided and \
                        not out.is_meta and out.numel():
                    try:
                        poison.refill(out)
                    except RuntimeError:
                        pass

    # -- timing ------------------------------------------------------------------------------

    def forget_sets(self) -> None:
        self._sets.clear()

    def _device_set(self, index: int, tset: TimingSet, host_inputs: List[Any]) -> _DeviceSet:
        if index not in self._sets:
            pristine = [v.to(self.device, copy=True) if isinstance(v, torch.Tensor) else v
                        for v in host_inputs]
            working = [v.clone() if isinstance(v, torch.Tensor) else v for v in pristine]
            empty = [] if self.model is not None else [
                poison.filled_tensor(d.shape, tensor_files.torch_dtype(d.dtype), self.device)
                for d in tset.outputs]
            self._sets[index] = _DeviceSet(pristine, working, empty,
                                           _bytes_of(tset.inputs) + _bytes_of(tset.outputs))
        return self._sets[index]

    def _restore(self, dset: _DeviceSet, into: Optional[_DeviceSet] = None) -> List[Any]:
        """Restores ``dset``'s values from its pristine copies into its working tensors (or into
        ``into``'s) and poisons freed memory; returns the values to call with."""
        target = dset if into is None else into
        args = list(target.working)
        for i, (w, p) in enumerate(zip(target.working, dset.pristine)):
            if isinstance(w, torch.Tensor):
                w.copy_(p)
            else:
                args[i] = p
        poison.poison_freed_cuda_memory(self.device, dset.working_set)
        return args

    def sample(self, index: int, tset: TimingSet, host_inputs: List[Any], mode: str,
               spin_s: float, buffers: Optional[int] = None,
               buffer_set: Optional[Tuple[TimingSet, List[Any]]] = None) -> Dict[str, Any]:
        """One timed call on set ``index`` (in set ``buffers``'s device tensors when given)."""
        self.clock.check(mode)
        dset = self._device_set(index, tset, host_inputs)
        into = None
        if buffers is not None and buffers != index:
            into = self._device_set(buffers, *buffer_set)
        args = self._restore(dset, into)
        call = (lambda: None) if self.model is None else (lambda: self.model(*args))
        with torch.no_grad():
            reading = run_guarded(LoadStage.RUN, self.own_files, "sample", self.clock.sample,
                                  mode, spin_s, call)
        outputs = dset.empty_outputs if self.model is None else _as_list(reading.value)
        problems = self._deliver(outputs, tset.outputs)
        self._refill(outputs)
        return {"ok": True, "seconds": reading.seconds, "enqueue_s": reading.enqueue_s,
                "sm_mhz": reading.sm_mhz, "problems": problems}

    def graph(self, index: int, tset: TimingSet, host_inputs: List[Any],
              calls: int) -> Dict[str, Any]:
        if self.model is None:
            raise ProtocolError("graph before load")
        self.clock.check_graph()
        args = self._restore(self._device_set(index, tset, host_inputs))
        with torch.no_grad():
            seconds = run_guarded(LoadStage.RUN, self.own_files, "graph", self.clock.graph,
                                  calls, lambda: self.model(*args))
        return {"ok": True, "seconds_per_call": seconds}
