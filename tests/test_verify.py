"""End to end: `mpslint verify --simulate` on scripts with known behaviour, and the same scripts run plainly on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.utils, "swap_tensors"):
    pytest.skip("--simulate needs torch 2.3 (tests/test_verify_probe.py covers older torch)", allow_module_level=True)

from clitools import cli_runner

from mpslint.verify import messages
from mpslint.verify.command import verify

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "verify"
SCRIPTS = ("clean_loop", "missing_kernel_loop", "float64_numpy", "item_per_step", "cpu_batch", "bounded_loop")


def rel(name: str) -> str:
    return f"fixtures/verify/{name}.py"


def row_of(name: str, marker: str) -> int:
    lines = (FIXTURES / f"{name}.py").read_text().splitlines()
    rows = [i for i, line in enumerate(lines, 1) if marker in line]
    assert len(rows) == 1, (name, marker, rows)
    return rows[0]


_runs: Dict[Tuple[str, ...], object] = {}


def run_verify(*args: str):
    """One verifier run per distinct command line for the whole module (each costs a torch import)."""
    if args not in _runs:
        _runs[args] = cli_runner().invoke(verify, list(args), catch_exceptions=False)
    return _runs[args]


def json_report(name: str, *extra: str, script_args: Tuple[str, ...] = ()) -> Tuple[dict, object]:
    result = run_verify("--simulate", "--output-format", "json", *extra, rel(name), *(("--",) + script_args
                                                                                    if script_args else ()))
    return json.loads(result.stdout), result


@pytest.fixture(scope="module", autouse=True)
def in_repo_root(request):
    mp = pytest.MonkeyPatch()
    mp.chdir(ROOT)
    yield
    mp.undo()


@pytest.fixture(scope="module")
def plain_runs() -> Dict[str, Tuple[str, str]]:
    """Every fixture run as an ordinary CPU script, in one subprocess: (outcome, stdout) per script."""
    driver = (
        "import contextlib, io, json, runpy, sys\n"
        "out = {}\n"
        "for path in sys.argv[1:]:\n"
        "    buf = io.StringIO()\n"
        "    with contextlib.redirect_stdout(buf):\n"
        "        try:\n"
        "            runpy.run_path(path, run_name='__main__'); status = 'ok'\n"
        "        except BaseException as exc:\n"
        "            status = type(exc).__name__\n"
        "    out[path] = (status, buf.getvalue())\n"
        "print(json.dumps(out))\n"
    )
    paths = [rel(name) for name in SCRIPTS]
    done = subprocess.run([sys.executable, "-c", driver, *paths], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={"CUDA_VISIBLE_DEVICES": "", **dict(__import__("os").environ)})
    assert done.returncode == 0, done.stderr
    return {Path(k).stem: tuple(v) for k, v in json.loads(done.stdout.splitlines()[-1]).items()}


def test_clean_loop_passes_on_mps_and_computes_what_the_cpu_computes(plain_runs):
    result = run_verify("--simulate", rel("clean_loop"))
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    # The script's own output is passed through, and it saw the mps device.
    script_lines = [line for line in lines if line.startswith("device=")]
    assert script_lines and script_lines[0].startswith("device=mps ")
    report_lines = [line for line in lines if not line.startswith("device=")]
    assert report_lines[0].startswith("PASS: fixtures/verify/clean_loop.py on mps (simulated)")
    assert not any(line.startswith(("CPU fallbacks", "errors", "hot host syncs")) for line in report_lines)
    assert any(line.startswith("note: simulated mps:") for line in report_lines)
    # Same numbers as the plain CPU run: the emulated device computes on the CPU.
    status, cpu_out = plain_runs["clean_loop"]
    assert status == "ok"
    assert cpu_out.strip().replace("device=cpu", "device=mps") == script_lines[0]


def test_op_without_mps_kernel_in_a_loop_is_a_fallback_with_count_and_line(plain_runs):
    report, result = json_report("missing_kernel_loop")
    assert result.exit_code == 1 and report["verdict"] == "fail"
    row = row_of("missing_kernel_loop", "pdist(features)")
    assert report["fallbacks"] == [
        {"op": "aten::_pdist_forward", "count": 4, "location": {"filename": rel("missing_kernel_loop"), "row": row},
         "without_fallback": "NotImplementedError"}
    ]
    assert report["errors"] == []
    assert plain_runs["missing_kernel_loop"][0] == "ok"
    assert list(report) == ["script", "device", "simulated", "torch_version", "verdict", "reasons",
                            "script_exit_code", "duration_s", "ops", "ops_on_device", "fallback_setting", "fallbacks",
                            "syncs", "errors", "warnings", "set_after_import", "known_wrong", "memory", "static"]
    assert report["device"] == "mps" and report["simulated"] is True and report["script_exit_code"] == 0
    assert report["known_wrong"] == [] and report["memory"]["measured"] is False
    assert report["reasons"] == ["CPU fallbacks"] and 0 < report["ops_on_device"] <= report["ops"]
    assert report["fallback_setting"] == {"enabled": True, "value": "1", "row": None,
                                          "source": "mpslint verify (its default; --no-fallback leaves the variable "
                                                    "unset)"}
    # The default turns the fallback on: the report says what happens without it, and where.
    assert f"NotImplementedError at {rel('missing_kernel_loop')}:{row}" in result.stderr


def test_float64_numpy_to_device_fails_at_that_line(plain_runs):
    report, result = json_report("float64_numpy")
    assert result.exit_code == 1 and report["verdict"] == "fail"
    row = row_of("float64_numpy", "torch.from_numpy(features).to(device)")
    assert report["errors"] == [{"type": "TypeError", "message": messages.FLOAT64,
                                 "location": {"filename": rel("float64_numpy"), "row": row}}]
    assert report["script_exit_code"] == 1
    assert {"code": "MPS303", "row": row, "status": "confirmed"} in report["static"]
    # The script's own output before the failure is passed through, and on the CPU it runs to the end.
    assert "loaded (3, 4)" in result.stderr
    status, cpu_out = plain_runs["float64_numpy"]
    assert status == "ok" and "loaded (3, 4)" in cpu_out and "total=" in cpu_out


def test_item_every_step_is_a_hot_sync_with_the_step_count(plain_runs):
    report, result = json_report("item_per_step")
    assert result.exit_code == 1 and report["verdict"] == "fail"
    row = row_of("item_per_step", "history.append(loss.item())")
    assert {"kind": "item", "count": 6, "hot": True,
            "location": {"filename": rel("item_per_step"), "row": row}} in report["syncs"]
    # The final .item() after the loop is a sync too, but not a hot one.
    final = row_of("item_per_step", "print(f\"steps=")
    assert [s["hot"] for s in report["syncs"] if s["location"]["row"] == final] in ([], [False])
    assert {"code": "MPS201", "row": row, "status": "confirmed"} in report["static"]
    status, cpu_out = plain_runs["item_per_step"]
    assert status == "ok" and cpu_out.startswith("steps=6 ")


def test_cpu_batch_into_model_on_mps_fails_at_the_forward_call(plain_runs):
    report, result = json_report("cpu_batch")
    assert result.exit_code == 1
    row = row_of("cpu_batch", "outputs = model(batch)")
    (error,) = report["errors"]
    assert error["type"] == "RuntimeError" and error["location"]["row"] == row
    assert messages.error_kind(error["type"], error["message"]) == "device-mismatch"
    assert error["message"] == messages.LINEAR_INPUT  # nn.Linear's MPS kernel checks its input first
    assert plain_runs["cpu_batch"][0] == "ok"
    # The traceback the user sees is the script's, not the verifier's.
    assert 'File "fixtures/verify/cpu_batch.py", line %d' % row in result.stderr
    assert "mpslint/verify" not in result.stderr


def test_max_steps_bounds_dataloaders_and_synchronize_every_step_is_hot(plain_runs):
    report, result = json_report("bounded_loop", "--max-steps", "2")
    assert "batches=[2, 2, 2] ticks=7" in result.stderr
    assert plain_runs["bounded_loop"] == ("ok", "batches=[50, 50, 50] ticks=7\n")
    row = row_of("bounded_loop", "torch.mps.synchronize()")
    assert {"kind": "synchronize", "count": 6, "hot": True,
            "location": {"filename": rel("bounded_loop"), "row": row}} in report["syncs"]
    assert report["verdict"] == "fail" and result.exit_code == 1


def test_fixed_cuda_training_script_passes(tmp_path):
    """Fix, then prove: `mpslint --fix` on a CUDA training script, then verify the result on mps."""
    from mpslint.config import Settings
    from mpslint.fixer import fix_text

    source = (FIXTURES / "cuda_train.py").read_text()
    # As this repository's own configuration does: the newest torch (with no floor, fixes assume torch 2.0
    # and keep torch.cuda.synchronize() for CUDA in a per-device branch; fixtures/cuda/half_migrated.py runs that way).
    outcome = fix_text(source, "cuda_train.py", Settings(torch_version=(2, 13)))
    fixed = getattr(outcome, "text", outcome)
    assert fixed != source and ".cuda" not in fixed.replace("torch.cuda.is_available", "")
    script = tmp_path / "train_fixed.py"
    script.write_text(fixed)
    result = cli_runner().invoke(verify, ["--simulate", "--max-steps", "5", "--output-format", "json", str(script)],
                                catch_exceptions=False)
    report = json.loads(result.stdout)
    assert report["verdict"] == "pass", (report, result.stderr)
    assert result.exit_code == 0


def test_golden_fixed_cuda_fixture_passes_with_max_steps():
    """The MPS1xx fixer's golden output for a CUDA AMP training script runs clean on mps."""
    result = run_verify("--simulate", "--max-steps", "20", "--output-format", "json",
                        "fixtures/cuda/train_cuda.fixed.py", "--", "--steps", "8")
    report = json.loads(result.stdout)
    assert report["verdict"] == "pass", (report, result.stderr)
    assert report["script_exit_code"] == 0 and result.exit_code == 0
    assert "final loss" in result.stderr  # the script ran to its end, with its own arguments


