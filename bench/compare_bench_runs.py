#!/usr/bin/env python3
"""Compare two `kforge bench` runs of the same suite and conversation.

    compare_bench_runs.py RUN_A RUN_B

For every candidate (task, sample, iteration): its verdict in each run (they must be the same), and for
tasks correct in both, the candidate's and the eager baseline's cold medians with their noise
(rel. std). A difference counts as "within noise" when it is at most 3x the larger rel. std,
floored at 1 % (medians of the same kernel move by about that much between processes).
Prints a table and a summary line; exit 1 if any verdict differs.
"""
import json
import sqlite3
import sys


def verdicts_by_candidate(run_dir):
    """(task, sample, iteration) -> (status, verdict JSON, device) of every evaluation."""
    db = sqlite3.connect(f"{run_dir}/run.sqlite")
    rows = db.execute(
        """SELECT t.name, c.sample, c.iteration, e.status, e.verdict_json, e.device
           FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
           JOIN tasks t ON t.id = c.task_id ORDER BY t.name, c.sample, c.iteration""").fetchall()
    out = {}
    for name, sample, iteration, status, verdict, device in rows:
        out[(name, sample, iteration)] = (status, json.loads(verdict), device)
    return out


def stats(verdict, which):
    t = (verdict.get("timing") or {}).get(which) or {}
    return t.get("median_s"), t.get("rel_std")


def main():
    a, b = verdicts_by_candidate(sys.argv[1]), verdicts_by_candidate(sys.argv[2])
    keys = sorted(set(a) | set(b))
    same = differ = within = outside = 0
    print(f"{'task':58} {'A':16} {'B':16} {'cand A us':>10} {'cand B us':>10} {'diff':>7} {'noise':>6} {'eager diff':>10} devA devB")
    for k in keys:
        sa, va, da = a.get(k, ("absent", {}, "-"))
        sb, vb, db_ = b.get(k, ("absent", {}, "-"))
        if sa == sb:
            same += 1
        else:
            differ += 1
        line = f"{k[0][:58]:58} {sa:16} {sb:16}"
        ma, na = stats(va, "candidate")
        mb, nb = stats(vb, "candidate")
        if ma and mb:
            diff = mb / ma - 1
            noise = max(3 * max(na or 0, nb or 0), 0.01)
            ok = abs(diff) <= noise
            within += ok
            outside += not ok
            ea, _ = stats(va, "eager_baseline")
            eb, _ = stats(vb, "eager_baseline")
            ediff = f"{eb / ea - 1:+.2%}" if ea and eb else "-"
            line += f" {ma * 1e6:10.1f} {mb * 1e6:10.1f} {diff:+7.2%} {noise:6.1%} {ediff:>10}"
            line += "" if ok else "  OUTSIDE NOISE"
        line += f" {da} {db_}"
        print(line)
    print(f"\nverdicts: {same} same, {differ} different; timed in both: {within} within noise, "
          f"{outside} outside")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
