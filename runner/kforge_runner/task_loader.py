"""Loads a KernelBench-style task: ``Model``, ``get_inputs()``, ``get_init_inputs()``.

The task source is executed, then the job's overrides replace module-level globals, so that
``get_inputs()``/``get_init_inputs()`` (which read those globals when called) produce reduced sizes.
"""

import dataclasses
import types
from typing import Any, List, Tuple

import torch

from kforge_runner import source_loader
from kforge_runner.protocol import TaskSpec

TASK_MODULE_NAME = "kforge_task"


class TaskError(Exception):
    """The task source lacks a required name or an override names no global of it."""


@dataclasses.dataclass
class Task:
    module: types.ModuleType

    @property
    def model_class(self) -> type:
        return self.module.Model

    def get_inputs(self) -> List[Any]:
        return list(self.module.get_inputs())

    def get_init_inputs(self) -> List[Any]:
        return list(self.module.get_init_inputs())


def load_task(spec: TaskSpec) -> Task:
    """Executes the task source and applies overrides; raises TaskError for a malformed task."""
    module = source_loader.load_module(spec.source_file, TASK_MODULE_NAME)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise TaskError(f"task {spec.name}: {spec.source_file} does not define {name}")
    for name, value in spec.overrides.items():
        if not hasattr(module, name):
            raise TaskError(
                f"task {spec.name}: override {name!r} names no global of the task source")
        # JSON has no tuples: a list replacing a tuple global (e.g. input_shape) becomes a tuple.
        if isinstance(value, list) and isinstance(getattr(module, name), tuple):
            value = tuple(value)
        setattr(module, name, value)
    return Task(module=module)


def construct(model_class: type, task: Task, init_seed: int,
              device: torch.device) -> Tuple[torch.nn.Module, List[Any]]:
    """Builds ``model_class`` the way both phases must: seed, ``get_init_inputs()``, construct.

    ``torch.manual_seed(init_seed)``, then ``model_class(*task.get_init_inputs())`` moved to
    ``device``, left in the training mode a new module starts in, as KernelBench runs its
    references (dropout stays active, batch norm uses batch statistics). Returns the model and the
    init inputs. Because the seeding and the call
    sequence are identical in both phases, a candidate model that creates the same layers in the
    same order as ``Model`` draws the same initial parameters.
    """
    torch.manual_seed(init_seed)
    init_inputs = task.get_init_inputs()
    model = model_class(*init_inputs).to(device)
    return model, init_inputs
