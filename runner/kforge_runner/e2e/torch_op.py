"""KForge kernels inside a PyTorch model: each kernel site becomes a custom operator, and the
module instances of the site call it from their forward.

Self-contained (torch, ctypes and the standard library only): `kforge e2e` uses it to measure,
and `kforge export --as torch-op` ships this file unchanged inside the exported package.

A *site* (a dict, as `kforge e2e` writes it into e2e/sites.json) is a group of module instances of
one class with the same parameter shapes and the same call signature:
  name          operator name (an identifier)
  instances     qualified module names in the model (model.layers.0.mlp.experts, ...)
  params        the class's forward parameters after self, in order
  args          for each parameter given at the call: {"name", "kind": "tensor" | "constant",
                "value" (constants), "dtype" (tensors)}; parameters not given keep their defaults
  state_keys    the module's state_dict keys, in order (the kernel gets these after the inputs)
  outputs       "tensor" (one tensor) or the length of the returned tuple
A kernel is a shared object exporting `kforge_forward` (KForge's native ABI v1,
kforge_kernel.h): inputs are the site's tensor arguments then the module's state tensors, all
contiguous; outputs are allocated here with the shapes and dtypes the original module produces
(found by running the original forward on meta tensors), and the kernel writes every element.

Operators: `torch.library.Library` definitions with a fake implementation (`register_fake` on
torch 2.4+, so torch.compile traces around the kernel; a Meta implementation on older torch such
as 1.13). Not `torch.library.custom_op`: its Python layers cost host time on every call.
Patching: `patch()` sets an instance attribute `forward` on each module of a site; a call whose
constant arguments or tensor dtypes differ from the site's runs the original forward and is
counted in `Patch.unrouted` (reported, never hidden).
"""

import copy
import ctypes
from typing import Any, Dict, List, Sequence, Tuple

import torch

MAX_DIMS = 8
_ABI_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.float64: 3,
               torch.int32: 4, torch.int64: 5, torch.int8: 6, torch.uint8: 7, torch.bool: 8,
               torch.int16: 9}


class _AbiTensor(ctypes.Structure):
    """Mirror of `struct kforge_tensor` (kforge_kernel.h)."""

    _fields_ = [("data", ctypes.c_void_p),
                ("dtype", ctypes.c_int32),
                ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS),
                ("strides", ctypes.c_int64 * MAX_DIMS)]


def _describe(tensors: Sequence[torch.Tensor]):
    array = (_AbiTensor * max(len(tensors), 1))()
    for slot, t in zip(array, tensors):
        rank = t.dim()
        if rank > MAX_DIMS:
            raise ValueError(f"tensor of rank {rank} exceeds the ABI's {MAX_DIMS} dimensions")
        slot.data = t.data_ptr()
        slot.dtype = _ABI_DTYPES[t.dtype]
        slot.ndim = rank
        # Slice assignment: one call per field, not one per dimension (host time on every call).
        slot.shape[:rank] = t.shape
        slot.strides[:rank] = t.stride()
    return array


class NativeKernel:
    """`kforge_forward` of a shared object. Calls are counted in `calls`."""

    def __init__(self, path: str):
        self.path = path
        self._library = ctypes.CDLL(path)
        self._forward = self._library.kforge_forward
        self._forward.restype = ctypes.c_int
        self._forward.argtypes = [ctypes.POINTER(_AbiTensor), ctypes.c_int,
                                  ctypes.POINTER(_AbiTensor), ctypes.c_int, ctypes.c_void_p]
        self.calls = 0

    def __call__(self, inputs: List[torch.Tensor], outputs: List[torch.Tensor]) -> None:
        """Runs the kernel on contiguous `inputs`, writing `outputs`; raises RuntimeError when it
        returns non-zero."""
        stream = None
        if inputs and inputs[0].is_cuda:
            device = inputs[0].device
            if device.index is not None and device.index != torch.cuda.current_device():
                # The kernel launches on the current device: make it the tensors' one.
                with torch.cuda.device(device):
                    self(inputs, outputs)
                return
            stream = torch.cuda.current_stream(device).cuda_stream
        status = self._forward(_describe(inputs), len(inputs), _describe(outputs), len(outputs),
                               stream)
        self.calls += 1
        if status != 0:
            raise RuntimeError(f"KForge kernel {self.path}: kforge_forward returned {status}")


