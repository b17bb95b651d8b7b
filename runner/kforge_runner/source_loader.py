"""Executes a Python source file as a fresh module registered in ``sys.modules``.

Tasks and candidates are loaded this way so that tracebacks, ``inspect.getsource`` (Triton's
``@jit`` needs it) and pickling see a real module whose ``__file__`` is the source path.
"""

import importlib.util
import sys
import types


def load_module(path: str, module_name: str) -> types.ModuleType:
    """Executes ``path`` as module ``module_name``; exceptions from the module's code propagate."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load Python source {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module
