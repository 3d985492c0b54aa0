"""The emulated device on what PyTorch's own code does behind a public function: composite kernels' scratch tensors,
numbers in ``self``, module moves it cannot swap, TorchScript, ``torch.mps.*``. Each ran on a Mac and failed
under ``--simulate`` before (issue 27)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from mpslint.verify import child, messages  # noqa: E402
from mpslint.verify.simulate import SimulatedMPSTensor, simulated_device  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(torch.utils, "swap_tensors"), reason="--simulate needs torch 2.3")
F = torch.nn.functional


@pytest.fixture
def mps():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the explicit linalg_svd fallback warns
        with simulated_device(fallback=True) as simulator:
            yield simulator


def _same(on_device, on_host):
    """The device result is on mps and equals the CPU's."""
    if isinstance(on_host, (tuple, list)):
        assert len(on_device) == len(on_host)
        for d, h in zip(on_device, on_host):
            _same(d, h)
        return
    assert isinstance(on_device, SimulatedMPSTensor), type(on_device)
    assert on_device.dtype == on_host.dtype
    torch.testing.assert_close(on_device.cpu(), on_host)


# Composites that make scratch tensors with the input's options (the CPU's underneath, the device's on a Mac).
COMPOSITES = {
    "one_hot": (lambda t: F.one_hot(t, 4), lambda: torch.tensor([0, 3, 1])),
    "quantile": (lambda t: torch.quantile(t, 0.25), lambda: torch.arange(10.0)),
    "quantile_tensor_q": (lambda t: torch.quantile(t, torch.tensor([0.1, 0.9]).to(t.device), dim=0),
                          lambda: torch.arange(12.0).reshape(4, 3)),
    "nanquantile": (lambda t: t.nanquantile(0.5), lambda: torch.tensor([1.0, float("nan"), 3.0])),
    "combinations": (lambda t: torch.combinations(t, r=2), lambda: torch.arange(4)),
    "pinv": (lambda t: torch.linalg.pinv(t), lambda: torch.eye(3) * 2),  # float32 tolerances on MPS, float64 elsewhere
    "pinverse": (lambda t: torch.pinverse(t), lambda: torch.eye(3) * 2),  # the same, through linalg_pinv's rcond overload
    "linspace_tensors": (lambda t: torch.linspace(t[0], t[1], 5, device=t.device), lambda: torch.tensor([0.0, 1.0])),
    "unravel_index": (lambda t: torch.unravel_index(t, (3, 2)), lambda: torch.tensor([4, 5])),
    "rsub_float": (lambda t: 100 - t, lambda: torch.arange(3.0)),
    "rsub_uint8": (lambda t: 100 - t, lambda: torch.arange(3, dtype=torch.uint8)),  # the number keeps uint8
    "rsub_half": (lambda t: 1.5 - t, lambda: torch.arange(3, dtype=torch.float16)),
    # remainder.Scalar is composite: it calls remainder.Tensor with a wrapped number, which reaches the device mode
    "remainder_int": (lambda t: t % 3, lambda: torch.arange(-3, 6)),
    "remainder_float": (lambda t: torch.remainder(t, 2.5), lambda: torch.arange(-3.0, 6.0)),
    "remainder_half": (lambda t: t % 2.5, lambda: torch.arange(6, dtype=torch.float16)),  # the number keeps float16
    # _batch_norm_impl_index's empty-input branch: statistics in the device's accumulate type (float32 on MPS)
    "batch_norm_empty": (lambda t: F.batch_norm(t, None, None, training=True), lambda: torch.empty(0, 3)),
    "batch_norm_empty_half": (lambda t: F.batch_norm(t, None, None, training=True),
                              lambda: torch.empty(0, 3, dtype=torch.float16)),
    "take_along_dim_negative": (lambda t: torch.take_along_dim(t, t.argsort(1) - 3, 1),
                                lambda: torch.arange(6).reshape(2, 3)),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composites_run_on_the_device_as_on_a_mac(mps, name):
    call, make = COMPOSITES[name]
    _same(call(make().to("mps")), call(make()))


def test_a_users_cpu_tensor_given_to_a_composite_still_fails(mps):
    with pytest.raises(RuntimeError) as caught:
        torch.quantile(torch.arange(10.0, device="mps"), torch.tensor([0.1, 0.9]))
    assert messages.error_kind("RuntimeError", str(caught.value)) == "device-mismatch"
    with pytest.raises(RuntimeError):
        F.one_hot(torch.tensor([0, 1], device="mps"), 2) + torch.ones(2, 2)


def test_float64_scratch_is_float32_only_where_torch_picks_it_for_mps(mps):
    """A composite's scratch tensors take the MPS accumulate type (get_atol_rtol, _batch_norm_impl_index); a float64
    the user or a composite asks for by conversion still fails."""
    torch.linalg.pinv(torch.eye(2, device="mps"))
    empty = torch.empty(0, 3, device="mps", requires_grad=True)
    F.batch_norm(empty, None, None, training=True).sum().backward()
    assert isinstance(empty.grad, SimulatedMPSTensor) and empty.grad.dtype == torch.float32
    with pytest.raises(TypeError, match="float64"):
        torch.ones(2, device="mps").to(torch.float64)
    with pytest.raises(TypeError, match="float64"):
        torch.zeros(2, device="mps", dtype=torch.float64)
    with pytest.raises(TypeError, match="float64"):
        F.softmax(torch.ones(2, device="mps"), 0, dtype=torch.float64)  # the composite converts its input
    with pytest.raises(TypeError, match="ComplexDouble"):
        torch.ones(2, device="mps", dtype=torch.complex64).to(torch.complex128)


def test_a_module_with_legacy_weight_norm_moves_and_trains(mps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # weight_norm is deprecated
        model = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2))
    model.to("mps")
    assert model.weight_g.device.type == "mps" and isinstance(model.weight_g, torch.nn.Parameter)
    assert {p.device.type for p in model.parameters()} == {"mps"}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(4, 3, device="mps")).sum().backward()
    optimizer.step()
    assert model.weight_v.grad.device.type == "mps"


