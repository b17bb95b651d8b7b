#!/usr/bin/env python3
"""The e2e measure phase on the CPU, with transformers' gpt-oss experts taking their GPU path.

    PYTHONPATH=runner python3 bench/e2e_measure_gpu_experts_path.py RUN/e2e/measure-job.json OUT.json

transformers' GptOssExperts.forward loops over the hit experts on the CPU (a data-dependent
`nonzero()`, so torch.compile breaks the graph there) and runs all experts densely with `bmm` on a
GPU. To see how torch.compile treats the model as it runs on the H200 without one, this script
removes the `device.type == "cpu"` test from that method (in this process only) and then runs
bench/e2e_measure_job.py. An experiment tool for bench/RESULTS.md, not part of KForge.
"""
import inspect
import os
import sys
import textwrap

import transformers.models.gpt_oss.modeling_gpt_oss as gpt_oss

CPU_TEST = 'hidden_states.device.type == "cpu" or '


def use_gpu_experts_path() -> None:
    source = textwrap.dedent(inspect.getsource(gpt_oss.GptOssExperts.forward))
    if CPU_TEST not in source:
        sys.exit(f"this transformers ({gpt_oss.__file__}) has no `{CPU_TEST.strip()}` test in "
                 "GptOssExperts.forward: the experiment does not apply")
    namespace = {}
    exec(compile(source.replace(CPU_TEST, ""), gpt_oss.__file__, "exec"), gpt_oss.__dict__,
         namespace)
    gpt_oss.GptOssExperts.forward = namespace["forward"]


if __name__ == "__main__":
    use_gpu_experts_path()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import e2e_measure_job
    e2e_measure_job.main()
