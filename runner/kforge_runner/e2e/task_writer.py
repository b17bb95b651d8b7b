"""Turns a kernel site (a leaf module and the calls seen in the workload) into a self-contained
KernelBench task: `Model` with the module's parameters and forward, `get_inputs()` with the
shapes and dtypes seen, `get_init_inputs()` returning [].

What can be extracted: a leaf module (no child modules) whose forward (and the methods it calls)
reads only its parameters, persistent buffers, plain attributes (numbers, strings, booleans,
None, tuples of them), `self.training` (the task keeps the mode the module ran in), and
module-level names that are modules (torch, math,
...), plain constants, or functions of the module's own source file (copied too). Anything else
raises NotExtractable with the reason, which the report shows.

Parameters are drawn in `__init__` from a normal distribution around the values seen (their mean
and standard deviation, at least 0.1·|mean| or 0.02 wide), so that a kernel cannot pass by
ignoring a parameter that happens to be constant in the model (RMSNorm weights start as ones).
"""

import ast
import builtins
import inspect
import textwrap
import types
from typing import Any, Dict, List, Set

import torch

_SIMPLE = (int, float, bool, str, type(None))


class NotExtractable(Exception):
    """The site cannot become a self-contained task; the message says why."""


def _simple(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_simple(v) for v in value)
    return isinstance(value, _SIMPLE)


def _function_ast(fn) -> ast.FunctionDef:
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise NotExtractable(f"the source of {fn.__qualname__} is not available ({e})") from e
    node = ast.parse(source).body[0]
    if not isinstance(node, ast.FunctionDef):
        raise NotExtractable(f"{fn.__qualname__} is not a plain function")
    node.decorator_list = []
    node.returns = None
    for arg in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
        arg.annotation = None
    if node.args.vararg or node.args.kwarg:
        raise NotExtractable(f"{fn.__qualname__} takes *args or **kwargs")
    return node


def _self_attributes(node: ast.AST) -> Set[str]:
    return {n.attr for n in ast.walk(node)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"}


def _free_names(node: ast.FunctionDef) -> Set[str]:
    """Names a function loads that it neither binds nor gets from builtins."""
    bound = {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
    loaded = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loaded if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.Lambda)) and n is not node:
            bound.update(a.arg for a in n.args.args)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
    return {name for name in loaded - bound if not hasattr(builtins, name)}


class _Source:
    """The pieces of the task source: imports, module-level helpers and constants."""

    def __init__(self, home_module: str):
        self.home_module = home_module
        self.imports: Dict[str, str] = {}
        self.helpers: Dict[str, str] = {}
        self.constants: Dict[str, Any] = {}

    def resolve_globals(self, node: ast.FunctionDef, fn_globals: Dict[str, Any]) -> None:
        for name in sorted(_free_names(node)):
            if name in self.imports or name in self.helpers or name in self.constants:
                continue
            if name not in fn_globals:
                raise NotExtractable(f"{node.name} uses {name!r}, which is not a global of its file")
            value = fn_globals[name]
            if isinstance(value, types.ModuleType):
                self.imports[name] = (f"import {value.__name__}" if value.__name__ == name else
                                      f"import {value.__name__} as {name}")
            elif _simple(value):
                self.constants[name] = value
            elif isinstance(value, types.FunctionType) and value.__module__ == self.home_module:
                helper = _function_ast(value)
                self.helpers[name] = ""  # placeholder: stops recursion
                self.resolve_globals(helper, value.__globals__)
                self.helpers[name] = ast.unparse(helper)
            else:
                raise NotExtractable(
                    f"{node.name} uses the global {name!r} ({type(value).__name__}), which a "
                    f"self-contained task cannot carry")


def _methods(cls: type, node: ast.FunctionDef, seen: Dict[str, ast.FunctionDef]) -> None:
    """Collects the methods of `cls` that `node` calls through self, recursively."""
    for attr in sorted(_self_attributes(node)):
        if attr in seen:
            continue
        member = inspect.getattr_static(cls, attr, None)
        if isinstance(member, types.FunctionType):
            method = _function_ast(member)
            seen[attr] = method
            _methods(cls, method, seen)


def _init_line(name: str, t: torch.Tensor, kind: str) -> List[str]:
    shape = list(t.shape)
    dtype = str(t.dtype).replace("torch.", "")
    if kind == "buffer":
        return [f"self.register_buffer({name!r}, torch.empty({shape}, dtype=torch.{dtype}))",
                *_draw_line(f"self.{name}", t)]
    return [f"self.{name} = nn.Parameter(torch.empty({shape}, dtype=torch.{dtype}))",
            *_draw_line(f"self.{name}", t)]


def _draw_line(target: str, t: torch.Tensor) -> List[str]:
    if not t.is_floating_point():
        lo, hi = (int(t.min()), int(t.max())) if t.numel() else (0, 0)
        return ["with torch.no_grad():",
                f"    {target}.copy_(torch.randint({lo}, {hi + 1}, {target}.shape))"]
    values = t.detach().float()
    mean = float(values.mean()) if values.numel() else 0.0
    std = float(values.std()) if values.numel() > 1 else 0.0
    std = max(std, 0.1 * abs(mean), 0.02)
    return [f"nn.init.normal_({target}, mean={mean:.6g}, std={std:.6g})"]