def test_usage_errors_exit_2(tmp_path):
    result = cli_runner().invoke(verify, [str(tmp_path / "missing.py")])
    assert result.exit_code == 2


def test_without_mps_and_without_simulate_it_suggests_simulate(monkeypatch):
    from mpslint.verify import launcher

    monkeypatch.setattr(launcher, "launch", lambda options, **kw: launcher.Run({"status": "no-device"}, 0, False, 0.1))
    result = cli_runner().invoke(verify, [rel("clean_loop")])
    assert result.exit_code == 2
    assert "mpslint verify --simulate fixtures/verify/clean_loop.py" in result.stderr


def test_a_verifier_crash_exits_2(monkeypatch):
    from mpslint.verify import launcher

    raw = {"status": "verifier-error", "message": "Traceback ...\nImportError: boom"}
    monkeypatch.setattr(launcher, "launch", lambda options, **kw: launcher.Run(raw, 2, False, 0.1))
    result = cli_runner().invoke(verify, ["--simulate", rel("clean_loop")])
    assert result.exit_code == 2 and "ImportError: boom" in result.stderr


# -- issue cases: each with PyTorch 2.13's exact message and the script's line ------------------

SHA = "cf30153c4c131c8164ee7798e5022d810682e2cb"  # torch 2.13.0's commit, printed by the missing-kernel error


