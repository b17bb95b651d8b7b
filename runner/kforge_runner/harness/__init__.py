"""The runner's harness mode (runner/HARNESS.md, protocol version 2).

``python3 -m kforge_runner --harness``: a command loop over the channel (fd 3) and the arena (fd 4)
that serves one opencl or module candidate, or the task's reference ``Model`` and its
``torch.compile`` variants for the baselines. The parent judge (``src/eval``) drives it and decides
every verdict; this process only loads, calls, times and copies.
"""
