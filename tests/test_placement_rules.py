"""MPS301-MPS304: host/device boundary mistakes, their traps, and their fixes."""

from __future__ import annotations


import pytest

from helpers import fix, rows

HEAD = """\
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
"""


def body(*lines: str) -> str:
    """HEAD plus a function whose first line (row 8) is ``lines[0]``."""
    return HEAD + "\n\ndef f(x, batch, a):\n" + "".join(f"    {line}\n" for line in lines)


ROW = 9


# -- MPS301 -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line,fixed",
    [
        ("return model(x).numpy()", "return model(x).detach().cpu().numpy()"),
        ("return x.to(device).numpy()", "return x.to(device).cpu().numpy()"),
        ("return model(x).detach().numpy()", "return model(x).detach().cpu().numpy()"),
        ("return torch.zeros(3, device=device).numpy()", "return torch.zeros(3, device=device).cpu().numpy()"),
    ],
)
def test_numpy_on_device_tensor_is_fixed_with_cpu(line, fixed):
    assert rows(body(line), "MPS301") == [ROW]
    assert fix(body(line), ["MPS301"]).text == body(fixed)


def test_numpy_under_no_grad_needs_no_detach():
    source = body("with torch.no_grad():", "    return model(x).numpy()")
    assert fix(source, ["MPS301"]).text == body("with torch.no_grad():", "    return model(x).cpu().numpy()")


@pytest.mark.parametrize(
    "line",
    [
        "return x.numpy()",  # unknown placement: not reported
        "return x.cpu().numpy()",
        "return torch.from_numpy(a).numpy()",
        "return torch.zeros(3).numpy()",
        "return np.ones(3).view(np.float32)",
        "return model(x).cpu().detach().numpy()",
        "return x.to(device).numpy(force=True)",
        "return x.to('cpu').numpy()",
    ],
)
def test_numpy_traps(line):
    assert rows(body(line), "MPS301") == []


# -- MPS302 -----------------------------------------------------------------


@pytest.mark.parametrize(
    "lines,fixed",
    [
        (["y = x.to(device)", "return y + torch.randn(y.shape)"], "return y + torch.randn(y.shape, device=y.device)"),
        (["y = x.to(device)", "return y * torch.ones(4, 4)"], "return y * torch.ones(4, 4, device=y.device)"),
        (["noise = torch.randn(4, 8)", "return model(noise)"], None),
    ],
)
def test_host_tensor_meets_the_device(lines, fixed):
    source = body(*lines)
    assert rows(source, "MPS302") == [ROW + len(lines) - 1]
    result = fix(source, ["MPS302"]).text
    if fixed is not None:
        assert result == body(*lines[:-1], fixed)
    else:
        assert "torch.randn(4, 8, device=device)" in result


@pytest.mark.parametrize(
    "lines",
    [
        ["y = x.to(device)", "return y + torch.zeros_like(y)"],
        ["y = x.to(device)", "return y + torch.randn(y.shape, device=y.device)"],
        ["y = x.to(device)", "return y * torch.tensor(0.5)"],  # a 0-dim scalar mixes fine
        ["y = x.to(device)", "return y + torch.ones(1)"],
        ["return x + torch.randn(3)"],  # x: placement unknown
        ["noise = torch.randn(4, 8).to(device)", "return model(noise)"],
        ["noise = torch.randn(4, 8, device=device)", "return model(noise)"],
        ["h = torch.zeros(3)", "return h + torch.ones(3)"],  # both on the host
    ],
)
def test_host_tensor_traps(lines):
    assert rows(body(*lines), "MPS302") == []


LOADER_SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 1).to(device)
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2{extra})
for inputs, targets in loader:
{body}
    loss = (model(inputs) - targets).pow(2).mean()
    loss.backward()
