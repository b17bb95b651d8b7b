"""The e2e pieces on their own: task extraction (task_writer) and integration (torch_op)."""

import os
import shutil
import subprocess
import sys
import types

import pytest
import torch
import torch.nn as nn

from conftest import RUNNER_ROOT

sys.path.insert(0, RUNNER_ROOT)
from kforge_runner import source_loader  # noqa: E402
from kforge_runner.e2e import task_writer, torch_op  # noqa: E402

ABI_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "kforge_runner", "abi")

SCALE = 0.5


def _halve(x):
    return x * SCALE


class ScaledNorm(nn.Module):
    """A leaf module whose forward uses a method, a same-file helper, a constant and a flag."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = 1e-5

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x, scale_it=True):
        y = self.weight * self._norm(x)
        return _halve(y) if scale_it else y


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 4)

    def forward(self, x):
        return self.inner(x)


def _site(args, params=("x", "scale_it"), outputs="tensor", state=("weight",)):
    return {"name": "ScaledNorm", "instances": ["norm"], "params": list(params), "args": args,
            "state_keys": list(state), "outputs": outputs}


def test_task_writer_builds_a_runnable_task(tmp_path):
    site = _site([{"name": "x", "kind": "tensor", "shape": [3, 8], "dtype": "float32",
                   "zero_fraction": 0.0},
                  {"name": "scale_it", "kind": "constant", "value": True}])
    source = task_writer.write_task(site, ScaledNorm(8), ["header"])
    path = tmp_path / "task.py"
    path.write_text(source)
    task = source_loader.load_module(str(path), "e2e_task_under_test")
    torch.manual_seed(0)
    model = task.Model(*task.get_init_inputs())
    (x,) = task.get_inputs()
    assert x.shape == (3, 8)
    # The weights were drawn around 1 (not all ones) and the constant argument was baked in.
    assert not torch.equal(model.weight, torch.ones(8))
    expected = 0.5 * model.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    assert torch.allclose(model(x), expected, atol=1e-6)
    assert "module_forward" in source  # the wrapper that passes scale_it=True


class ModeDependent(nn.Module):
    """Branches on self.training, as transformers' GptOssExperts does (loop vs dense path)."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return x * self.scale if self.training else x * self.scale + 100.0


def test_task_writer_keeps_the_mode_the_module_ran_in(tmp_path):
    site = {"name": "ModeDependent", "instances": ["m"], "params": ["x"],
            "args": [{"name": "x", "kind": "tensor", "shape": [2, 4], "dtype": "float32",
                      "zero_fraction": 0.0}],
            "state_keys": ["scale"], "outputs": "tensor"}
    for training in (False, True):
        module = ModeDependent().train(training)
        path = tmp_path / f"task_{training}.py"
        path.write_text(task_writer.write_task(site, module, []))
        task = source_loader.load_module(str(path), f"e2e_mode_task_{training}")
        model = task.Model()  # as a KernelBench harness builds it: no eval() call
        assert model.training == training
        (x,) = task.get_inputs()
        assert bool((model(x) > 50).all()) == (not training)
    # A forward that does not read self.training leaves the task as it was.
    site_norm = _site([{"name": "x", "kind": "tensor", "shape": [3, 8], "dtype": "float32",
                        "zero_fraction": 0.0},
                       {"name": "scale_it", "kind": "constant", "value": True}])
    assert "self.train(" not in task_writer.write_task(site_norm, ScaledNorm(8).eval(), [])


def test_task_writer_names_why_a_site_cannot_be_extracted():
    site = _site([{"name": "x", "kind": "tensor", "shape": [2, 4], "dtype": "float32"}],
                 params=("x",), state=("inner.weight", "inner.bias"))
    with pytest.raises(task_writer.NotExtractable, match="child modules"):
        task_writer.write_task(site, Holder(), [])


