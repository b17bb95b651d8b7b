"""KForge runner: executes task references and candidate kernels, one evaluation phase per process.

The C++ orchestrator starts ``python3 -m kforge_runner --job JOB.json --result-fd N`` and reads one
JSON result from fd N. The wire format is specified in ``runner/PROTOCOL.md``; this package
implements version 1 of it.
"""