def not_implemented(op: str) -> str:
    return (f"The operator '{op}' is not currently implemented for the MPS device. If you want this op to be "
            "considered for addition please comment on https://github.com/pytorch/pytorch/issues/141287 and mention "
            f"use-case, that resulted in missing op as well as commit hash {SHA}. As a temporary fix, you can set the "
            "environment variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: "
            "this will be slower than running natively on MPS.")


needs_2_13 = pytest.mark.skipif(not __import__("torch").__version__.startswith("2.13."),
                                reason="the exact texts are torch 2.13's")

KERNEL_LIMITS = [
    ("int-linear", "RuntimeError", "MPS device does not support linear for non-float inputs", "F.linear("),
    ("adaptive-pool", "NotImplementedError",
     "Adaptive pool MPS: input sizes must be divisible by output sizes. Non-divisible input sizes are not implemented "
     "on MPS device yet. For now, you can manually transfer tensor to cpu in this case. Please refer to "
     "[this issue](https://github.com/pytorch/pytorch/issues/96056)", "F.adaptive_avg_pool2d("),
    ("wide-conv", "NotImplementedError", "Output channels > 65536 not supported at the MPS device. ", "F.conv1d("),
    ("half-conv-transpose-3d", "RuntimeError", "ConvTranspose 3D with BF16 or FP16 types is not supported on MPS",
     "F.conv_transpose3d("),
    ("complex128", "TypeError",
     "Trying to convert ComplexDouble to the MPS backend but it does not have support for that dtype.",
     "torch.zeros(3, dtype=torch.complex128).to(device)"),
]