"""


def test_batch_never_moved_is_reported():
    source = LOADER_SCRIPT.format(extra="", body="    pass")
    assert rows(source, "MPS302") == [9]


@pytest.mark.parametrize(
    "extra,body",
    [
        ("", "    inputs = inputs.to(device)"),
        ("", "    inputs, targets = to_device((inputs, targets), device)"),
        (", collate_fn=place_batch", "    pass"),
    ],
)
def test_batch_moved_somewhere_is_not_reported(extra, body):
    assert rows(LOADER_SCRIPT.format(extra=extra, body=body), "MPS302") == []


def test_prepared_loader_is_not_reported():
    source = """\
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for inputs, targets in loader:
    loss = model(inputs).sum()
    loss.backward()
"""
    assert rows(source, "MPS302") == []


# -- MPS303 -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line,fixed",
    [
        ("return torch.from_numpy(np.random.rand(3)).to(device)", "return torch.from_numpy(np.random.rand(3)).float().to(device)"),
        ("return torch.from_numpy(np.loadtxt('f.csv')).to(device)", "return torch.from_numpy(np.loadtxt('f.csv')).float().to(device)"),
        ("return torch.from_numpy(np.array([0.5, 1.0])).to(device)", "return torch.from_numpy(np.array([0.5, 1.0])).float().to(device)"),
        ("return torch.from_numpy(a / 255).to(device)", "return torch.from_numpy(a / 255).float().to(device)"),
        ("return torch.zeros(3, dtype=torch.float64, device=device)", "return torch.zeros(3, dtype=torch.float32, device=device)"),
        ("return torch.ones(3, dtype=torch.double, device='cuda')", "return torch.ones(3, dtype=torch.float32, device='cuda')"),
        ("return x.to(device).double()", "return x.to(device).float()"),
        ("return x.to(device, torch.float64)", "return x.to(device, torch.float32)"),
        ("return x.to(device).to(dtype=torch.float64)", "return x.to(device).to(dtype=torch.float32)"),
        # host data at the move to the device (issue 25 item 5)
        ("return torch.tensor(np.random.rand(3), device=device)",
         "return torch.tensor(np.random.rand(3), dtype=torch.float32, device=device)"),
        ("return torch.as_tensor(np.asarray(a) / 255, device=device)",
         "return torch.as_tensor(np.asarray(a) / 255, dtype=torch.float32, device=device)"),
        ("return torch.zeros(3, dtype=torch.float64).to(device)", "return torch.zeros(3, dtype=torch.float64).float().to(device)"),
        ("return torch.ones(3).double().to(device)", "return torch.ones(3).float().to(device)"),
    ],
)
def test_float64_to_device(line, fixed):
    assert rows(body(line), "MPS303") == [ROW]
    assert fix(body(line), ["MPS303"]).text == body(line) # unsafe: not applied by default
    assert fix(body(line), ["MPS303"], unsafe=True).text == body(fixed)


def test_from_numpy_through_a_name():
    source = body("t = torch.from_numpy(np.random.rand(3, 4))", "return t.to(device)")
    assert rows(source, "MPS303") == [ROW + 1]


def test_set_default_dtype_in_a_device_script():
    assert rows(body("torch.set_default_dtype(torch.float64)"), "MPS303") == [ROW]
    cpu_only = "import torch\ntorch.set_default_dtype(torch.float64)\n"
    assert rows(cpu_only, "MPS303") == []


@pytest.mark.parametrize(
    "line",
    [
        "return torch.from_numpy(a).float().to(device)",
        "return torch.from_numpy(a).to(device)",  # dtype of a unknown
        "return torch.from_numpy(np.array(counts)).to(device)",  # ints, as in transformers' ibert
        "return torch.from_numpy(np.zeros(3, dtype=np.float32)).to(device)",
        "return torch.from_numpy(a).to(device, dtype=torch.float32)",
        "return torch.from_numpy(a.astype(np.float32)).to(device)",
        "return torch.from_numpy(labels).to(device)",
        "return torch.from_numpy(input_ids).to(device)",
        "return torch.from_numpy(a).to('cpu')",
        "return torch.zeros(3, dtype=torch.float64)",
        "return x.cpu().double()",
        "return torch.zeros(3, dtype=torch.float64, device='cpu')",
        "return x.double()",  # placement unknown
        "return torch.tensor([1, 2], device=device)",  # ints
        "return torch.zeros(3, dtype=torch.float64).to('cpu')",
        "return torch.zeros(3, dtype=torch.float64).to(device, torch.float32)",
        "return torch.ones(3).double().float().to(device)",
    ],
)
def test_float64_traps(line):
    assert rows(body(line), "MPS303") == []


MODULE_MOVE = """
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net()
{before}
model.to(device)
"""


@pytest.mark.parametrize("before", [
    "model.double()",
    "model.to(torch.float64)",
    "model.type(torch.double)",
    "model.float()\nmodel.double()",
])
def test_a_module_made_float64_in_place_then_moved(before):
    # issue 24 item 4: a module's .double() converts it in place; the move that follows is the failure
    source = MODULE_MOVE.format(before=before)
    row = source.count("\n")
    assert rows(source, "MPS303") == [row]
    fixed = fix(source, ["MPS303"], unsafe=True).text
    assert fixed.endswith("model.float().to(device)\n")


@pytest.mark.parametrize("before", [
    "model.double()\nmodel.float()",  # cast back before the move
    "model.half()",
    "model.to(torch.float32)",
    "x = model.double()",  # not a statement of its own: the rule reads the assignment instead (x is not moved)
])
def test_a_module_cast_back_or_never_float64_is_not_reported(before):
    assert rows(MODULE_MOVE.format(before=before), "MPS303") == []


def test_a_tensor_double_statement_changes_nothing():
    # `t.double()` alone returns a new tensor: t stays float32
    source = "import torch\ndevice = torch.device('cuda')\nt = torch.zeros(3)\nt.double()\nt = t.to(device)\n"
    assert rows(source, "MPS303") == []


@pytest.mark.parametrize("lines, moved", [
    (("y = torch.zeros(3).type(torch.float64)", "return y.to(device)"), 1),
    (("y = torch.zeros(3).type(torch.DoubleTensor)", "return y.to(device)"), 1),
    (("m = torch.nn.Linear(3, 3).to(torch.float64)", "m = m.to(device)", "return m"), 1),
    (("rng = np.random.default_rng(0)", "noise = rng.normal(size=3)", "return torch.from_numpy(noise).to(device)"), 2),
    (("grid = np.linspace(0, 1, 5)", "return torch.tensor(grid, device=device)"), 1),
])
def test_float64_sources_through_names(lines, moved):
    source = body(*lines)
    assert rows(source, "MPS303") == [ROW + moved]
    assert fix(source, ["MPS303"], unsafe=True).text != source  # the unsafe fix to float32 covers it


@pytest.mark.parametrize("lines", [
    ("y = torch.zeros(3).type(torch.float32)", "return y.to(device)"),
    ("y = torch.zeros(3).type(torch.FloatTensor)", "return y.to(device)"),
    ("rng = np.random.default_rng(0)", "noise = rng.integers(0, 5, size=3)", "return torch.from_numpy(noise).to(device)"),
    ("grid = np.linspace(0, 1, 5, dtype=np.float32)", "return torch.tensor(grid, device=device)"),
])
def test_float64_sources_traps(lines):
    assert rows(body(*lines), "MPS303") == []


# -- MPS304 -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line,fixed",
    [
        ("return x.to(device).to('cpu', non_blocking=True)", "return x.to(device).to('cpu')"),
        ("return model(x).to(device='cpu', non_blocking=True)", "return model(x).to(device='cpu')"),
        ("return x.to(torch.device('cpu'), non_blocking=True)", "return x.to(torch.device('cpu'))"),
    ],
)
def test_non_blocking_to_host(line, fixed):
    assert rows(body(line), "MPS304") == [ROW]
    assert fix(body(line), ["MPS304"]).text == body(fixed)


def test_non_blocking_copy_into_host_buffer():
    source = body("buf = torch.empty(3)", "buf.copy_(model(x), non_blocking=True)")
    assert rows(source, "MPS304") == [ROW + 1]
    assert fix(source, ["MPS304"]).text == body("buf = torch.empty(3)", "buf.copy_(model(x))")


@pytest.mark.parametrize(
    "line",
    [
        "return x.to(device, non_blocking=True)",  # to the device
        "return x.cuda(non_blocking=True)",
        "return x.to('cpu', non_blocking=False)",
        "return torch.zeros(3).to('cpu', non_blocking=True)",  # already on the host
    ],
)
def test_non_blocking_traps(line):
    assert rows(body(line), "MPS304") == []


# Host-to-mps copies (issue 26: pytorch/pytorch#139550, invoke-ai/InvokeAI#6549).
MPS_HEAD = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")
name = "mps" if torch.backends.mps.is_available() else "cpu"


def train(model, loader, opt):
    for batch, target in loader:
"""