def _meta_clone(module: torch.nn.Module) -> torch.nn.Module:
    """A shallow copy of a leaf module whose parameters and buffers are meta tensors (no data is
    copied) and whose forward is its class's."""
    clone = copy.copy(module)
    clone.__dict__.pop("forward", None)
    clone._parameters = {k: (None if p is None else torch.nn.Parameter(
        torch.empty(p.shape, dtype=p.dtype, device="meta"), requires_grad=False))
        for k, p in module._parameters.items()}
    clone._buffers = {k: (None if b is None else torch.empty(b.shape, dtype=b.dtype, device="meta"))
                      for k, b in module._buffers.items()}
    return clone


def _real_mode():
    """A context that leaves torch.compile's fake-tensor mode, where there is one."""
    try:
        from torch.utils._python_dispatch import _disable_current_modes
        return _disable_current_modes()
    except ImportError:
        import contextlib
        return contextlib.nullcontext()


class _OutputShapes:
    """Output shapes and dtypes of a site for given tensor inputs, from the original forward run
    on meta tensors; remembered per input signature."""

    def __init__(self, site: Dict[str, Any], module: torch.nn.Module):
        self._site = site
        self._meta = _meta_clone(module)
        self._known: Dict[Tuple, List[Tuple[Tuple[int, ...], torch.dtype]]] = {}

    def __call__(self, tensors: Sequence[torch.Tensor]) -> List[Tuple[Tuple[int, ...], torch.dtype]]:
        key = tuple((tuple(int(s) for s in t.shape), t.dtype) for t in tensors)
        if key not in self._known:
            with _real_mode(), torch.no_grad():
                metas = iter([torch.empty(shape, dtype=dtype, device="meta")
                              for shape, dtype in key])
                kwargs = {a["name"]: (next(metas) if a["kind"] == "tensor" else a.get("value"))
                          for a in self._site["args"]}
                out = self._meta(**kwargs)
            outs = [out] if isinstance(out, torch.Tensor) else list(out)
            self._known[key] = [(tuple(o.shape), o.dtype) for o in outs]
        return self._known[key]


def _register_fake_api() -> bool:
    """torch >= 2.4: torch.library.register_fake gives an operator the fake implementation that
    torch.compile traces with."""
    return hasattr(torch.library, "register_fake")


class _Operator:
    """One site's operator `namespace::name(Tensor[] inputs) -> Tensor[]`: the kernel on real
    tensors, output shapes only on fake or meta tensors."""

    def __init__(self, namespace: str, site: Dict[str, Any], kernel: NativeKernel,
                 shapes: _OutputShapes, library: Any):
        self._kernel = kernel
        self._shapes = shapes
        self._n_args = sum(1 for a in site["args"] if a["kind"] == "tensor")
        # Defined and implemented through torch.library.Library, not torch.library.custom_op:
        # custom_op's Python layers (its autograd wrapper among them) cost about 10 us more per
        # call on the host, eager or compiled (bench/RESULTS.md), and a decode step is host-bound.
        # The operator is for inference: it has no autograd formula.
        library.define(f"{site['name']}(Tensor[] inputs) -> Tensor[]")
        library.impl(site["name"], self.run, "CPU")
        if torch.cuda.is_available():
            library.impl(site["name"], self.run, "CUDA")
        if _register_fake_api():
            torch.library.register_fake(f"{namespace}::{site['name']}", self._fake, lib=library)
        else:
            # Meta tensors dispatch to AutogradMeta first; it has no fallthrough in torch 1.13.
            library.impl(site["name"], self._fake, "Meta")
            library.impl(site["name"], self._fake, "AutogradMeta")
        self.call = getattr(getattr(torch.ops, namespace), site["name"]).default

    def run(self, inputs):
        """The kernel on real tensors: contiguous inputs, outputs allocated with the original's
        shapes and dtypes."""
        inputs = [t.contiguous() for t in inputs]
        outputs = [torch.empty(shape, dtype=dtype, device=inputs[0].device)
                   for shape, dtype in self._shapes(inputs[:self._n_args])]
        self._kernel(inputs, outputs)
        return outputs

    def _fake(self, inputs):
        return [inputs[0].new_empty(shape, dtype=dtype)
                for shape, dtype in self._shapes(inputs[:self._n_args])]


