"""Module candidates: a Python file defining ``class ModelNew(nn.Module)`` (KernelBench style).

Covers Triton and CuTe DSL kernels and ``load_inline`` extensions: whatever the file imports is
imported when it is loaded. ``ModelNew`` is constructed exactly like the reference ``Model``
(seed, init inputs, on the device, in training mode as KernelBench runs it); the reference state is loaded when its
``state_dict()`` has the same keys and shapes. Each call gets clones of the inputs (scalars as
Python numbers), runs under ``torch.no_grad()`` after freed CUDA memory has been poisoned, and
the device is synchronised before the outputs are inspected.
"""

import math
from typing import Any, Dict, List, Optional, Tuple

import torch

from kforge_runner import input_guard, poison, source_loader, task_loader, tensor_files, timing
from kforge_runner.errors import CompileError
from kforge_runner.protocol import OutputSpec

CANDIDATE_MODULE_NAME = "kforge_candidate"


def _shapes_match(model: torch.nn.Module, state: Dict[str, torch.Tensor]) -> bool:
    own = model.state_dict()
    return own.keys() == state.keys() and all(own[k].shape == state[k].shape for k in own)


def _as_output_list(value: Any) -> List[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def output_problem(i: int, out: Any, dtype: str, shape: List[int],
                   device: torch.device) -> Optional[str]:
    """What is wrong with output ``i`` against the reference's dtype, shape and device (None when
    nothing is): a non-tensor, a torch.Tensor subclass (a lazy output that would compute when the
    checker reads it), a sparse or meta tensor, another dtype, shape or device type."""
    if not isinstance(out, torch.Tensor):
        return f"output {i}: a {type(out).__name__}, expected a tensor"
    if type(out) is not torch.Tensor:
        # A subclass can defer its work into whoever reads it (the untimed checker).
        return (f"output {i}: a {type(out).__name__}, a torch.Tensor subclass (lazy "
                "output); outputs must be plain, materialised tensors")
    if out.layout != torch.strided or out.is_meta:
        return (f"output {i}: layout {out.layout}"
                f"{' on the meta device' if out.is_meta else ''}; outputs must be "
                "dense, materialised tensors")
    problems = []
    name = tensor_files.DTYPE_NAMES.get(out.dtype, str(out.dtype))
    if name != dtype:
        problems.append(f"output {i}: dtype {name}, expected {dtype}")
    if list(out.shape) != list(shape):
        problems.append(f"output {i}: shape {list(out.shape)}, expected {list(shape)}")
    if out.device.type != device.type:
        problems.append(f"output {i}: on device {out.device}, expected {device}")
    return "; ".join(problems) if problems else None


def check_outputs(outputs: List[Any], expected: List[OutputSpec],
                  device: torch.device) -> List[str]:
    """Problems of the outputs: count, dtype, shape and device against the reference's."""
    problems = []
    if len(outputs) != len(expected):
        problems.append(f"{len(outputs)} outputs, expected {len(expected)}")
    for i, (out, spec) in enumerate(zip(outputs, expected)):
        problem = output_problem(i, out, spec.dtype, spec.shape, device)
        if problem is not None:
            problems.extend(problem.split("; "))
    return problems


class ModuleCandidate:
    """A constructed ``ModelNew``; constructing it executes the candidate file (candidate code).

    ``result_fields`` adds ``state_loaded`` to the phase result.
    """

    environment: Dict[str, Any] = {}

    def __init__(self, source_file: str, task: task_loader.Task, init_seed: int,
                 device: torch.device, state: Dict[str, torch.Tensor]):
        module = source_loader.load_module(source_file, CANDIDATE_MODULE_NAME)
        if not hasattr(module, "ModelNew"):
            raise CompileError(f"{source_file} does not define class ModelNew")
        self._device = device
        self._used_addresses = set()
        self.model, _ = task_loader.construct(module.ModelNew, task, init_seed, device)
        state_loaded = _shapes_match(self.model, state)
        if state_loaded:
            self.model.load_state_dict({k: v.to(device) for k, v in state.items()})
        self.result_fields = {"state_loaded": state_loaded}

    def sampler(self, inputs: List[Any], expected: List[OutputSpec]) -> Tuple[str, Any]:
        """(clock, sampler) timing one ``ModelNew`` call under no_grad on fresh input clones
        (timing.py); freed memory is not poisoned between samples."""
        originals = [v.to(self._device) if isinstance(v, torch.Tensor) else v for v in inputs]

        def sample() -> float:
            handed = input_guard.clones(originals)
            with torch.no_grad():
                seconds, _ = timing.time_call(self._device, lambda: self.model(*handed))
            return seconds

        return timing.clock_for(self._device), sample

    def run(self, inputs: List[Any],
            expected: List[OutputSpec]) -> Tuple[List[Any], bool, List[str]]:
        """Calls ``ModelNew`` once; returns (outputs, inputs_unchanged, problems)."""
        originals = [v.to(self._device) if isinstance(v, torch.Tensor) else v for v in inputs]
        # At addresses no earlier trial used (input_guard.at_new_address).
        handed = input_guard.clones(originals, self._used_addresses)
        working_set = sum(v.numel() * v.element_size()
                          for v in originals if isinstance(v, torch.Tensor))
        working_set += sum(torch.empty((), dtype=tensor_files.torch_dtype(s.dtype)).element_size()
                           * math.prod(s.shape) for s in expected)
        poison.poison_freed_cuda_memory(self._device, working_set)
        with torch.no_grad():
            outputs = _as_output_list(self.model(*handed))
        if self._device.type == "cuda":
            torch.cuda.synchronize(self._device)
        return outputs, input_guard.unchanged(originals, handed), check_outputs(outputs, expected,
                                                                                 self._device)

    def run_same_buffers(self, first: List[Any], second: List[Any],
                         first_expected: List[OutputSpec], expected: List[OutputSpec]):
        """The address probe: calls with ``first``, writes ``second`` into the same input tensors
        and calls again; returns the second call's (outputs, inputs_unchanged, problems), or
        (None, True, []) when the two trials' inputs differ in shape, dtype or kind."""
        a = [v.to(self._device) if isinstance(v, torch.Tensor) else v for v in first]
        b = [v.to(self._device) if isinstance(v, torch.Tensor) else v for v in second]
        same = len(a) == len(b) and all(
            (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
             and x.dtype == y.dtype) or (not isinstance(x, torch.Tensor)
                                         and not isinstance(y, torch.Tensor))
            for x, y in zip(a, b))
        if not same:
            return None, True, []
        # At addresses no trial used, so no earlier trial's cached result can answer either call.
        handed = input_guard.clones(a, self._used_addresses)
        with torch.no_grad():
            self.model(*handed)
            if self._device.type == "cuda":
                torch.cuda.synchronize(self._device)
            for i, (h, v) in enumerate(zip(handed, b)):
                if isinstance(h, torch.Tensor):
                    h.copy_(v)
                else:
                    handed[i] = v
            outputs = _as_output_list(self.model(*handed))
        if self._device.type == "cuda":
            torch.cuda.synchronize(self._device)
        return outputs, input_guard.unchanged(b, handed), check_outputs(outputs, expected,
                                                                          self._device)

