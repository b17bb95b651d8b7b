"""The float64 truth of the reference phase (EVAL-PROTOCOL correctness rule 3).

The task's model is copied and moved to float64 (``Module.to(torch.float64)``: floating parameters
and buffers), its floating inputs upcast (exactly: every float32/float16/bfloat16 value is a
float64 value), and run on the device where the device computes in float64 (cuda, cpu), on the CPU
otherwise. Its outputs are what the task computes, in the task's own inputs, without the task
precision's rounding: the orchestrator measures the candidate's error and the task-precision
reference's own error against them (eval/accuracy.h).

A model that cannot run in float64 (it raises, or it returns a different number of outputs) has
no truth: the orchestrator falls back to the tolerance rule and the verdict says why. An output the
float64 run returns in another dtype than float64 (the model casts explicitly) has no truth either
(``None`` in its place, with a note), nor has an integer or bool output (judged exactly).
"""

import copy
from typing import Any, List, Optional, Tuple

import torch


def device_for(device: torch.device) -> torch.device:
    """Where the float64 run goes: the job's device when it computes in float64, else the CPU."""
    return device if device.type in ("cuda", "cpu") else torch.device("cpu")


class Truth:
    """The float64 copy of one model; ``outputs`` runs it on one trial's inputs."""

    def __init__(self, model: torch.nn.Module, device: torch.device):
        self.device = device_for(device)
        self.reason = ""  # why there is no truth, once there is none
        try:
            self._model: Optional[torch.nn.Module] = \
                copy.deepcopy(model).to(self.device).to(torch.float64)
        except Exception as e:  # a model that cannot be copied or moved has no truth
            self._model = None
            self.reason = f"the model cannot be moved to float64: {type(e).__name__}: {e}"[:300]

    @property
    def available(self) -> bool:
        return self._model is not None

    def outputs(self, inputs: List[Any], reference: List[torch.Tensor]
                ) -> Tuple[List[Optional[torch.Tensor]], str]:
        """The float64 outputs for ``inputs`` (None where there is none) and a note saying why an
        output has none. After a failure the truth is no longer available (``reason``)."""
        if self._model is None:
            return [None] * len(reference), ""
        args = [v.to(self.device).to(torch.float64)
                if isinstance(v, torch.Tensor) and v.is_floating_point()
                else v.to(self.device) if isinstance(v, torch.Tensor) else v for v in inputs]
        try:
            with torch.no_grad():
                value = self._model(*args)
            outputs = list(value) if isinstance(value, (tuple, list)) else [value]
            if len(outputs) != len(reference) or \
                    not all(isinstance(t, torch.Tensor) for t in outputs):
                raise ValueError(f"the float64 run returned {len(outputs)} values, the reference "
                                 f"{len(reference)} tensors")
        except Exception as e:
            self._model = None
            self.reason = f"the model cannot run in float64: {type(e).__name__}: {e}"[:300]
            return [None] * len(reference), ""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        truth: List[Optional[torch.Tensor]] = []
        notes = []
        for m, (t, r) in enumerate(zip(outputs, reference)):
            if not r.is_floating_point():
                truth.append(None)
            elif t.dtype != torch.float64 or tuple(t.shape) != tuple(r.shape):
                truth.append(None)
                notes.append(f"output {m}: the float64 run returned {str(t.dtype)[6:]} "
                             f"{list(t.shape)}, so it has no truth")
            else:
                truth.append(t.detach())
        return truth, "; ".join(notes)
