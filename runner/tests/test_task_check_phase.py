"""Phase ``task_check`` (PROTOCOL.md, "Phase task_check"): a sound task passes; a syntax error, a
forward that raises, inputs the model rejects, a bad output and an override of no global each
fail with the task file's line and the stage."""

import pytest

from conftest import run_runner, write_file

GOOD = '''\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

batch_size = 4
def get_inputs():
    return [torch.rand(batch_size, 8)]
def get_init_inputs():
    return []
'''


def _job(tmp_path, sources, overrides=None):
    tasks = []
    for i, source in enumerate(sources):
        path = write_file(tmp_path / f"task{i}.py", source)
        tasks.append({"name": f"task{i}", "source_file": path,
                      "overrides": (overrides or {}).get(i, {})})
    return {"protocol": 1, "phase": "task_check", "device": "cpu", "tasks": tasks}


def test_checks_each_task_and_names_the_failing_line(tmp_path):
    syntax = GOOD.replace("return torch.relu(x)", "return torch.relu(x")
    raises = GOOD.replace("return torch.relu(x)", "return x / undefined_name")
    shapes = GOOD.replace("return torch.relu(x)", "return x @ torch.ones(3, 3)")
    not_tensor = GOOD.replace("return torch.relu(x)", "return 'relu'")
    run = run_runner(_job(tmp_path, [GOOD, syntax, raises, shapes, not_tensor, GOOD],
                          overrides={5: {"batchsize": 2}}), tmp_path)
    assert run.result["status"] == "ok", run.log
    tasks = run.result["tasks"]
    assert [t["ok"] for t in tasks] == [True, False, False, False, False, False]
    assert tasks[1]["stage"] == "loading the task"
    assert tasks[1]["line"] == 6 and tasks[1]["error"].startswith("SyntaxError")
    assert tasks[2]["stage"] == "forward" and tasks[2]["line"] == 6
    assert tasks[2]["function"] == "forward"
    assert "NameError" in tasks[2]["error"] and "undefined_name" in tasks[2]["error"]
    assert tasks[3]["stage"] == "forward" and tasks[3]["line"] == 6
    assert "RuntimeError" in tasks[3]["error"]
    assert tasks[4]["stage"] == "forward" and "not a tensor" in tasks[4]["error"]
    assert "batchsize" in tasks[5]["error"] and tasks[5]["line"] is None


def test_a_malformed_job_is_an_infra_error(tmp_path):
    run = run_runner({"protocol": 1, "phase": "task_check", "device": "cpu", "tasks": [3]},
                     tmp_path)
    assert run.result["status"] == "infra_error"
    assert "job.tasks[0]" in run.result["diagnostics"]
