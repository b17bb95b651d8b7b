"""The process's current CUDA device: one runner process serves one device."""


def use_device(device: str) -> None:
    """Makes ``device`` ("cuda:1") the process's current CUDA device.

    Tensors placed on cuda:1 do not make it current: a native kernel launched on the legacy
    default stream, a stream captured into a CUDA graph, Triton launches and library handles all
    go to the current device, which stays cuda:0. A bench that placed an evaluation on the second
    GPU of a host then timed it with illegal memory accesses. One runner serves one device, so
    the process-wide setting is the right scope. Other devices are left alone."""
    if not device.startswith("cuda:"):
        return
    import torch
    if torch.cuda.is_available():
        torch.cuda.set_device(torch.device(device))