def in_loop(*lines: str) -> str:
    return MPS_HEAD + "".join(f"        {line}\n" for line in lines)


@pytest.mark.parametrize(
    "line,fixed",
    [
        ("batch = batch.to(device, non_blocking=True)", 'batch = batch.to(device, non_blocking=device.type == "cuda")'),
        ("batch = batch.to(device=device, non_blocking=True)",
         'batch = batch.to(device=device, non_blocking=device.type == "cuda")'),
        ("target = target.to(name, non_blocking=True)",
         'target = target.to(name, non_blocking=torch.device(name).type == "cuda")'),
        ("batch = batch.to('mps', non_blocking=True)", "batch = batch.to('mps')"),
        ("batch = batch.to(torch.device('mps:0'), non_blocking=True)", "batch = batch.to(torch.device('mps:0'))"),
    ],
)
def test_non_blocking_to_mps(line, fixed):
    source = in_loop(line)
    assert rows(source, "MPS304") == [source.count("\n")]
    assert fix(source, ["MPS304"]).text == in_loop(fixed)


@pytest.mark.parametrize(
    "source",
    [
        in_loop("batch = batch.to('cuda', non_blocking=True)"),
        in_loop("batch = batch.to(device, non_blocking=False)"),
        in_loop("batch = batch.to(device, non_blocking=args.non_blocking)"),
        in_loop("if device.type == 'cuda':", "    batch = batch.to(device, non_blocking=True)"),
        in_loop("if torch.cuda.is_available():", "    batch = batch.to(device, non_blocking=True)"),
        in_loop("out = model(batch.to(device))", "out = out.to(device, non_blocking=True)"),  # already there
        in_loop("batch = batch.to(torch.float16, non_blocking=True)"),  # a dtype, not a device
        # A file that never names mps: its device is CUDA or the CPU.
        body("return x.to(device, non_blocking=True)"),
    ],
)
def test_non_blocking_to_device_traps(source):
    assert rows(source, "MPS304") == []