def test_torchscript_modules_move_and_run(mps):
    scripted = torch.jit.script(torch.nn.Linear(3, 2)).to("mps")
    assert scripted(torch.randn(4, 3, device="mps")).device.type == "mps"
    traced = torch.jit.trace(torch.nn.Linear(3, 2).to("mps"), torch.randn(4, 3, device="mps"))
    assert traced(torch.randn(5, 3, device="mps")).shape == (5, 2)


def test_torch_mps_profiler_runs_and_is_removed_after():
    had = hasattr(torch._C, "_mps_isCapturing")
    with simulated_device():
        with torch.mps.profiler.profile(mode="interval,event"):
            torch.ones(2, device="mps") * 2
        torch.mps.profiler.start()
        torch.mps.profiler.stop()
        assert torch.mps.profiler.is_capturing_metal() is False
        assert torch.mps.profiler.is_metal_capture_enabled() is False
    assert hasattr(torch._C, "_mps_isCapturing") == had


def test_collectives_follow_the_backends_device_rules(mps, tmp_path):
    """gloo registers itself for cpu (and cuda): a collective on an mps tensor raises ProcessGroup's own error."""
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not hasattr(dist.ProcessGroup, "unbox"):
        pytest.skip("no torch.distributed here")
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        on_host = torch.ones(2)
        dist.all_reduce(on_host)
        assert on_host.tolist() == [1.0, 1.0]
        with pytest.raises(RuntimeError, match="^No backend type associated with device type mps$") as caught:
            dist.all_reduce(torch.ones(2, device="mps"))
    finally:
        dist.destroy_process_group()
    # The script's error, with its advice: not the verifier's own failure ("crashed while setting up the run").
    assert messages.error_kind("RuntimeError", str(caught.value)) == "backend"
    assert not child._ours(caught.value)


def test_a_checkpoint_of_device_tensors_saves_and_loads(mps, tmp_path):
    """Diego999/pyGAT saves `model.state_dict()` every epoch and loads the best one back: torch.load is weights-only
    by default (torch 2.6), and the emulation's tensor class is no allowed global."""
    model = torch.nn.Linear(3, 2).to("mps")
    weight = torch.randn(2, 3).to("mps").requires_grad_()
    torch.save({"state": model.state_dict(), "weight": weight}, tmp_path / "ck.pkl")
    loaded = torch.load(tmp_path / "ck.pkl")
    assert type(loaded["weight"]) is torch.Tensor and loaded["weight"].requires_grad
    torch.testing.assert_close(loaded["weight"], weight.detach().cpu())
    model.load_state_dict(loaded["state"])
    assert isinstance(model.weight, SimulatedMPSTensor)
    _same(model(torch.ones(1, 3).to("mps")), torch.nn.functional.linear(torch.ones(1, 3), loaded["state"]["weight"],
                                                                       loaded["state"]["bias"]))



