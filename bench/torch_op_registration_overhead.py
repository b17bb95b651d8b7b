#!/usr/bin/env python3
"""Host cost per call of one operator `(Tensor[] inputs) -> Tensor[]` registered two ways, eager
and inside a torch.compile'd function, on the CPU:

    python3 bench/torch_op_registration_overhead.py [CALLS]

`custom_op`: torch.library.custom_op + register_fake (what runner/kforge_runner/e2e/torch_op.py
used before 2026-11-29); `Library`: torch.library.Library define + impl + register_fake (what it
uses now). The body only allocates the output, so the figures are the registration's own cost.
Five rounds of CALLS calls each (default 20000; a fifth of that compiled); medians and the range
over the rounds, in microseconds. Needs torch >= 2.4. bench/RESULTS.md.
"""
import statistics
import sys
import time

import torch


def body(inputs):
    return [torch.empty_like(inputs[0])]


def fake(inputs):
    return [inputs[0].new_empty(inputs[0].shape)]


def per_call_us(fn, x, calls):
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn(x)
        rounds.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(rounds), min(rounds), max(rounds)


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    x = torch.randn(4, 1, 64)
    custom = torch.library.custom_op("kforge_bench_custom::f", body, mutates_args=(),
                                     schema="(Tensor[] inputs) -> Tensor[]")
    custom.register_fake(fake)
    library = torch.library.Library("kforge_bench_library", "DEF")
    library.define("f(Tensor[] inputs) -> Tensor[]")
    library.impl("f", body, "CPU")
    torch.library.register_fake("kforge_bench_library::f", fake, lib=library)
    ops = {"custom_op": torch.ops.kforge_bench_custom.f.default,
           "Library": torch.ops.kforge_bench_library.f.default}
    print(f"torch {torch.__version__}, tensor {list(x.shape)}, per call in us: median [min-max]")
    with torch.no_grad():
        m, lo, hi = per_call_us(lambda a: body([a]), x, calls)
        print(f"  {'direct (no operator)':24} eager    {m:6.1f} [{lo:.1f}-{hi:.1f}]")
        for name, op in ops.items():
            m, lo, hi = per_call_us(lambda a, op=op: op([a]), x, calls)
            print(f"  {name:24} eager    {m:6.1f} [{lo:.1f}-{hi:.1f}]")
        compiled = {"direct (no operator)": torch.compile(lambda a: body([a])[0] + 1)}
        for name, op in ops.items():
            compiled[name] = torch.compile(lambda a, op=op: op([a])[0] + 1)
        for name, fn in compiled.items():
            fn(x)
            m, lo, hi = per_call_us(fn, x, calls // 5)
            print(f"  {name:24} compiled {m:6.1f} [{lo:.1f}-{hi:.1f}]")


if __name__ == "__main__":
    main()
