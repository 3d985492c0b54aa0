"""DeviceFlow: what each name holds at a given use, for the rules that ask."""

from __future__ import annotations

import textwrap

import ast

import pytest

from mpslint.analysis.device_flow import DeviceFlow, Kind
from mpslint.analysis.tree import Tree
from mpslint.checks.base import Context
from mpslint.config import Settings


def flow_of(source: str):
    source = textwrap.dedent(source)
    module = ast.parse(source)
    ctx = Context(Tree(module, source), "example.py", Settings())
    return ctx.analysis(DeviceFlow), module


def kind_at(source: str, marker: str) -> Kind:
    """The kind of the expression on the line ending in ``# <- marker`` (the right side of ``probe = ...``)."""
    flow, module = flow_of(source)
    for node in flow.tree.of_type(ast.Assign):
        if flow.tree.line_text(node.lineno).rstrip().endswith(f"# <- {marker}"):
            return flow.kind(node.value)
    raise AssertionError(f"no line marked {marker}")


SCRIPT = """
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)

def step(batch, criterion):
    x = batch["x"]
    probe = x  # <- raw
    x = x.to(device)
    probe = x  # <- moved
    out = model(x)
    probe = out.logits  # <- output
    probe = out.logits.argmax(-1).detach()  # <- detached
    probe = out.shape  # <- shape
    probe = out.cpu()  # <- cpu
    probe = out.to("cpu")  # <- to-cpu
    probe = out.item()  # <- item
    probe = torch.from_numpy(np.zeros(3))  # <- from-numpy
    probe = torch.zeros(3)  # <- factory
    probe = torch.zeros(3, device=device)  # <- factory-device
    probe = torch.zeros(3, device="cpu")  # <- factory-cpu
    probe = torch.zeros_like(out)  # <- like
    probe = out + torch.ones(3)  # <- mixed
    probe = out is None  # <- identity
    probe = 2 * 3.0  # <- number
    probe = {k: v.to(device) for k, v in batch.items()}  # <- dict-comp
    probe = out.to(torch.float16)  # <- dtype-only
    probe = torch.cat([out, out])  # <- torch-fn
    probe = criterion(out, x)  # <- criterion
    probe = device  # <- handle
    probe = np.mean([1, 2])  # <- numpy
"""


@pytest.mark.parametrize(
    "marker,expected",
    [
        ("raw", Kind.UNKNOWN),
        ("moved", Kind.DEVICE),
        ("output", Kind.DEVICE),
        ("detached", Kind.DEVICE),
        ("shape", Kind.HOST),
        ("cpu", Kind.HOST_TENSOR),
        ("to-cpu", Kind.HOST_TENSOR),
        ("item", Kind.HOST),
        ("from-numpy", Kind.HOST_TENSOR),
        ("factory", Kind.HOST_TENSOR),
        ("factory-device", Kind.DEVICE),
        ("factory-cpu", Kind.HOST_TENSOR),
        ("like", Kind.DEVICE),
        ("mixed", Kind.DEVICE),
        ("identity", Kind.HOST),
        ("number", Kind.HOST),
        ("dict-comp", Kind.DEVICE),
        ("dtype-only", Kind.DEVICE),
        ("torch-fn", Kind.DEVICE),
        ("criterion", Kind.DEVICE),
        ("handle", Kind.ACCEL),
        ("numpy", Kind.HOST),
    ],
)
def test_kinds_in_a_training_step(marker, expected):
    assert kind_at(SCRIPT, marker) is expected


def test_placed_modules_by_statement_assignment_and_prepare():
    flow, _ = flow_of(
        """
        import torch
        netD.to(device)
        model = torchvision.models.resnet18().to(device)
        self.encoder = Encoder().cuda()
        x = torch.randn(3).to(device)
        model2, optimizer, train_loader = accelerator.prepare(model2, optimizer, train_loader)
        cpu_model.to("cpu")
        """
    )
    assert flow.placed == {"netD", "model", "self.encoder", "model2"}
    assert "train_loader" in flow.prepared


def test_latest_assignment_before_the_use_wins():
    source = """
    import torch
    def f(t, device):
        acc = t.to(device)
        acc = acc.cpu()
        probe = acc  # <- after-cpu
    """
    assert kind_at(source, "after-cpu") is Kind.HOST_TENSOR


def test_loop_carried_name_joins_all_assignments():
    source = """
    import torch
    def f(loader, device):
        total = 0
        for x in loader:
            probe = total  # <- carried
            total = total + x.to(device).sum()
    """
    assert kind_at(source, "carried") is Kind.DEVICE