def test_non_blocking_to_a_helpers_device():
    source = (
        "import torch\n\n\ndef get_device():\n    if torch.backends.mps.is_available():\n        return 'mps'\n"
        "    return 'cpu'\n\n\ndef run(loader):\n    device = get_device()\n    for x in loader:\n"
        "        x = x.to(device, non_blocking=True)\n"
    )
    assert rows(source, "MPS304") == [13]


def test_non_blocking_to_a_device_the_class_compares_with_mps():
    # nnU-Net's trainer: `self.device` comes from the caller, and the class itself tests it for mps.
    source = (
        "import torch\n\n\nclass Trainer:\n    def __init__(self, device):\n        self.device = device\n"
        "        if self.device == torch.device('mps'):\n            self.compile = False\n\n"
        "    def train_step(self, batch):\n        data = batch['data'].to(self.device, non_blocking=True)\n"
        "        return data\n"
    )
    assert rows(source, "MPS304") == [11]
    assert 'non_blocking=torch.device(self.device).type == "cuda"' in fix(source, ["MPS304"]).text


def test_non_blocking_to_an_accelerators_device():
    # diffusers' training examples: accelerate picks mps on Apple silicon.
    source = (
        "import torch\nfrom accelerate import Accelerator\n\naccelerator = Accelerator()\n"
        "for batch in loader:\n    x = batch['pixel_values'].to(accelerator.device, non_blocking=True)\n"
    )
    assert rows(source, "MPS304") == [6]
    assert 'non_blocking=accelerator.device.type == "cuda"' in fix(source, ["MPS304"]).text
    on_cpu = source.replace("Accelerator()", "Accelerator(cpu=True)")
    assert rows(on_cpu, "MPS304") == []


