"""Entry point: ``python3 -m kforge_runner --job JOB.json --result-fd N`` (a phase of
runner/PROTOCOL.md), or ``python3 -m kforge_runner --harness`` (the command loop of
runner/HARNESS.md over the channel at fd 3 and the arena at fd 4).

Reads the job, runs its phase and writes exactly one result document to fd N. Whatever goes wrong
outside candidate and task code (a malformed job, unreadable inputs, a runner bug) is reported as
``infra_error``, except an operating-system error of the runner's own I/O once candidate code has
run in the process (exhausted descriptors, a scratch folder made unwritable, a full quota): that is
the candidate's status (``errors.classify_runner_failure``). Exits 0 once the result is written; 2 on bad command-line arguments (no result can
be written then).
"""

import argparse
import os
import sys

from kforge_runner import errors, process_guard, protocol
from kforge_runner.current_device import use_device


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python3 -m kforge_runner",
        description="Runs one KForge evaluation phase (runner/PROTOCOL.md).")
    parser.add_argument("--harness", action="store_true",
                        help="serve the harness protocol (runner/HARNESS.md) on fd 3 (channel) "
                             "and fd 4 (arena) instead of running one phase")
    parser.add_argument("--job", help="path of the job JSON document")
    parser.add_argument("--result-fd", type=int,
                        help="open file descriptor to write the result JSON document to")
    parser.add_argument("--seal-stdin", action="store_true",
                        help="read a per-job secret line from stdin and put it into the result "
                             "document as \"seal\" (PROTOCOL.md, 'Result seal')")
    parser.add_argument("--preload", metavar="DEVICE",
                        help="warm start: import torch and initialise DEVICE, then wait for the "
                             "job file to appear (PROTOCOL.md, 'Warm start')")
    args = parser.parse_args(argv)
    if not args.harness and (args.job is None or args.result_fd is None):
        parser.error("--job and --result-fd are required (or --harness)")
    return args


def _job_device(job) -> str:
    inner = getattr(job, "candidate_job", None)  # a profile job runs a candidate job
    return getattr(inner if inner is not None else job, "device", "") or ""


def _preload_and_wait(device: str, job_path: str) -> None:
    """Pays the fixed start-up costs (torch import, device context) before the job exists, so
    they overlap with the orchestrator's compile and reference phase; then waits for the job."""
    import time

    import torch  # noqa: F401  (the import is the point)
    use_device(device)
    if device.startswith("cuda") and torch.cuda.is_available():
        torch.empty(1, device=device)  # the device context
        try:
            _warm_device_kernels(torch, torch.device(device))
        except Exception:  # pylint: disable=broad-except  # an optional warm-up: the job loads them
            pass
    # The phases' modules, the environment and the sandbox probes do not depend on the job: they
    # are done here, off the evaluation's clock (both phases load no candidate code before this).
    from kforge_runner import candidate_phase, environment, isolation, native  # noqa: F401
    from kforge_runner import reference_phase  # noqa: F401
    environment.describe(torch.device(device))
    isolation.observe()
    while not os.path.exists(job_path):
        time.sleep(0.002)


def _warm_device_kernels(torch, device) -> None:
    """Loads the kernels the runner itself uses on every job (copies both ways, poison fills,
    clones, the comparisons of the input check and the degenerate checks), so that their lazy
    module loading is not paid inside the evaluation."""
    x = torch.rand(1024).to(device)
    y = torch.full((1024,), float("nan"), device=device)
    y.copy_(x)
    z = x.clone()
    torch.equal(x.view(torch.int32), z.view(torch.int32))
    d = x.double()
    ok = ((d - z.double()).abs() <= 1e-4 + 1e-4 * d.abs()) | (d == d)
    for reduced in (ok.all(), x.isnan().any(), torch.isfinite(x).all(), (x == 0).sum(), d.mean()):
        reduced.item()
    x.view(torch.uint8).fill_(0x5A)
    z.to("cpu")
    torch.cuda.synchronize(device)


def _run_phase(job):
    use_device(_job_device(job))
    # Imported here so that a protocol or job error is answered without importing torch.
    if isinstance(job, protocol.ReferenceJob):
        from kforge_runner import reference_phase
        return reference_phase.run(job)
    if isinstance(job, protocol.CalibrateJob):
        from kforge_runner import calibrate_phase
        return calibrate_phase.run(job)
    from kforge_runner import profile_phase
    if isinstance(job, profile_phase.ProfileJob):
        return profile_phase.run(job)
    from kforge_runner import task_check_phase
    if isinstance(job, task_check_phase.TaskCheckJob):
        return task_check_phase.run(job)
    from kforge_runner import candidate_phase
    return candidate_phase.run(job)


def _result_for(job_path: str):
    try:
        job = protocol.read_job(job_path)
    except protocol.UnsupportedProtocol as e:
        return {"status": errors.STATUS_INFRA_ERROR, "diagnostics": str(e)}
    except protocol.JobError as e:
        return {"status": errors.STATUS_INFRA_ERROR, "diagnostics": f"bad job: {e}"}
    phase = ("reference" if isinstance(job, protocol.ReferenceJob) else
             "calibrate" if isinstance(job, protocol.CalibrateJob) else
             "candidate" if isinstance(job, protocol.CandidateJob) else
             "task_check" if type(job).__name__ == "TaskCheckJob" else "profile")
    try:
        return _run_phase(job)
    except (Exception, SystemExit) as e:
        process_guard.exit_if_forked()
        status = errors.STATUS_INFRA_ERROR
        context = f"runner ({phase} phase)"
        if process_guard.candidate_ran():
            # The runner's own work failed after the candidate had the process (a descriptor
            # table it filled, a scratch folder it made unwritable): the candidate's verdict.
            blamed = errors.classify_runner_failure(e)
            if blamed is not None:
                status = blamed
                context = f"the runner's own work after the candidate ran ({phase} phase)"
        return {"phase": phase, "status": status,
                "diagnostics": errors.format_diagnostics(e, context=context)}


def main(argv=None) -> int:
    args = _parse_args(argv)
    if args.harness:
        from kforge_runner.harness import loop
        return loop.main()
    seal = None
    if args.seal_stdin:
        try:
            seal = protocol.read_seal()
        except (OSError, protocol.JobError) as e:
            print(f"kforge_runner: {e}", file=sys.stderr)
            return 2
    channel = protocol.ResultChannel(args.result_fd, seal)
    if args.preload:
        _preload_and_wait(args.preload, args.job)
    result = _result_for(args.job)
    try:
        channel.write(result)
    except (TypeError, ValueError) as e:  # a runner bug put a non-JSON value into the result
        channel.write({"phase": result.get("phase"), "status": errors.STATUS_INFRA_ERROR,
                       "diagnostics": f"result not serialisable as JSON: {e}"})
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skips atexit handlers and joins of threads that candidate code may have left behind.
    os._exit(status)