@pytest.fixture
def norm_kernel(tmp_path):
    """A kernel for ScaledNorm with scale_it=True, built like the cpu/cpp backend builds one."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    src = tmp_path / "norm.cpp"
    src.write_text(r'''
#include "kforge_kernel.h"
#include <cmath>
extern "C" int kforge_forward(const kforge_tensor* in, int n_in, kforge_tensor* out, int n_out,
                              void*) {
  if (n_in != 2 || n_out != 1 || in[0].dtype != kforge_float32) return 1;
  const int64_t h = in[0].shape[in[0].ndim - 1], rows = kforge_numel(&in[0]) / h;
  const float* x = (const float*)in[0].data; const float* w = (const float*)in[1].data;
  float* y = (float*)out[0].data;
  for (int64_t r = 0; r < rows; ++r) {
    float s = 0; for (int64_t i = 0; i < h; ++i) s += x[r * h + i] * x[r * h + i];
    const float k = 1.0f / std::sqrt(s / h + 1e-5f);
    for (int64_t i = 0; i < h; ++i) y[r * h + i] = 0.5f * w[i] * x[r * h + i] * k;
  }
  return 0;
}
''')
    so = tmp_path / "norm.so"
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-I", ABI_DIR, str(src), "-o", str(so)],
                   check=True)
    return str(so)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = ScaledNorm(8)

    def forward(self, x, scale_it=True):
        return self.norm(x, scale_it=scale_it)


def test_patch_routes_matching_calls_to_the_kernel(norm_kernel):
    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        net.norm.weight.uniform_(0.5, 1.5)
    site = _site([{"name": "x", "kind": "tensor", "dtype": "float32"},
                  {"name": "scale_it", "kind": "constant", "value": True}])
    site["instances"] = ["norm"]
    x = torch.randn(5, 8)
    with torch.no_grad():
        expected = net(x)
        unscaled = net(x, scale_it=False)
        handle = torch_op.patch(net, [site], {"ScaledNorm": norm_kernel}, "kforge_test_patch")
        got = net(x)
        got_unscaled = net(x, scale_it=False)  # a signature the kernel was not made for
        wide = net(torch.randn(2, 3, 8))       # other leading shapes reach the kernel too
        # A traced call (meta tensors here, fake tensors under torch.compile) goes through the
        # registered operator's shape function, not the kernel.
        traced = net.norm(torch.empty(4, 8, device="meta"), scale_it=True)
    assert traced.device.type == "meta" and traced.shape == (4, 8)
    assert torch.allclose(got, expected, atol=1e-5)
    assert torch.equal(got_unscaled, unscaled)
    assert wide.shape == (2, 3, 8)
    assert handle.kernels["ScaledNorm"].calls == 2
    assert handle.unrouted == {"ScaledNorm": 1}
    handle.undo()
    assert "forward" not in net.norm.__dict__


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile arrived in torch 2.0")
def test_a_compiled_patched_model_does_not_recompile_on_every_call(norm_kernel):
    """The patched forward's bookkeeping must not become a dynamo guard: a counter mutated in the
    traced code made every decode step recompile, and past the recompile limit the compiled
    model ran eagerly (found with transformers' gpt-oss at batch 1, 2026-11-29)."""
    import torch._dynamo

    torch._dynamo.reset()
    site = _site([{"name": "x", "kind": "tensor", "dtype": "float32"},
                  {"name": "scale_it", "kind": "constant", "value": True}])
    net = Net()
    x = torch.randn(5, 8)
    with torch.no_grad():
        expected = net(x)
        expected_unscaled = net(x, scale_it=False)
        handle = torch_op.patch(net, [site], {"ScaledNorm": norm_kernel}, "kforge_test_compiled")
        compiled = torch.compile(net)
        compiled(x)                  # routed to the kernel through the operator
        compiled(x, scale_it=False)  # left to the original forward
        calls = handle.kernels["ScaledNorm"].calls
        with torch._dynamo.config.patch(error_on_recompile=True):
            for _ in range(4):
                got = compiled(x)
                got_unscaled = compiled(x, scale_it=False)
    assert torch.allclose(got, expected, atol=1e-5)
    assert torch.allclose(got_unscaled, expected_unscaled, atol=1e-6)
    assert handle.kernels["ScaledNorm"].calls == calls + 4  # the kernel ran in every compiled call
    assert handle.unrouted.get("ScaledNorm", 0) == 0        # counted in eager calls only
    handle.undo()


def test_patch_refuses_a_model_without_the_site(norm_kernel):
    site = _site([{"name": "x", "kind": "tensor", "dtype": "float32"}], params=("x",))
    site["instances"] = ["missing.norm"]
    with pytest.raises(ValueError, match="missing.norm"):
        torch_op.patch(Net(), [site], {"ScaledNorm": norm_kernel}, "kforge_test_missing")


def test_equivalence_catches_a_token_change_and_an_error_beyond_tolerance():
    from kforge_runner.e2e import measure_phase
    reference = [torch.tensor([[0.0, 1.0, 0.5]]), torch.tensor([[0.2, 0.1, 0.0]])]
    same = measure_phase._compare(reference, [t.clone() for t in reference], 1e-4)
    assert same["within_tolerance"] and same["same_greedy_tokens"]
    off = [reference[0] + 1e-3, reference[1]]
    result = measure_phase._compare(reference, off, 1e-4)
    assert not result["within_tolerance"] and result["same_greedy_tokens"]
    flipped = [reference[0], torch.tensor([[0.1, 0.2, 0.0]])]
    result = measure_phase._compare(reference, flipped, 1e-1)
    assert not result["same_greedy_tokens"] and result["first_token_divergence"] == 1


def test_equivalence_counts_a_flipped_near_tie_apart():
    from kforge_runner.e2e import measure_phase
    reference = [torch.tensor([[1.000, 0.995, 0.0]])]  # the two best within 1e-2 of each other
    flipped = [torch.tensor([[0.996, 0.999, 0.0]])]    # logits within tolerance, argmax flipped
    result = measure_phase._compare(reference, flipped, 1e-2)
    assert result["within_tolerance"] and not result["same_greedy_tokens"]
    assert result["tokens_agree"] and result["near_tie_disagreements"] == 1
    clear = [torch.tensor([[1.0, 0.5, 0.0]])]           # a clear winner: a flip is a real change
    result = measure_phase._compare(clear, [torch.tensor([[0.5, 1.0, 0.0]])], 1e-2)
    assert not result["tokens_agree"] and result["token_disagreements"] == 1
    assert result["near_tie_disagreements"] == 0


class _CountingSession:
    """A toy decoding session: the logits favour token (fed + bias) mod 4; `bias` makes one
    configuration choose differently at every step."""

    def __init__(self, bias):
        self.bias = bias
        self.next_tokens = torch.tensor([[0]])

    def step(self, tokens=None):
        fed = self.next_tokens if tokens is None else tokens
        logits = torch.zeros(1, 4)
        logits[0, (int(fed) + 1 + self.bias) % 4] = 1.0
        self.next_tokens = logits.argmax(-1, keepdim=True)
        return logits


class _ToyModelFile:
    def __init__(self, bias_of):
        self.bias_of = bias_of

    def new_session(self, model, batch, device, steps):
        return _CountingSession(self.bias_of[model])


def test_equivalence_feeds_the_reference_tokens_to_the_other_configuration():
    from kforge_runner.e2e import measure_phase
    mf = _ToyModelFile({"original": 0, "same": 0, "other": 1})
    fed, reference = measure_phase._reference_decode(mf, "original", 1, "cpu", 5)
    assert [int(t) for t in fed] == [0, 1, 2, 3, 0]
    logits, forced = measure_phase._decode_like(mf, "same", 1, "cpu", fed)
    assert forced and measure_phase._compare(reference, logits, 1e-4)["same_greedy_tokens"]
    # Fed the reference's tokens, the other configuration is compared step by step on the same
    # stream: every step differs by one token, not a cascade from one early flip.
    logits, forced = measure_phase._decode_like(mf, "other", 1, "cpu", fed)
    result = measure_phase._compare(reference, logits, 1e-4)
    assert forced and result["token_disagreements"] == 5 and result["first_token_divergence"] == 0


def test_a_dynamo_recompile_limit_warning_is_noticed():
    import logging
    from kforge_runner.e2e import measure_phase
    watch = measure_phase._RecompileLimitWatch()
    logger = logging.getLogger(measure_phase._RecompileLimitWatch.LOGGER)
    logger.addHandler(watch)
    try:
        logger.warning("torch._dynamo hit config.%s (%s)", "recompile_limit", 8)
        logger.warning("something else")
    finally:
        logger.removeHandler(watch)
    assert watch.hits == 1


def test_model_file_errors_name_the_file_and_the_fix(tmp_path):
    from kforge_runner.e2e import model_file
    bad = tmp_path / "model.py"
    bad.write_text("CONFIGS = {'tiny': {'dtype': 'float32'}}\n"
                   "def build_model(c): pass\ndef new_session(*a): pass\n")
    with pytest.raises(model_file.ModelFileError, match="no configuration 'real'.*tiny"):
        model_file.load(str(bad), "real")
    with pytest.raises(model_file.ModelFileError, match="lacks 'batch_sizes'"):
        model_file.load(str(bad), "tiny")
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    with pytest.raises(model_file.ModelFileError, match="could not be executed as Python"):
        model_file.load(str(broken), "tiny")