class Patch:
    """What patch() did: per site, the kernel calls (counted where the kernel runs, compiled or
    not) and the eager calls left to the original forward (`unrouted`; not counted under
    torch.compile, see _patched_forward)."""

    def __init__(self):
        self.kernels: Dict[str, NativeKernel] = {}
        self.unrouted: Dict[str, int] = {}
        self._restore: List[torch.nn.Module] = []
        # The namespace's Library (it unregisters its operators when collected).
        self._library: Any = None

    def undo(self) -> None:
        """Gives every patched module its class's forward back."""
        for m in self._restore:
            m.__dict__.pop("forward", None)
        self._restore.clear()


def _find_is_compiling():
    """torch's "is torch.compile (dynamo) tracing the current call?", looked up once: the
    patched forward asks on every call. Dynamo evaluates it to True while it traces."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling
    dynamo = getattr(torch, "_dynamo", None)
    if dynamo is not None and hasattr(dynamo, "is_compiling"):
        return dynamo.is_compiling
    return lambda: False  # torch without torch.compile (1.13)


_compiling = _find_is_compiling()


def _plain(t: torch.Tensor) -> bool:
    """A real tensor with data (not meta, not a fake or other tensor subclass)."""
    return type(t) in (torch.Tensor, torch.nn.Parameter) and t.device.type != "meta"


def _patched_forward(site: Dict[str, Any], module: torch.nn.Module, op: "_Operator", state,
                     patch: Patch):
    original = module.forward
    params = list(site["params"])
    tensor_names = [a["name"] for a in site["args"] if a["kind"] == "tensor"]
    dtypes = {a["name"]: getattr(torch, a["dtype"]) for a in site["args"] if a["kind"] == "tensor"}
    constants = {a["name"]: a.get("value") for a in site["args"] if a["kind"] == "constant"}
    single = site["outputs"] == "tensor"

    def forward(*args, **kwargs):
        given = dict(zip(params, args))
        given.update(kwargs)
        routed = (set(given) == set(tensor_names) | set(constants)
                  and all(given[k] == v for k, v in constants.items())
                  and all(isinstance(given[k], torch.Tensor) and given[k].dtype == dtypes[k]
                          for k in tensor_names))
        if not routed:
            # Counted in eager calls only: while torch.compile traces, the count is a Python
            # side effect that dynamo guards on (unrouted[...] == N), so every later call would
            # recompile, and past the recompile limit the model would run eagerly. A compiled
            # call routes as the same eager call does, so the eager counts tell the coverage.
            if not _compiling():
                patch.unrouted[site["name"]] = patch.unrouted.get(site["name"], 0) + 1
            return original(*args, **kwargs)
        tensors = [given[k] for k in tensor_names] + state
        # Eager calls go straight to the kernel, skipping the operator's dispatch (host time that
        # a launch-bound decode step pays in full). Traced calls (torch.compile, fake or meta
        # tensors) use the operator.
        if not _compiling() and all(_plain(t) for t in tensors):
            outputs = op.run(tensors)
        else:
            outputs = op.call(tensors)
        return outputs[0] if single else tuple(outputs)

    return forward


def patch(model: torch.nn.Module, sites: List[Dict[str, Any]], kernel_paths: Dict[str, str],
          namespace: str) -> Patch:
    """Routes the instances of every site that has a kernel in `kernel_paths` (site name -> shared
    object) through its operator. Call it once the model is on its device and in its dtype; the
    kernels read the parameters as they are then. `namespace` must be new to this process."""
    result = Patch()
    result._library = torch.library.Library(namespace, "DEF")
    modules = dict(model.named_modules())
    for site in sites:
        if site["name"] not in kernel_paths:
            continue
        missing = [q for q in site["instances"] if q not in modules]
        if missing:
            raise ValueError(f"site {site['name']}: the model has no module {missing[0]} "
                             f"(was it built from the same configuration?)")
        kernel = NativeKernel(kernel_paths[site["name"]])
        first = modules[site["instances"][0]]
        op = _Operator(namespace, site, kernel, _OutputShapes(site, first), result._library)
        result.kernels[site["name"]] = kernel
        for qualname in site["instances"]:
            module = modules[qualname]
            tensors = module.state_dict(keep_vars=True)
            if list(tensors) != list(site["state_keys"]):
                raise ValueError(f"site {site['name']}: {qualname} has state {list(tensors)}, "
                                 f"the kernel expects {site['state_keys']}")
            state = [t.detach() for t in tensors.values()]
            module.forward = _patched_forward(site, module, op, state, result)
            result._restore.append(module)
    return result
