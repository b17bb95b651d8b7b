"""Loads a MODEL.py of `kforge e2e` and checks its contract (docs/e2e.md).

A MODEL.py defines:
  CONFIGS: dict            name -> configuration dict; each has "dtype" (a torch dtype name),
                           "batch_sizes" (list of int), "prompt_len", "decode_steps", and may have
                           "policy" (strict | tf32 | mixed, default strict) and "task_batch_size"
                           (the batch size whose shapes the tasks get; default the largest)
  build_model(config)      -> torch.nn.Module with random weights from the current torch RNG, on
                           the CPU, in eval mode
  new_session(model, config, batch_size, device, max_new_tokens)
                           -> an object whose step() decodes one token per sequence (greedy) and
                           returns that step's logits [batch, vocab]
  implementation(config)   (optional) -> str naming the implementation in use
"""

import dataclasses
from typing import Any, Dict, List

from kforge_runner import source_loader

MODEL_MODULE_NAME = "kforge_e2e_model"
POLICIES = ("strict", "tf32", "mixed")


class ModelFileError(Exception):
    """The model file breaks its contract; the message names the file, what is wrong and the fix."""


@dataclasses.dataclass
class ModelFile:
    path: str
    module: Any
    config_name: str
    config: Dict[str, Any]

    @property
    def batch_sizes(self) -> List[int]:
        return list(self.config["batch_sizes"])

    @property
    def policy(self) -> str:
        return self.config.get("policy", "strict")

    @property
    def task_batch_size(self) -> int:
        return int(self.config.get("task_batch_size", max(self.batch_sizes)))

    def implementation(self) -> str:
        describe = getattr(self.module, "implementation", None)
        return describe(self.config) if callable(describe) else "(the model file does not say)"

    def build_model(self):
        return self.module.build_model(self.config)

    def new_session(self, model, batch_size: int, device, max_new_tokens: int):
        return self.module.new_session(model, self.config, batch_size, device, max_new_tokens)


def load(path: str, config_name: str) -> ModelFile:
    """Executes the model file and checks the contract; raises ModelFileError."""
    try:
        module = source_loader.load_module(path, MODEL_MODULE_NAME)
    except Exception as e:  # the user's file: its failure is a message for the user
        raise ModelFileError(
            f"{path} could not be executed as Python ({type(e).__name__}: {e}); a kforge e2e "
            f"model file is a Python file that defines CONFIGS, build_model and new_session "
            f"(docs/e2e.md)") from e
    for name in ("CONFIGS", "build_model", "new_session"):
        if not hasattr(module, name):
            raise ModelFileError(
                f"{path} does not define {name}: a kforge e2e model file defines CONFIGS, "
                f"build_model(config) and new_session(model, config, batch_size, device, "
                f"max_new_tokens) (docs/e2e.md)")
    configs = module.CONFIGS
    if not isinstance(configs, dict) or not configs:
        raise ModelFileError(f"{path}: CONFIGS must be a non-empty dict of named configurations")
    if config_name not in configs:
        raise ModelFileError(
            f"{path} has no configuration {config_name!r}; pass --config with one of: "
            f"{', '.join(sorted(configs))}")
    config = configs[config_name]
    for key in ("dtype", "batch_sizes", "prompt_len", "decode_steps"):
        if key not in config:
            raise ModelFileError(f"{path}: configuration {config_name!r} lacks {key!r} "
                                 f"(docs/e2e.md lists the keys)")
    sizes = config["batch_sizes"]
    if not isinstance(sizes, list) or not sizes or not all(
            isinstance(b, int) and b > 0 for b in sizes):
        raise ModelFileError(f"{path}: configuration {config_name!r}: batch_sizes must be a "
                             f"non-empty list of positive integers, not {sizes!r}")
    if config.get("policy", "strict") not in POLICIES:
        raise ModelFileError(f"{path}: configuration {config_name!r}: policy must be one of "
                             f"{', '.join(POLICIES)}")
    return ModelFile(path=path, module=module, config_name=config_name, config=dict(config))