def _input_expr(arg: Dict[str, Any]) -> str:
    shape, dtype = arg["shape"], arg["dtype"]
    if dtype == "bool":
        return f"torch.rand({shape}) < 0.5"
    if dtype.startswith(("int", "uint")):
        return f"torch.randint({arg['min']}, {arg['max'] + 1}, {shape}, dtype=torch.{dtype})"
    draw = f"torch.randn({shape}, dtype=torch.{dtype})"
    if arg.get("zero_fraction", 0.0) >= 0.5:
        # Mostly zeros in the workload (e.g. dense routing weights of unchosen experts).
        return (f"{draw} * (torch.rand({shape}) >= {arg['zero_fraction']:.3f})"
                f".to(torch.{dtype})")
    return draw


def write_task(site: Dict[str, Any], module: torch.nn.Module, header: List[str]) -> str:
    """The task source of `site` (its args carry shape, dtype, and min/max or zero_fraction as
    recorded at the task batch size), built from one of its module instances."""
    cls = type(module)
    if list(module.children()):
        raise NotExtractable("not a leaf module (it has child modules)")
    forward_fn = inspect.getattr_static(cls, "forward", None)
    if not isinstance(forward_fn, types.FunctionType):
        raise NotExtractable("its forward is not a plain Python function")
    forward = _function_ast(forward_fn)
    methods: Dict[str, ast.FunctionDef] = {}
    _methods(cls, forward, methods)
    methods.pop("forward", None)

    source = _Source(cls.__module__)
    source.imports.update({"torch": "import torch", "nn": "import torch.nn as nn"})
    source.resolve_globals(forward, forward_fn.__globals__)
    for name, node in methods.items():
        source.resolve_globals(node, getattr(cls, name).__globals__)

    persistent = set(module.state_dict(keep_vars=True))
    init: List[str] = []
    for name, p in module._parameters.items():
        init += [f"self.register_parameter({name!r}, None)"] if p is None else _init_line(
            name, p, "parameter")
    for name, b in module._buffers.items():
        if b is not None and name not in persistent:
            raise NotExtractable(f"its non-persistent buffer {name!r} would not reach a kernel")
        if b is not None:
            init += _init_line(name, b, "buffer")
    attributes = set()
    mode_line = ""
    for node in [forward, *methods.values()]:
        attributes |= _self_attributes(node)
    for attr in sorted(attributes):
        if attr in module._parameters or attr in module._buffers or attr in methods:
            continue
        if attr == "forward":
            continue
        if attr == "training":
            # The forward branches on the mode. A KernelBench Model starts in training mode and
            # no harness calls eval(), so without this line the task would be the training
            # branch of a module the model ran in eval mode (gpt-oss's experts: a per-expert
            # loop over router_indices instead of the dense path the model takes).
            mode_line = f"self.train({module.training})  # the mode the module ran in, in the model"
            continue
        if attr not in module.__dict__:
            raise NotExtractable(f"its forward reads self.{attr}, which is not a plain attribute")
        value = module.__dict__[attr]
        if not _simple(value):
            raise NotExtractable(
                f"its forward reads self.{attr} ({type(value).__name__}), not a plain value")
        init.append(f"self.{attr} = {value!r}")
    if mode_line:
        init.append(mode_line)

    tensor_args = [a for a in site["args"] if a["kind"] == "tensor"]
    direct = [a["name"] for a in site["args"]] == site["params"][:len(site["args"])] and all(
        a["kind"] == "tensor" for a in site["args"])
    if not direct:
        forward.name = "module_forward"
    body = [ast.unparse(forward)] + [ast.unparse(m) for m in methods.values()]
    if not direct:
        call = ", ".join(f"{a['name']}={a['name'] if a['kind'] == 'tensor' else repr(a['value'])}"
                         for a in site["args"])
        names = ", ".join(["self"] + [a["name"] for a in tensor_args])
        body.insert(0, f"def forward({names}):\n    return self.module_forward({call})")

    lines = [f"# {line}" if line else "#" for line in header]
    lines += [""] + sorted(source.imports.values()) + [""]
    for name, value in sorted(source.constants.items()):
        lines.append(f"{name} = {value!r}")
    for helper in source.helpers.values():
        lines += ["", "", helper]
    lines += ["", "", "class Model(nn.Module):", "    def __init__(self):",
              "        super().__init__()"]
    lines += [f"        {line}" for line in init]
    for method in body:
        lines.append("")
        lines += [f"    {line}" if line else "" for line in method.splitlines()]
    inputs = ", ".join(_input_expr(a) for a in tensor_args)
    lines += ["", "", "def get_inputs():", f"    return [{inputs}]", "", "",
              "def get_init_inputs():", "    return []", ""]
    return "\n".join(lines)