def test_a_device_parameter_is_not_known_to_be_mps():
    # The DeiT/timm `train_one_epoch(..., device, ...)` shape: the caller decides, in another file.
    source = (
        "import torch\n\n\ndef train_one_epoch(model, loader, device):\n    for x, y in loader:\n"
        "        x = x.to(device, non_blocking=True)\n\n\nDEFAULT = torch.device('mps')\n"
    )
    assert rows(source, "MPS304") == []


def test_multiline_call_keeps_parsing():
    source = body("return x.to(", "    'cpu',", "    non_blocking=True,", ")")
    result = fix(source, ["MPS304"])
    assert result.error is None and "non_blocking" not in result.text


def test_a_local_model_is_not_placed_by_another_function():
    # Found in accelerate's tests: one test moves its `model`, another builds its own and runs it on the CPU.
    source = """\
import torch

def test_on_device(device):
    model = Net().to(device)
    return model(torch.randn(2, 3).to(device))

def test_on_cpu():
    model = Net()
    x = torch.randn(2, 3)
    return model(x)

def run(model, device):
    return model(torch.randn(2, 3))
"""
    assert rows(source, "MPS302") == [13]


def test_calls_before_the_model_is_moved_run_on_the_cpu():
    # Found in accelerate's tests: a reference output computed on the CPU, then the model is moved.
    source = """\
import torch

def compare(device):
    model = Net()
    x = torch.randn(2, 3)
    expected = model(x)
    model.to(device)
    return model(x)
"""
    assert rows(source, "MPS302") == [8]


def test_mismatch_expected_by_a_test_is_not_reported():
    # Found in accelerate's tests: the test asserts that the mixed-device call raises.
    source = """\
import pytest
import torch

def test_raises(device):
    model = Net().to(device)
    with pytest.raises(RuntimeError):
        model(torch.randn(2, 3))
"""
    assert rows(source, "MPS302") == []


ROLLOUT = """
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def rollout(env, policy, steps):
    obs = env.reset()
    for _ in range(steps):
        action = policy({move})
        obs, reward, done, info = env.step(action)
"""


@pytest.mark.parametrize("move", [
    "torch.from_numpy(obs).to(device)",
    "torch.as_tensor(obs, device=device)",
    "torch.tensor(obs, device=device)",
])
def test_an_environment_observation_moved_to_the_device(move):
    # issue 24 item 4: gym's continuous-control observations are float64 numpy arrays
    source = ROLLOUT.format(move=move)
    assert rows(source, "MPS303") == [7]
    assert fix(source, ["MPS303"], unsafe=True).text != source


@pytest.mark.parametrize("source", [
    ROLLOUT.format(move="torch.from_numpy(obs).float().to(device)"),
    ROLLOUT.format(move="torch.as_tensor(obs, dtype=torch.float32, device=device)"),
    ROLLOUT.format(move="torch.FloatTensor(obs).to(device)"),
    ROLLOUT.format(move="torch.tensor(reward, device=device)"),  # a Python float: float32
    # image observations (Atari frames) are uint8
    ROLLOUT.format(move="torch.from_numpy(obs).to(device).float() / 255"),
    ROLLOUT.format(move="torch.from_numpy(obs).to(device)") + "ENV_ID = 'PongNoFrameskip-v4'\n",
    # classic control and Box2D: float32 observations in today's gym and gymnasium
    ROLLOUT.format(move="torch.from_numpy(obs).to(device)") + "ENV_ID = 'CartPole-v1'\n",
    ROLLOUT.format(move="torch.as_tensor(obs, device=device)") + "env_name = 'LunarLander-v2'\n",
    # not an environment
    ROLLOUT.format(move="torch.from_numpy(obs).to(device)").replace("env.step(action)", "optimizer.step(action)")
    .replace("obs = env.reset()", "obs = loader.reset()"),
])
def test_environment_observation_traps(source):
    assert rows(source, "MPS303") == []
