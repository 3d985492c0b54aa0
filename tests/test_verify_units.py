"""The verifier's parts in process: PyTorch's real texts through the probe and the report, and the emulated device."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
import numpy as np

from mpslint.verify import child, launcher, messages, probe, report
from mpslint.verify.kernels import COMPOSITE, EXPLICIT_FALLBACK, MISSING, NATIVE, KernelOracle
from mpslint.verify.simulate import SimulatedMPSTensor, simulated_device

# Texts as PyTorch prints them on a Mac (knowledge/mps.md §1, from the macOS wheels and user logs).
REAL_FALLBACK = (
    "The operator 'aten::sgn.out' is not currently supported on the MPS backend and will fall back to run on the "
    "CPU. This may have performance implications. (Triggered internally at "
    "/Users/runner/work/pytorch/pytorch/pytorch/aten/src/ATen/mps/MPSFallback.mm:14.)"
)
REAL_NOT_IMPLEMENTED_A = (
    "The operator 'aten::upsample_bicubic2d.out' is not currently implemented for the MPS device. If you want this "
    "op to be added in priority during the prototype phase of this feature, please comment on "
    "https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment variable "
    "`PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this will be slower than "
    "running natively on MPS."
)
REAL_ERRORS = [
    ("TypeError", "Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. "
                  "Please use float32 instead.", "float64"),
    ("TypeError", "Cannot convert a float64 Tensor to MPS as the MPS framework doesn't support float64. "
                  "Please use float32 instead.", "float64"),
    ("RuntimeError", "Placeholder storage has not been allocated on MPS device!", "device-mismatch"),
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, mps:0 and cpu!",
     "device-mismatch"),
    ("RuntimeError", "Tensor for argument input is on cpu but expected on mps", "device-mismatch"),
    ("TypeError", "can't convert mps:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                  "memory first.", "numpy"),
    ("NotImplementedError", REAL_NOT_IMPLEMENTED_A, "unimplemented"),
    ("RuntimeError", "CUDA out of memory", None),
    ("TypeError", "unsupported operand type(s) for +: 'int' and 'str'", None),
]


# -- PyTorch's texts -------------------------------------------------------

def test_fallback_warning_text_names_the_op():
    assert messages.fallback_op(REAL_FALLBACK) == "aten::sgn.out"
    assert messages.fallback_op("UserWarning: something else entirely") is None
    # The simulator's own warning is PyTorch's text without the C++ location suffix.
    assert REAL_FALLBACK.startswith(messages.FALLBACK_WARNING.format(op="aten::sgn.out"))


@pytest.mark.parametrize("type_name, message, kind", REAL_ERRORS)
def test_real_error_texts_are_classified(type_name, message, kind):
    assert messages.error_kind(type_name, message) == kind


def test_not_implemented_text_by_version():
    assert messages.not_implemented("aten::upsample_bicubic2d.out", (2, 5), "x") == REAL_NOT_IMPLEMENTED_A
    text = messages.not_implemented("aten::linalg_eig", (2, 13), "cf30153c")
    assert "issues/141287" in text and "commit hash cf30153c." in text
    assert messages.NOT_IMPLEMENTED_RE.search(text).group("op") == "aten::linalg_eig"


def _line() -> int:
    import inspect

    return inspect.currentframe().f_back.f_lineno


def test_hotness_needs_most_steps():
    assert report.is_hot([1, 2, 3, 4, 5, 6], 6)
    assert report.is_hot([0, 1, 2], 6) is False  # half the steps is not most
    assert report.is_hot([6], 6) is False  # once, after the loop
    assert report.is_hot([0, 10, 20, 30], 40) is False  # every tenth step
    assert report.is_hot([1, 2], 2) and not report.is_hot([1], 1)


def test_step_clock_prefers_optimizer_steps_then_batches_then_forward_calls():
    assert report.step_clock({"optimizer": 3, "batches": 9, "forward": 9}) == "optimizer"
    assert report.step_clock({"optimizer": 0, "batches": 9, "forward": 9}) == "batches"
    assert report.step_clock({"optimizer": 0, "batches": 0, "forward": 2}) == "forward"
    assert report.step_clock({"optimizer": 0, "batches": 0, "forward": 0}) is None


def _run(events=(), errors=(), lines=(), clocks=None, ops_on_device=40):
    raw = {"status": "ran", "simulated": False, "torch_version": "2.13.0", "script_exit_code": 1 if errors else 0,
           "duration_s": 1.5, "events": list(events), "errors": list(errors), "lines": list(lines),
           "clocks": clocks or {"optimizer": 5, "batches": 5, "forward": 5}, "notes": [], "torch_imported": True,
           "ops": 50, "ops_on_device": ops_on_device}
    return launcher.Run(raw, 0, False, 2.0)


def _event(kind, key, row, steps, count=None, by_design=0):
    return {"kind": kind, "key": key, "row": row, "count": count or len(steps), "by_design": by_design,
            "steps": {"optimizer": steps, "batches": steps, "forward": steps}}


def test_real_mps_report_verdicts_and_exact_json_shape():
    options = launcher.Options("train.py")
    run = _run(events=[_event("fallback", "aten::sgn.out", 12, [1, 2, 3]),
                       _event("sync", "item", 20, [1, 2, 3, 4, 5]),
                       _event("sync", "to_host", 30, [5])], lines=range(1, 40))
    verdict = report.build(options, run)
    r = verdict.report
    assert list(r) == ["script", "device", "simulated", "torch_version", "verdict", "reasons", "script_exit_code",
                       "duration_s", "ops", "ops_on_device", "fallback_setting", "fallbacks", "syncs", "errors",
                       "warnings", "set_after_import", "known_wrong", "memory", "static"]
    assert r["known_wrong"] == [] and r["memory"] is None  # a raw report without memory samples
    assert r["device"] == "mps" and r["simulated"] is False and r["verdict"] == "fail" and verdict.exit_code == 1
    assert r["reasons"] == ["CPU fallbacks", "hot host syncs"] and (r["ops"], r["ops_on_device"]) == (50, 40)
    assert r["fallbacks"] == [{"op": "aten::sgn.out", "count": 3, "location": {"filename": "train.py", "row": 12},
                               "without_fallback": "NotImplementedError"}]
    assert r["syncs"] == [
        {"kind": "item", "count": 5, "hot": True, "location": {"filename": "train.py", "row": 20}},
        {"kind": "to_host", "count": 1, "hot": False, "location": {"filename": "train.py", "row": 30}},
    ]
    assert report.build(options, run, allow_fallback=True).exit_code == 1  # the hot sync still fails
    allowed = report.build(options, run, allow_fallback=True, allow_syncs=True)
    assert allowed.report["verdict"] == "pass" and allowed.exit_code == 0
    text = report.render_text(verdict).splitlines()
    assert text[0].startswith("FAIL: train.py on mps, torch 2.13.0") and text[0].endswith("40 of 50 torch ops on mps")
    assert "  train.py:12: aten::sgn.out ran on the CPU 3 times" in text
    assert "  train.py:20: item 5 times" in text


def test_autocast_disabled_warning_is_a_finding_at_the_users_line():
    from mpslint.verify import messages

    # The 2.13 text (torch/amp/autocast_mode.py) and the 2.8 macOS 13 one are both recognised; others are not.
    assert messages.autocast_disabled(messages.AUTOCAST_DISABLED)
    assert messages.autocast_disabled("In MPS autocast, but the target dtype torch.bfloat16 is not supported on macOS "
                                      "versions below 14. Disabling autocast.")
    assert not messages.autocast_disabled("In CPU autocast, but the target dtype is not supported. Disabling autocast.")
    run = _run(events=[_event("warning", "autocast-disabled", 7, [1, 2, 3])], lines=range(1, 10))
    static = [{"code": "MPS503", "row": 7, "end_row": 7}]
    verdict = report.build(launcher.Options("train.py"), run, static=static)
    assert verdict.report["warnings"] == [
        {"kind": "autocast-disabled", "count": 3, "location": {"filename": "train.py", "row": 7}}]
    assert verdict.report["static"] == [{"code": "MPS503", "row": 7, "status": "confirmed"}]
    assert verdict.exit_code == 0  # it changes the numerics, it does not fail the run
    text = report.render_text(verdict)
    assert "train.py:7: autocast disabled on mps" in text and "advice: MPS autocast takes torch.float16" in text


def test_gradscaler_sync_is_reported_but_not_hot():
    run = _run(events=[_event("sync", "item", 20, [1, 2, 3, 4, 5], by_design=5)])
    verdict = report.build(launcher.Options("train.py"), run)
    assert verdict.report["syncs"][0]["hot"] is False and verdict.exit_code == 0
    assert any("GradScaler" in note for note in verdict.notes)


def test_real_error_texts_fail_with_advice_and_confirm_static_findings():
    errors = [{"type": t, "message": m, "row": 7} for t, m, _ in REAL_ERRORS[:1]]
    run = _run(errors=errors, lines=range(1, 8))
    static = [{"code": "MPS303", "row": 7, "end_row": 7}, {"code": "MPS302", "row": 5, "end_row": 5},
              {"code": "MPS201", "row": 9, "end_row": 9}]
    verdict = report.build(launcher.Options("train.py"), run, static=static)
    assert verdict.report["static"] == [
        {"code": "MPS303", "row": 7, "status": "confirmed"},
        {"code": "MPS302", "row": 5, "status": "not-observed"},
        {"code": "MPS201", "row": 9, "status": "not-reached"},
    ]
    assert verdict.exit_code == 1
    assert "advice: MPS has no float64" in report.render_text(verdict)


def test_a_run_without_a_report_is_a_failure_not_a_pass():
    timed_out = report.build(launcher.Options("t.py", timeout=30), launcher.Run(None, -15, True, 1.0))
    assert timed_out.report["errors"] == [{"type": "Timeout", "message": "the script did not finish within 30 s",
                                           "location": None}]
    assert timed_out.report["script_exit_code"] is None
    assert timed_out.exit_code == 1
    died = report.build(launcher.Options("t.py"), launcher.Run(None, -11, False, 1.0))
    assert died.report["errors"][0]["type"] == "Crash" and died.exit_code == 1


def test_timeout_kills_the_run(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(600)\n")
    run = launcher.launch(launcher.Options(str(script), simulate=True, timeout=1.0), capture=True)
    assert run.timed_out and run.duration_s < 60


def test_child_says_when_there_is_no_mps_device(tmp_path):
    if torch.backends.mps.is_available():
        pytest.skip("this machine has an MPS device")
    out = tmp_path / "report.json"
    script = tmp_path / "s.py"
    script.write_text("import torch\nraise SystemExit('must not run')\n")
    assert child.main([str(out), "{}", str(script)]) == 0
    import json

    assert json.loads(out.read_text())["status"] == "no-device"


# -- the emulated device ----------------------------------------------------

simulates = pytest.mark.skipif(not hasattr(torch.utils, "swap_tensors"), reason="--simulate needs torch 2.3")


@pytest.fixture
def mps():
    with simulated_device(fallback=True) as simulator:
        yield simulator


@simulates
def test_platform_reports_a_mac_inside_and_is_restored_after():
    before = torch.backends.mps.is_available()
    with simulated_device():
        assert torch.backends.mps.is_available() and torch.backends.mps.is_built()
        assert not torch.cuda.is_available()
        torch.mps.synchronize(); torch.mps.empty_cache(); torch.mps.manual_seed(0)  # noqa: E702
    assert torch.backends.mps.is_available() == before


@simulates
def test_tensors_report_mps_and_compute_like_the_cpu(mps):
    torch.manual_seed(0)
    host = torch.randn(4, 3)
    x = host.to("mps")
    assert isinstance(x, SimulatedMPSTensor) and x.device == torch.device("mps", 0) and x.is_mps
    assert x.to(torch.device("mps")) is x
    back = x.cpu()
    assert type(back) is torch.Tensor and back.device.type == "cpu" and torch.equal(back, host)
    assert repr(torch.ones(2, device="mps")) == "tensor([1., 1.], device='mps:0')"
    assert torch.equal((x * 2 + 1).cpu(), host * 2 + 1)


@simulates
def test_module_to_keeps_parameters_and_training_matches_the_cpu(mps):
    def train(device):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        first = model[0].weight
        model.to(device)
        assert model[0].weight is first  # optimizers built before .to() keep working
        x, y = torch.randn(8, 3).to(device), torch.randn(8, 1).to(device)
        losses = []
        for _ in range(3):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses, model[0].weight.grad.device.type

    on_mps = train("mps")
    assert on_mps[1] == "mps"
    assert on_mps[0] == _cpu_losses()


def _cpu_losses():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@simulates
def test_float64_and_numpy_raise_pytorchs_type_errors(mps):
    with pytest.raises(TypeError) as caught:
        torch.from_numpy(np.ones(3)).to("mps")
    assert str(caught.value) == messages.FLOAT64
    with pytest.raises(TypeError, match="MPS framework doesn't support float64"):
        torch.zeros(2, dtype=torch.float64, device="mps")
    with pytest.raises(TypeError, match="MPS framework doesn't support float64"):
        torch.ones(2, device="mps").double()
    with pytest.raises(TypeError) as caught:
        torch.ones(2, device="mps").numpy()
    assert str(caught.value) == messages.NUMPY
    assert torch.ones(2, device="mps").cpu().numpy().tolist() == [1.0, 1.0]


@simulates
def test_device_mismatch_raises_pytorchs_runtime_errors(mps):
    on_device = torch.ones(2, 3, device="mps")
    with pytest.raises(RuntimeError) as caught:
        on_device + torch.ones(2, 3)
    assert str(caught.value) == messages.SAME_DEVICE.format(first="mps:0", second="cpu")
    assert (on_device + torch.tensor(2.0)).device.type == "mps"  # a CPU scalar is allowed
    with pytest.raises(RuntimeError) as caught:
        torch.nn.Linear(3, 2).to("mps")(torch.ones(4, 3))
    assert str(caught.value) == messages.LINEAR_INPUT
    with pytest.raises(RuntimeError) as caught:
        torch.nn.Conv2d(3, 4, 3).to("mps")(torch.ones(1, 3, 8, 8))
    assert str(caught.value) == messages.SLOW_CONV2D
    with pytest.raises(RuntimeError) as caught:
        torch.mm(on_device, torch.ones(3, 2))
    assert str(caught.value) == messages.PLACEHOLDER


@simulates
def test_missing_kernel_raises_without_the_fallback_flag():
    with simulated_device(fallback=False):
        features = torch.randn(5, 3, device="mps")
        with pytest.raises(NotImplementedError) as caught:
            torch.nn.functional.pdist(features)
    sha = torch.version.git_version
    assert str(caught.value) == messages.not_implemented("aten::_pdist_forward", (2, 13), sha) \
        or torch.__version__ < "2.6"


@simulates
def test_missing_kernel_warns_and_runs_on_the_cpu_with_the_flag(mps):
    torch.manual_seed(0)
    host = torch.randn(5, 3)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        result = torch.nn.functional.pdist(host.to("mps"))
        spaced = torch.logspace(0, 1, 5, device="mps")  # a composite that reaches logspace.out
    assert [messages.fallback_op(str(w.message)) for w in shown] == ["aten::_pdist_forward", "aten::logspace.out"]
    assert torch.equal(result.cpu(), torch.nn.functional.pdist(host))
    assert spaced.device.type == "mps"


@simulates
def test_explicit_cpu_fallback_warns_even_without_the_flag():
    with simulated_device(fallback=False) as simulator:
        if "linalg_svd" not in simulator.oracle.table.explicit_cpu_fallbacks:
            pytest.skip("this torch has an MPS kernel for linalg_svd")
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            torch.linalg.svd(torch.randn(3, 3, device="mps"))
    assert [messages.fallback_op(str(w.message)) for w in shown] == ["aten::linalg_svd"]


@simulates
def test_probe_sees_host_syncs_on_device_tensors(mps):
    recorder = probe.Recorder(__file__)
    x = torch.randn(6, device="mps")
    with probe.ProbeMode(recorder):
        x.sum().item(); item_row = _line()  # noqa: E702
        x.cpu(); host_row = _line()  # noqa: E702
        x[x > 0]; mask_row = _line()  # noqa: E702
        torch.nonzero(x); nonzero_row = _line()  # noqa: E702
        x + 1  # no sync
    found = {(e["key"], e["row"]) for e in recorder.as_json()}
    assert found == {("item", item_row), ("to_host", host_row), ("data_dependent", mask_row),
                     ("data_dependent", nonzero_row)}


def test_kernel_oracle_decisions():
    oracle = KernelOracle()
    aten = torch.ops.aten
    assert oracle.decide(aten.add.Tensor).kind == NATIVE
    assert oracle.decide(aten._pdist_forward.default).kind == MISSING
    assert oracle.decide(aten.logspace.default).kind == COMPOSITE
    assert oracle.decide(aten.detach.default).kind == NATIVE  # a view: nothing to follow
    assert oracle.decide(aten._slow_conv2d_forward.default).kind == NATIVE  # the CPU branch of convolution
    if "linalg_svd" in oracle.table.explicit_cpu_fallbacks:
        assert oracle.decide(aten.linalg_svd.default).kind == EXPLICIT_FALLBACK


@simulates
def test_optimizer_and_grad_clipping_group_device_tensors_on_mps(mps):
    # C++ groups tensors by the device it sees (the CPU); a device-side clip must not look like a host copy.
    model = torch.nn.Linear(3, 2).to("mps")
    model(torch.ones(4, 3, device="mps")).sum().backward()
    recorder = probe.Recorder(__file__)
    with probe.ProbeMode(recorder):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        torch.optim.AdamW(model.parameters(), foreach=True).step()
    assert recorder.as_json() == []
    assert model.weight.grad.device.type == "mps"


def test_the_docs_document_every_field_of_the_json_report():
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "verify.md").read_text(encoding="utf-8")
    section = page[page.index("The JSON report:"):page.index("## On a Mac: what the real path measures")]
    documented = []
    for cell in re.findall(r"^\| `([^|]+)` \|", section, re.MULTILINE):
        documented.extend(name.strip("` ") for name in cell.split(","))
    assert documented == list(report.build(launcher.Options("train.py"), _run()).report)
