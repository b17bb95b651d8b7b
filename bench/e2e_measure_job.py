#!/usr/bin/env python3
"""Runs the e2e measure phase of a `kforge e2e` run again, under this Python (e.g. another torch):

    PYTHONPATH=runner python3 bench/e2e_measure_job.py RUN_DIR/e2e/measure-job.json OUT.json [NAMESPACE]

NAMESPACE (default kforge_rerun) replaces the job's operator namespace. Prints the configurations,
the equivalence rows and the coverage; writes the whole result to OUT.json. bench/RESULTS.md.
"""
import json
import sys

from kforge_runner.e2e import measure_phase


def main():
    job = json.load(open(sys.argv[1]))
    job["namespace"] = sys.argv[3] if len(sys.argv) > 3 else "kforge_rerun"
    result = measure_phase.run(job)
    json.dump(result, open(sys.argv[2], "w"), indent=1)
    print(result["status"], result.get("implementation"), "torch", result.get("torch"))
    for name, c in (result.get("configurations") or {}).items():
        print(f"  {name:16} {'available' if c['available'] else 'unavailable'} {c['why']}")
    for e in result.get("equivalence", []):
        print(f"  batch {e['batch_size']:>3} {e['configuration']:16} teacher_forced={e['teacher_forced']}"
              f" within_tolerance={e['within_tolerance']} tokens_agree={e['tokens_agree']}"
              f" disagreements={e['token_disagreements']} (near ties {e['near_tie_disagreements']})"
              f" max_abs_error={e['max_abs_error']:.2e}")
    print("  coverage", result.get("coverage"), result.get("diagnostics", "")[:2000])


if __name__ == "__main__":
    main()