@needs_2_13
@pytest.mark.parametrize("case, kind, message, marker", KERNEL_LIMITS, ids=[c[0] for c in KERNEL_LIMITS])
def test_restrictions_inside_existing_kernels_raise_pytorchs_error_at_the_line(case, kind, message, marker):
    report, result = json_report("kernel_limits", script_args=(case,))
    assert report["errors"] == [{"type": kind, "message": message,
                                 "location": {"filename": rel("kernel_limits"), "row": row_of("kernel_limits", marker)}}]
    assert report["verdict"] == "fail" and result.exit_code == 1 and report["script_exit_code"] == 1
    assert "ran" not in result.stderr.splitlines()  # the script stopped there, as on a Mac


@needs_2_13
def test_ctc_loss_with_cpu_lengths_reaches_the_missing_ctc_kernel():
    """ctc_loss moves the lengths (and targets) itself: the outcome is the missing aten::_ctc_loss kernel."""
    row = row_of("ctc_loss", "nn.CTCLoss()(")
    report, result = json_report("ctc_loss", "--no-fallback")
    assert report["errors"] == [{"type": "NotImplementedError", "message": not_implemented("aten::_ctc_loss"),
                                 "location": {"filename": rel("ctc_loss"), "row": row}}]
    report, result = json_report("ctc_loss")  # the fallback on: forward and backward run on the CPU
    assert report["errors"] == []
    assert [(f["op"], f["location"]["row"]) for f in report["fallbacks"]] == [
        ("aten::_ctc_loss", row), ("aten::_ctc_loss_backward", row_of("ctc_loss", "loss.backward()"))]
    assert "loss=" in result.stderr and "Placeholder" not in result.stderr


def test_fallback_switch_set_before_the_scripts_torch_import_is_honoured():
    row = row_of("fallback_env_before_import", 'os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"')
    report, result = json_report("fallback_env_before_import", "--no-fallback")
    assert report["errors"] == [] and report["script_exit_code"] == 0
    assert report["fallback_setting"] == {"enabled": True, "value": "1", "source": "script", "row": row}
    assert [f["op"] for f in report["fallbacks"]] == ["aten::_pdist_forward"]
    assert f"PYTORCH_ENABLE_MPS_FALLBACK=1 when torch was imported (from {rel('fallback_env_before_import')}:{row})" \
        in result.stderr
    assert "without PYTORCH_ENABLE_MPS_FALLBACK=1" not in result.stderr  # the script sets it itself
    # Set in time: the op fell back, and nothing ties the run to MPS505.
    assert report["set_after_import"] == []
    assert "MPS505" not in {s["code"] for s in report["static"]}


