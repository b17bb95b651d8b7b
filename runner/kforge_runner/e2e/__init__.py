"""The Python phases of `kforge e2e` (docs/e2e.md): profiling a model's workload into kernel sites
and KernelBench tasks (``profile_phase``), and measuring the model with KForge's kernels put in
(``measure_phase``). ``torch_op`` is the integration itself (custom ops and module patching); it
imports nothing from KForge, because `kforge export --as torch-op` ships it as it is.
"""