def test_mps_events_from_either_module_run():
    """torch.mps.Event and torch.mps.event.Event are one class; the CPU build's acquireEvent raises."""
    with simulated_device():
        for event_class in (torch.mps.Event, torch.mps.event.Event):
            start, end = event_class(enable_timing=True), event_class(enable_timing=True)
            start.record()
            end.record()
            end.synchronize()
            assert start.elapsed_time(end) == 0.0 and end.query()


def test_metal_capture_is_refused_without_mtl_capture_enabled_as_on_a_mac(monkeypatch):
    """MPSProfiler::startCapture raises when Metal cannot write a GPU trace document (no MTL_CAPTURE_ENABLED=1)."""
    monkeypatch.delenv("MTL_CAPTURE_ENABLED", raising=False)
    had = hasattr(torch._C, "_mps_startCapture")
    with simulated_device():
        assert torch.mps.profiler.is_metal_capture_enabled() is False
        with pytest.raises(RuntimeError, match=r"^Failed to start capture of 0000-trace\.gputrace error ") as caught:
            with torch.mps.profiler.metal_capture("trace"):
                pass
        assert not torch.mps.profiler.is_capturing_metal()
    assert messages.error_kind("RuntimeError", str(caught.value)) == "capture"
    assert not child._ours(caught.value)
    assert hasattr(torch._C, "_mps_startCapture") == had
    monkeypatch.setenv("MTL_CAPTURE_ENABLED", "1")
    with simulated_device():
        assert torch.mps.profiler.is_metal_capture_enabled() is True
        with torch.mps.profiler.metal_capture("trace"):
            assert torch.mps.profiler.is_capturing_metal()
            torch.ones(2, device="mps") * 2
        assert not torch.mps.profiler.is_capturing_metal()


def test_backward_formulas_make_their_scratch_tensors_on_the_device(mps):
    """IndexSelectBackward0 (C++) makes ``grad.new_zeros(sizes, grad.options())``: the device's options on a Mac."""
    x = torch.arange(12.0).reshape(4, 3).to("mps").requires_grad_()
    index = torch.tensor([0, 2, 2]).to("mps")
    (grad,) = torch.autograd.grad(torch.index_select(x, 0, index).sum(), x)
    assert isinstance(grad, SimulatedMPSTensor)
    assert grad.cpu().tolist() == [[1.0] * 3, [0.0] * 3, [2.0] * 3, [0.0] * 3]


def test_a_python_backward_that_asks_for_the_cpu_still_mixes_devices(mps):
    """An autograd.Function's backward is the user's code: its device="cpu" is the CPU, and mixing fails on a Mac."""

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad + grad.new_zeros(grad.shape, device="cpu")

    with pytest.raises(RuntimeError) as caught:
        Double.apply(torch.ones(3, device="mps", requires_grad=True)).sum().backward()
    assert messages.error_kind("RuntimeError", str(caught.value)) == "device-mismatch"


def test_a_loss_computed_on_the_cpu_gives_the_parameters_device_gradients(mps):
    """``loss(out.cpu(), y).backward()``: the copy's gradient goes back to the device, so the optimizer step runs."""
    model = torch.nn.Linear(3, 2).to("mps")
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    out = model(torch.ones(4, 3, device="mps"))
    F.mse_loss(out.cpu(), torch.zeros(4, 2)).backward()
    assert all(isinstance(p.grad, SimulatedMPSTensor) for p in model.parameters())
    optimizer.step()
    half = torch.ones(2, device="mps", dtype=torch.float16, requires_grad=True)
    half.to("cpu", torch.float32).sum().backward()  # the gradient keeps the input's dtype
    assert half.grad.dtype == torch.float16 and isinstance(half.grad, SimulatedMPSTensor)


def test_hermitian_pinv_takes_eigh_which_has_no_kernel():
    """linalg.pinv(hermitian=True) decomposes with linalg_eigh, not the svd PyTorch sends to the CPU by design."""
    with simulated_device(fallback=False):
        with pytest.raises(NotImplementedError, match="aten::_linalg_eigh"):
            torch.linalg.pinv(torch.eye(3).to("mps"), hermitian=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.linalg.pinv(torch.eye(3).to("mps"))
    assert any("aten::linalg_svd" in str(w.message) for w in caught)
