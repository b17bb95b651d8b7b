"""KernelBench's own correctness rule, as its evaluation documents it, applied to one submission.

Used only to check that `kforge eval` in KernelBench compatibility mode reaches the same verdict
(tests/compat/compare_verdicts.sh). Written from KernelBench's description of its procedure:
seed 42 before building Model and ModelNew from get_init_inputs(); trial seeds drawn from a
generator seeded with 42; per trial, inputs from get_inputs() under the trial seed, both models
called, shapes compared, then torch.allclose(atol=1e-2, rtol=1e-2). Any exception (the
load_inline build included) makes the submission incorrect.

Prints "correct" or "incorrect: <reason>".
"""
import argparse
import json
import sys

import torch


def _module(path_or_source, name, overrides=None):
    namespace = {"__name__": name}
    source = path_or_source if "\n" in path_or_source else open(path_or_source).read()
    exec(compile(source, name, "exec"), namespace)
    for key, value in (overrides or {}).items():
        namespace[key] = value
    return namespace


def verdict(task_source, overrides, submission, trials=5):
    task = _module(task_source, "kernelbench_task", overrides)
    torch.manual_seed(42)
    init_inputs = task["get_init_inputs"]()
    torch.manual_seed(42)
    model = task["Model"](*init_inputs)
    try:
        new = _module(submission, "kernelbench_submission")
        torch.manual_seed(42)
        model_new = new["ModelNew"](*init_inputs)
    except Exception as e:  # noqa: BLE001 - KernelBench counts any failure as not compiled
        return f"incorrect: did not build: {type(e).__name__}: {e}"
    generator = torch.Generator().manual_seed(42)
    seeds = torch.randint(0, 2**31 - 1, (trials,), generator=generator).tolist()
    with torch.no_grad():
        for seed in seeds:
            torch.manual_seed(seed)
            inputs = task["get_inputs"]()
            try:
                expected = model(*inputs)
                actual = model_new(*inputs)
            except Exception as e:  # noqa: BLE001
                return f"incorrect: runtime error: {type(e).__name__}: {e}"
            if expected.shape != actual.shape:
                return f"incorrect: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
            if not torch.allclose(expected, actual, atol=1e-2, rtol=1e-2):
                return "incorrect: outputs differ beyond atol=rtol=1e-2"
    return "correct"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task-jsonl", required=True)
    parser.add_argument("--problem-id", type=int, required=True)
    parser.add_argument("--overrides", default="{}", help="JSON object of task globals")
    parser.add_argument("submission")
    args = parser.parse_args()
    source = next(json.loads(line)["code"] for line in open(args.task_jsonl)
                  if json.loads(line)["problem_id"] == args.problem_id)
    print(verdict(source, json.loads(args.overrides), args.submission))


if __name__ == "__main__":
    sys.exit(main())
