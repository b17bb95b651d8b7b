#!/usr/bin/env python3
"""Host cost of a patched module call: straight to the kernel (eager fast path) against the same
call through the registered torch.library operator (the path torch.compile traces).

    e2e_call_overhead.py RUN_DIR [SITE] [CALLS]

RUN_DIR is a `kforge e2e` run with e2e/sites.json and e2e/kernels/SITE.so (default site
GptOssRMSNorm); the module is the site's first instance in the model file's model, called with
the arguments it gets in one decode step at the task batch size. Five alternating rounds of CALLS
calls each (default 2000); prints the per-call median of each path and of the original forward
(timed first, before the patch). bench/RESULTS.md.
"""
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0] + "/runner")
from kforge_runner.e2e import model_file, torch_op  # noqa: E402


def main():
    run, site_name = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "GptOssRMSNorm"
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    sites = json.load(open(f"{run}/e2e/sites.json"))
    site = next(s for s in sites["sites"] if s["name"] == site_name)
    mf = model_file.load(sites["model_file"], sites["config"])
    torch.manual_seed(sites["seed"])
    model = mf.build_model()
    module = dict(model.named_modules())[site["instances"][0]]
    x = torch.randn([a for a in site["args"] if a["kind"] == "tensor"][0]["shape"],
                    dtype=getattr(torch, site["args"][0]["dtype"]))
    original = []
    with torch.no_grad():
        for _ in range(5):
            module(x)
            start = time.perf_counter()
            for _ in range(calls):
                module(x)
            original.append((time.perf_counter() - start) / calls)
    handle = torch_op.patch(model, [site], {site_name: f"{run}/e2e/kernels/{site_name}.so"},
                            "kforge_overhead")
    direct, through_op = [], []
    real_compiling = torch_op._compiling
    with torch.no_grad():
        for _ in range(5):
            for path, out in ((real_compiling, direct), (lambda: True, through_op)):
                torch_op._compiling = path  # True: every call takes the operator's path
                module(x)
                start = time.perf_counter()
                for _ in range(calls):
                    module(x)
                out.append((time.perf_counter() - start) / calls)
    torch_op._compiling = real_compiling
    d, o = statistics.median(direct), statistics.median(through_op)
    r = statistics.median(original)
    print(f"{site_name} {list(x.shape)} on cpu, torch {torch.__version__}, {mf.implementation()}: "
          f"original forward {r * 1e6:.1f} us, patched: direct {d * 1e6:.1f} us, "
          f"through the operator {o * 1e6:.1f} us per call ({o / d:.2f}x); "
          f"kernel calls {handle.kernels[site_name].calls}")


if __name__ == "__main__":
    main()
