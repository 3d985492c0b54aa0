"""Backward passes under ``verify --simulate``: the scratch tensors C++ backward formulas create from a device
tensor's options land on the device, as on a Mac; a CPU part of the same graph keeps its CPU tensors."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mpslint.verify.simulate import SimulatedMPSTensor, simulated_device  # noqa: E402

# Formulas that call a factory with grad.options()/self.options() and no tensor argument (trace_backward's zeros,
# prod_backward's ones, cummaxmin_backward's zeros, diagonal_scatter's backward, cumprod_backward).
FORMULAS = {
    "trace": torch.trace,
    "prod": torch.prod,
    "cumprod": lambda t: torch.cumprod(t, 0),
    "cummax": lambda t: torch.cummax(t, 0)[0],
    "diagonal_scatter": lambda t: torch.diagonal_scatter(t, torch.ones(3, device=t.device)),
}


@pytest.mark.parametrize("name", sorted(FORMULAS))
@pytest.mark.parametrize("entry", ["backward", "grad"])
def test_a_formulas_scratch_tensors_are_on_the_device(name, entry):
    with simulated_device(fallback=False):
        x = torch.randn(3, 3, device="mps", requires_grad=True)
        out = FORMULAS[name](x).sum()
        if entry == "backward":
            out.backward()
            grad = x.grad
        else:
            grad, = torch.autograd.grad(out, x)
    assert isinstance(grad, SimulatedMPSTensor) and grad.device.type == "mps"


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_trap_the_same_formulas_on_the_cpu_stay_on_the_cpu(name):
    with simulated_device(fallback=False):
        x = torch.randn(3, 3, requires_grad=True)
        FORMULAS[name](x).sum().backward()
    assert type(x.grad) is torch.Tensor and x.grad.device.type == "cpu"


def test_a_cpu_part_of_a_device_graph_keeps_cpu_gradients():
    """x on the CPU, moved to mps after trace: TraceBackward0 runs on the CPU (its leaf is there), x.grad is a CPU
    tensor, as on a Mac (ToCopyBackward0 copies the gradient back)."""
    with simulated_device(fallback=False):
        x = torch.randn(3, 3, requires_grad=True)
        w = torch.randn(1, device="mps", requires_grad=True)
        (torch.trace(x).to("mps") * w).sum().backward()
        y = torch.randn(2, requires_grad=True)
        ((y * 2).to("mps") * w).sum().backward()
    assert type(x.grad) is torch.Tensor and x.grad.device.type == "cpu"
    assert type(y.grad) is torch.Tensor and y.grad.device.type == "cpu"
    assert isinstance(w.grad, SimulatedMPSTensor)


def test_a_dtype_change_in_the_graph_keeps_the_gradient_on_the_device():
    """ToCopyBackward0 copies to the forward input's options (float16 on mps); C++ reads them as the CPU's."""
    with simulated_device(fallback=False):
        x = torch.randn(3, 4, dtype=torch.float16, device="mps", requires_grad=True)
        w = torch.randn(4, dtype=torch.float16, device="mps", requires_grad=True)
        torch.nn.functional.rms_norm(x, (4,), w, eps=1e-5).sum().backward()
        (x.float() * 2).sum().backward()
        cpu = torch.randn(2, dtype=torch.float16, requires_grad=True)  # trap: the same on the CPU stays there
        (cpu.float() * 2).sum().backward()
    assert isinstance(x.grad, SimulatedMPSTensor) and x.grad.dtype == torch.float16
    assert isinstance(w.grad, SimulatedMPSTensor)
    assert type(cpu.grad) is torch.Tensor and cpu.grad.dtype == torch.float16