@needs_2_13
def test_fallback_switch_set_after_the_import_is_confirmed_at_runtime_as_mps505_at_its_line():
    """aten::_pdist_forward has no MPS kernel in torch 2.13: with the switch off when torch loaded, it raises although
    the script set the switch, later, on line 7."""
    report, result = json_report("fallback_env_after_import", "--no-fallback")
    assert report["fallback_setting"]["enabled"] is False
    pdist = {"filename": rel("fallback_env_after_import"), "row": row_of("fallback_env_after_import", "pdist(features)")}
    assert [(e["type"], e["location"]) for e in report["errors"]] == [("NotImplementedError", pdist)]
    row = row_of("fallback_env_after_import", 'os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"')
    assert report["set_after_import"] == [{
        "variable": "PYTORCH_ENABLE_MPS_FALLBACK", "value": "1",
        "location": {"filename": rel("fallback_env_after_import"), "row": row}, "rule": "MPS505",
        "url": "https://github.com/mpslint/mpslint/blob/main/rules/MPS505.md", "status": "confirmed", "reason": None,
        "raised": [{"op": "aten::_pdist_forward", "count": 1, "location": pdist}]}]
    assert {"code": "MPS505", "row": row, "status": "confirmed"} in report["static"]
    assert report["verdict"] == "fail" and report["reasons"] == ["errors"] and result.exit_code == 1


def test_fallback_switch_set_late_but_never_needed_is_listed_unconfirmed():
    """Set after the import in a helper, with no op lacking a kernel: the line is named, the finding not confirmed."""
    report, result = json_report("fallback_env_set_late_unused", "--no-fallback")
    row = row_of("fallback_env_set_late_unused", "os.environ.setdefault(")
    [late] = report["set_after_import"]
    assert (late["location"], late["status"], late["reason"], late["raised"]) == (
        {"filename": rel("fallback_env_set_late_unused"), "row": row}, "unconfirmed", "no-missing-kernel", [])
    assert report["static"] == [{"code": "MPS505", "row": row, "status": "not-observed"}]
    assert report["verdict"] == "pass" and report["errors"] == [] and result.exit_code == 0


def test_a_script_that_ran_nothing_on_mps_is_not_a_pass():
    report, result = json_report("cuda_guarded")
    assert report["verdict"] == "fail" and result.exit_code == 1
    assert report["ops"] > 0 and report["ops_on_device"] == 0 and report["device"] is None
    assert report["errors"] == [] and report["script_exit_code"] == 0
    (reason,) = report["reasons"]
    assert reason.startswith("nothing ran on mps") and "torch.cuda.is_available()" in reason
    text = run_verify("--simulate", rel("cuda_guarded")).stdout
    assert "0 of " in text.splitlines()[1] and "fail: nothing ran on mps" in text
    report, _ = json_report("no_torch")
    assert report["verdict"] == "fail" and report["reasons"] == ["the script never imported torch, so nothing ran on mps"]


def test_events_are_attributed_to_the_innermost_line_in_the_users_own_files():
    result = run_verify("--simulate", "--output-format", "json", "fixtures/verify/package_loop/train.py")
    report = json.loads(result.stdout)
    module = "fixtures/verify/package_loop/loops.py"
    lines = (ROOT / module).read_text().splitlines()
    item = next(i for i, line in enumerate(lines, 1) if "loss.item()" in line)
    pdist = next(i for i, line in enumerate(lines, 1) if "pdist(" in line)
    assert {"kind": "item", "count": 4, "hot": True, "location": {"filename": module, "row": item}} in report["syncs"]
    assert [(f["op"], f["location"]) for f in report["fallbacks"]] == [
        ("aten::_pdist_forward", {"filename": module, "row": pdist})]
    # The simulator's warning points at the user's line, never at mpslint's own code.
    assert f"loops.py:{pdist}: UserWarning: The operator 'aten::_pdist_forward'" in result.stderr
    assert "mpslint/verify" not in result.stderr
