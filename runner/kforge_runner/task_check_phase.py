"""Phase ``task_check``: each task of a list loaded and run once, before any candidate is asked for.

A task that cannot run (a syntax error, a missing ``Model``, an override naming no global, a
constructor or ``forward`` that raises, inputs whose shapes the model rejects, an output that is
not a tensor) is the user's mistake: the orchestrator says so in one line naming the task's file
and line, and no LLM is asked for a kernel that could never be judged. One process checks every
task of a bench, so the check costs one runner start.

Job::

    {"protocol": 1, "phase": "task_check", "device": "cpu",
     "tasks": [{"name": "19_ReLU", "source_file": "/abs/task.py", "overrides": {...}}, ...]}

Result: ``{"phase": "task_check", "status": "ok", "tasks": [...]}`` with, per task in job order,
``{"name", "ok": true}`` or ``{"name", "ok": false, "stage", "line", "function", "error"}``:
``stage`` is what was being done (``loading the task``, ``constructing Model``, ``get_inputs()``,
``forward``), ``line`` the 1-based line of the task source where it failed (null when the failure
is outside the source, e.g. inside torch with no frame of the task), ``function`` the task's
function of that frame, ``error`` the exception's type and message (one line).
"""

import dataclasses
import os
import traceback
from typing import Any, Dict, List

import torch

from kforge_runner import errors, task_loader
from kforge_runner.protocol import JobError, TaskSpec, _field, _parse_task

PHASE = "task_check"


@dataclasses.dataclass(frozen=True)
class TaskCheckJob:
    device: str
    tasks: List[TaskSpec]


def parse(document: Dict[str, Any]) -> TaskCheckJob:
    tasks = _field(document, "tasks", list, "job")
    specs = []
    for i, entry in enumerate(tasks):
        if not isinstance(entry, dict):
            raise JobError(f"job.tasks[{i}]: expected an object")
        specs.append(_parse_task({"task": entry}))
    return TaskCheckJob(device=_field(document, "device", str, "job"), tasks=specs)


def _one_line(exc: BaseException) -> str:
    name = type(exc).__qualname__ if type(exc).__module__ == "builtins" else \
        f"{type(exc).__module__}.{type(exc).__qualname__}"
    if isinstance(exc, SyntaxError):
        message = exc.msg or "invalid syntax"
    else:
        message = " ".join(str(exc).split())
    text = f"{name}: {message}" if message else name
    return text if len(text) <= 300 else text[:297] + "..."


def _where(exc: BaseException, source_file: str):
    """(line, function) of the innermost frame in ``source_file``, or (None, None)."""
    own = os.path.realpath(source_file)
    if isinstance(exc, SyntaxError) and exc.filename and \
            os.path.realpath(exc.filename) == own and exc.lineno:
        return exc.lineno, None
    line, function = None, None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.realpath(frame.filename) == own:
            line, function = frame.lineno, frame.name
    return line, function


def _check(spec: TaskSpec, device: torch.device) -> Dict[str, Any]:
    stage = "loading the task"
    try:
        task = task_loader.load_task(spec)
        stage = "constructing Model"
        model, _ = task_loader.construct(task.model_class, task, 0, device)
        stage = "get_inputs()"
        torch.manual_seed(0)
        inputs = task.get_inputs()
        stage = "forward"
        from kforge_runner import reference_phase  # the reference's own rule for outputs
        reference_phase._run_model(model, inputs, device)  # pylint: disable=protected-access
    except Exception as e:  # anything the task's code raises is the task's problem
        line, function = _where(e, spec.source_file)
        return {"name": spec.name, "ok": False, "stage": stage, "line": line,
                "function": function, "error": _one_line(e)}
    return {"name": spec.name, "ok": True}


def run(job: TaskCheckJob) -> Dict[str, Any]:
    device = torch.device(job.device)
    results = [_check(spec, device) for spec in job.tasks]
    return {"phase": PHASE, "status": errors.STATUS_OK, "tasks": results}