def test_backward_marks_the_loss_and_the_outputs_it_came_from():
    source = """
    def step(model, batch):
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        probe = outputs.logits  # <- outputs
        probe = loss  # <- loss
    """
    assert kind_at(source, "outputs") is Kind.DEVICE
    assert kind_at(source, "loss") is Kind.DEVICE


def test_receiver_of_accelerator_backward_is_not_a_tensor():
    source = """
    def step(model, batch):
        loss = model(**batch).loss
        accelerator.backward(loss)
        probe = accelerator.is_main_process  # <- flag
    """
    assert kind_at(source, "flag") is Kind.UNKNOWN


def test_helper_that_takes_the_device_places_its_argument():
    source = """
    def step(batch, device):
        batch = to_device(batch, device)
        probe = batch  # <- helper
    """
    assert kind_at(source, "helper") is Kind.DEVICE


def test_parameters_take_what_the_callers_in_the_file_pass():
    source = """
    import torch
    def accuracy(output, target):
        probe = output  # <- param
    def train(model, x, device):
        out = model(x.to(device))
        accuracy(out, x)
    """
    assert kind_at(source, "param") is Kind.DEVICE


def test_string_devices():
    source = """
    device = "cuda" if ok else "cpu"
    probe = device  # <- either
    probe = "cpu"  # <- cpu
    probe = "hello"  # <- text
    """
    assert kind_at(source, "either") is Kind.ACCEL
    assert kind_at(source, "cpu") is Kind.CPU
    assert kind_at(source, "text") is Kind.HOST


def test_may_require_grad_respects_detach_and_no_grad():
    flow, module = flow_of(
        """
        import torch
        model = Net().to(device)
        def f(x):
            a = model(x)
            b = a.detach()
            with torch.no_grad():
                c = model(x)
                c
            a
            b
        """
    )
    uses = {}
    for node in flow.tree.of_type(ast.Expr):
        if isinstance(node.value, ast.Name):
            uses[node.value.id] = node.value
    assert flow.may_require_grad(uses["a"])
    assert not flow.may_require_grad(uses["b"])
    assert not flow.may_require_grad(uses["c"])


def test_device_variable_for_fixes():
    flow, module = flow_of(
        """
        import torch
        device = pick_device()
        def f(x):
            noise = torch.randn(3)
            return x.to(device)
        """
    )
    call = next(n for n in flow.tree.of_type(ast.Call) if flow.tree.text(n) == "torch.randn(3)")
    assert flow.device_variable(call) == "device"


def test_augmented_assignments_in_a_loop_do_not_recurse_forever():
    # Found in transformers (generation/continuous_batching): two `+=` on the same name in one loop.
    source = """
    def f(loader, device):
        total = 0
        for x in loader:
            total += x.to(device).sum()
            total += 1
            probe = total  # <- total
    """
    assert kind_at(source, "total") is Kind.DEVICE


def test_device_of_another_tensor_follows_that_tensor():
    # Found in transformers (neomme processing): `device=input_ids.device` on a CPU input is not the accelerator.
    source = """
    import torch
    model = Net().to(device)
    def f(input_ids, n, device):
        probe = torch.arange(n, device=input_ids.device)  # <- follows-unknown
        probe = torch.arange(n, device=input_ids.cpu().device)  # <- follows-cpu
        probe = torch.arange(n, device=input_ids.to(device).device)  # <- follows-device
        probe = torch.arange(n, device=model.device)  # <- model
        probe = input_ids.to(self.args.device)  # <- args
    """
    assert kind_at(source, "follows-unknown") is Kind.UNKNOWN
    assert kind_at(source, "follows-cpu") is Kind.HOST_TENSOR
    assert kind_at(source, "follows-device") is Kind.DEVICE
    assert kind_at(source, "model") is Kind.DEVICE
    assert kind_at(source, "args") is Kind.DEVICE


def test_both_arms_of_an_if_reach_the_code_after_it():
    source = """
    import torch
    def evaluate(model, loader, use_gpu):
        if use_gpu:
            device = torch.device("mps")
        else:
            device = torch.device("cpu")
        probe = device  # <- either
    """
    assert kind_at(source, "either") is Kind.ACCEL  # not "cpu" just because the else comes last


def test_an_arm_that_excludes_the_use_does_not_reach_it():
    source = """
    import torch
    def f(x, flag):
        x = x.cpu()
        if flag:
            x = x.to("mps")
        else:
            probe = x  # <- else
    """
    assert kind_at(source, "else") is Kind.HOST_TENSOR


