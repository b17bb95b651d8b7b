"""Entry point of the e2e phases: ``python3 -m kforge_runner.e2e --job JOB.json --result-fd N``.

Writes exactly one JSON result document (one line) to fd N and exits 0; a phase that fails
outside the model's contract answers ``{"status": "infra_error", "diagnostics": ...}``. These
phases run the user's model file and kernels that passed KForge's evaluation; they are not
sandboxed (docs/e2e.md).
"""

import argparse
import json
import os
import sys
import traceback


def _run(job):
    phase = job.get("phase")
    if phase == "e2e_profile":
        from kforge_runner.e2e import profile_phase
        return profile_phase.run(job)
    if phase == "e2e_measure":
        from kforge_runner.e2e import measure_phase
        return measure_phase.run(job)
    return {"status": "infra_error", "diagnostics": f"unknown e2e phase {phase!r}"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m kforge_runner.e2e")
    parser.add_argument("--job", required=True)
    parser.add_argument("--result-fd", required=True, type=int)
    args = parser.parse_args(argv)
    try:
        with open(args.job) as f:
            job = json.load(f)
        result = _run(job)
    except Exception:  # reported to the orchestrator, which prints it
        result = {"status": "infra_error", "diagnostics": traceback.format_exc()[-4000:]}
    with os.fdopen(args.result_fd, "w") as channel:
        channel.write(json.dumps(result, allow_nan=False) + "\n")
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
