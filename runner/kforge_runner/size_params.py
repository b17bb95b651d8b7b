"""The task's size parameters and its second shape (EVAL-PROTOCOL correctness rule 2).

A *size parameter* is a module-level global of the task source that ``get_inputs()`` reads (directly
or through a function of the module it calls) and neither ``get_init_inputs()`` nor ``Model``
reads, whose value is an int of at least 2 (not a bool) or a tuple/list holding such ints:
changing it changes the inputs' shapes but not the model. The second shape makes every size
parameter larger: ``v -> v + max(1, v // 8)``, made odd (64 -> 73, 4096 -> 4609, 255 -> 287).
Larger, so that a kernel that processes a fixed number of elements leaves outputs unwritten
(poisoned) instead of writing past its buffers; odd and off the powers of two, so that tails of
vectorised and tiled loops run. Tuple elements below 2 (broadcast dimensions) are kept.

Names are found from the bytecode's global names (``co_names``, nested code objects included), so
a global the task computes from another one at execution time (``input_shape = (dim,)``) is a size
parameter of its own; changing all together keeps such pairs consistent.
"""

import types
from typing import Any, Dict, List, Set

import torch


def _names(code: types.CodeType) -> Set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _referenced(module: types.ModuleType, start: Any, seen: Set[int]) -> Set[str]:
    """Global names read by ``start`` (a function or class), following the module's own
    functions and classes it names."""
    if id(start) in seen:
        return set()
    seen.add(id(start))
    codes = []
    if isinstance(start, types.FunctionType):
        codes.append(start.__code__)
    elif isinstance(start, type):
        for value in vars(start).values():
            fn = getattr(value, "__func__", value)
            if isinstance(fn, types.FunctionType):
                codes.append(fn.__code__)
    names: Set[str] = set()
    for code in codes:
        names |= _names(code)
    for name in list(names):
        value = getattr(module, name, None)
        if isinstance(value, (types.FunctionType, type)) and \
                getattr(value, "__module__", None) == module.__name__:
            names |= _referenced(module, value, seen)
    return names


def _is_size(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 2
    if isinstance(value, (tuple, list)) and value:
        return all(isinstance(v, int) and not isinstance(v, bool) for v in value) and \
            any(v >= 2 for v in value)
    return False


def find(module: types.ModuleType) -> List[str]:
    """The task module's size parameters, in source order of definition."""
    inputs = _referenced(module, module.get_inputs, set())
    fixed = _referenced(module, module.get_init_inputs, set()) | \
        _referenced(module, module.Model, set())
    return [name for name in vars(module)
            if name in inputs and name not in fixed and not name.startswith("__")
            and _is_size(getattr(module, name))]


def larger(value: Any) -> Any:
    """The second shape's value of a size parameter (module docstring)."""
    if isinstance(value, (tuple, list)):
        return type(value)(larger(v) if v >= 2 else v for v in value)
    bigger = value + max(1, value // 8)
    return bigger if bigger % 2 else bigger + 1


def shapes(values: List[Any]) -> List[Any]:
    """The shapes of the tensors among ``values`` (None for other values), to compare two draws."""
    return [tuple(v.shape) if isinstance(v, torch.Tensor) else None for v in values]


class SecondShape:
    """Sets size parameters to their second-shape values and puts them back (a context)."""

    def __init__(self, module: types.ModuleType, names: List[str]):
        self._module = module
        self._saved: Dict[str, Any] = {n: getattr(module, n) for n in names}

    def __enter__(self) -> "SecondShape":
        for name, value in self._saved.items():
            setattr(self._module, name, larger(value))
        return self

    def __exit__(self, *exc) -> None:
        for name, value in self._saved.items():
            setattr(self._module, name, value)

    def describe(self) -> str:
        return ", ".join(f"{n} {v!r} -> {larger(v)!r}" for n, v in self._saved.items())