def test_an_if_without_else_joins_what_came_before():
    source = """
    import torch
    def f(x, flag):
        x = x.to("mps")
        if flag:
            x = x.cpu()
        probe = x  # <- maybe
    """
    assert kind_at(source, "maybe") is Kind.DEVICE


def test_a_branch_that_tests_where_data_lives_wins():
    # Moved to the host exactly when it was on the device: after the `if`, it is on the host either way.
    source = """
    import torch
    def f(x, device):
        x = x.to(device)
        if device != "cpu":
            x = x.cpu()
        probe = x  # <- host
    """
    assert kind_at(source, "host") is Kind.HOST_TENSOR


def test_try_and_except_both_reach():
    source = """
    import torch
    try:
        device = torch.device("mps")
    except RuntimeError:
        device = torch.device("cpu")
    probe = device  # <- either
    """
    assert kind_at(source, "either") is Kind.ACCEL


def test_a_long_elif_dispatch_resolves_without_deep_recursion():
    arms = "".join(f"    {'if' if i == 0 else 'elif'} name == 'k{i}':\n        x = x.to('mps')\n" for i in range(2000))
    source = "import torch\ndef pick(name, x):\n    x = x.cpu()\n" + arms + "    probe = x  # <- after\n"
    assert kind_at(source, "after") is Kind.DEVICE


def test_a_handler_does_not_reach_the_else_of_its_try():
    # The handlers lie between the body and the ``else:``, which run as one branch: name resolution
    # from the ``else:`` looks past the handler (this shape once looped forever, transformers'
    # pipelines/base.py).
    source = """
    import torch
    def f(inputs):
        inputs = inputs.to("mps")
        try:
            first = next(inputs)
        except StopIteration:
            inputs = inputs.cpu()
        except ValueError:
            inputs = []
        else:
            if first:
                probe = inputs  # <- else
    """
    assert kind_at(source, "else") is Kind.DEVICE


def test_the_body_of_a_try_reaches_its_else_past_the_handlers():
    source = """
    import torch
    def f(x):
        try:
            x = x.cpu()
        except RuntimeError:
            x = x.to("mps")
        else:
            probe = x  # <- else
        after = x  # <- after
    """
    assert kind_at(source, "else") is Kind.HOST_TENSOR  # the handler's assignment never reaches the else
    assert kind_at(source, "after") is Kind.DEVICE  # after the try, either may hold: it may be on the device


def test_a_try_nested_in_the_else_of_a_try():
    source = """
    import torch
    def f(x):
        try:
            x = x.to("mps")
        except RuntimeError:
            x = x.cpu()
        else:
            try:
                y = 1
            except KeyError:
                x = x.cpu()
            else:
                probe = x  # <- inner
    """
    assert kind_at(source, "inner") is Kind.DEVICE


def test_a_loss_is_on_the_device_only_in_a_file_that_puts_something_there():
    # A CPU tutorial: nothing names a device or moves anything, so the model and its loss are on the CPU.
    cpu_only = """
    import torch
    model = torch.nn.Linear(1, 1)
    for epoch in range(10):
        loss = model(torch.ones(1, 1)).sum()
        loss.backward()
        probe = loss  # <- loss
    """
    assert kind_at(cpu_only, "loss") is not Kind.DEVICE
    # Trap: a helper that receives a model placed elsewhere still gets its batches moved here.
    helper = """
    def step(model, batch, device):
        loss = model(batch.to(device)).sum()
        loss.backward()
        probe = loss  # <- loss
    """
    assert kind_at(helper, "loss") is Kind.DEVICE


@pytest.mark.parametrize("device, on_device", [
    ("torch.device('cpu')", False),  # jcjohnson's pytorch-examples: a CPU script that spells out its device
    ("'cpu'", False),
    ("torch.device('cuda')", True),
    ("torch.device(args.device)", True),
    ("pick()", True),
])
def test_a_device_that_is_the_cpu_puts_nothing_on_a_device(device, on_device):
    source = f"""
    import torch
    device = {device}
    x = torch.randn(64, 10, device=device)
    model = torch.nn.Sequential(torch.nn.Linear(10, 1)).to(device)
    for t in range(500):
        loss = model(x).sum()
        loss.backward()
        probe = loss  # <- loss
    """
    assert (kind_at(source, "loss") is Kind.DEVICE) is on_device
