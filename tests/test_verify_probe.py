"""The real-Mac probe, driven without a Mac: CPU tensors stand for the device (``device="cpu"``), the kernel table of
the installed torch decides fallbacks per op, and warnings really come from C++."""

from __future__ import annotations

import inspect
import os
import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")

from mpslint.verify import child, launcher, messages, probe, report  # noqa: E402
from mpslint.verify.kernels import KernelOracle  # noqa: E402

REAL_FALLBACK = (
    "The operator 'aten::sgn.out' is not currently supported on the MPS backend and will fall back to run on the "
    "CPU. This may have performance implications. (Triggered internally at "
    "/Users/runner/work/pytorch/pytorch/pytorch/aten/src/ATen/mps/MPSFallback.mm:14.)"
)


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture(scope="module")
def oracle():
    return KernelOracle()


def probe_mode(recorder, oracle, **kw):
    return probe.ProbeMode(recorder, oracle=oracle, device="cpu", **kw)


def test_an_op_the_table_marks_as_falling_back_is_recorded_per_call_at_the_users_line(oracle):
    recorder = probe.Recorder(__file__)
    x = torch.randn(5, 3)
    with probe_mode(recorder, oracle):
        for _ in range(3):
            torch.nn.functional.pdist(x); line = _line()  # noqa: E702
        x + 1  # has a kernel
    assert [(e["kind"], e["key"], e["count"], e["row"]) for e in recorder.as_json()] == [
        ("fallback", "aten::_pdist_forward", 3, line)]
    assert recorder.ops_on_device == recorder.ops >= 4


def test_the_fallback_switch_off_means_no_fallback_but_the_explicit_ones(oracle):
    assert "embedding_renorm_" in oracle.table.explicit_cpu_fallbacks
    recorder = probe.Recorder(__file__)
    with probe_mode(recorder, oracle, fallback=False):
        torch.nn.functional.pdist(torch.randn(5, 3))  # raises NotImplementedError on a Mac: an error, not a fallback
        torch.embedding_renorm_(torch.randn(4, 3), torch.tensor([0, 2]), 1.0, 2.0); line = _line()  # noqa: E702
    assert [(e["key"], e["row"]) for e in recorder.as_json() if e["kind"] == "fallback"] == [
        ("aten::embedding_renorm_", line)]


def test_composite_kernels_are_followed_to_the_op_that_falls_back(oracle):
    recorder = probe.Recorder(__file__)
    with probe_mode(recorder, oracle):
        torch.logspace(0, 1, 5, device="cpu"); line = _line()  # noqa: E702  (CompositeExplicit -> logspace.out)
    assert ("aten::logspace.out", line) in [(e["key"], e["row"]) for e in recorder.as_json()]


def test_a_cpp_warning_surfaces_after_the_op_once_at_the_users_line_and_the_hook_sees_fallback_texts(oracle):
    """No per-op catch_warnings any more: PyTorch's C++ warnings reach the script's own filters as without mpslint."""
    recorder = probe.Recorder(__file__)
    x = torch.ones(3)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")  # once per location, as Python shows warnings by default
        undo = probe.install_warning_hook(recorder)
        try:
            with probe_mode(recorder, oracle):
                for _ in range(3):
                    torch.add(x, x, out=torch.empty(2)); resize = _line()  # noqa: E702  C++'s Resize warning
            warnings.warn(REAL_FALLBACK, UserWarning); fallback = _line()  # noqa: E702  as it surfaces on a Mac
        finally:
            undo()
    assert [(str(w.message).split(" ")[0], w.filename, w.lineno) for w in shown] == [
        ("An", __file__, resize), ("The", __file__, fallback)]
    assert "resized" in str(shown[0].message) and "Resize.cpp" in str(shown[0].message)  # from C++
    # The table had not decided aten::sgn.out here: recorded from the warning, at the line where it surfaced.
    assert recorder.warned_fallbacks == {"aten::sgn.out": 1}
    assert [(e["key"], e["row"]) for e in recorder.as_json() if e["kind"] == "fallback"] == [
        ("aten::sgn.out", fallback)]


def test_host_syncs_the_dispatcher_never_shows(oracle):
    recorder = probe.Recorder(__file__)
    undo = probe.install_print_hook(recorder, device="cpu")
    try:
        x = torch.randn(4)
        with probe_mode(recorder, oracle):
            str(x); printed = _line()  # noqa: E702
            torch.equal(x, x); equal = _line()  # noqa: E702
            torch.allclose(x, x); close = _line()  # noqa: E702
            torch.bincount(torch.tensor([1, 2, 2])); counted = _line()  # noqa: E702
            torch.bincount(torch.tensor([1, 2, 2]), minlength=4)  # the size is known
    finally:
        undo()
    found = {(e["key"], e["row"]) for e in recorder.as_json() if e["kind"] == "sync"}
    assert {("to_host", printed), ("item", equal), ("item", close), ("data_dependent", counted)} <= found
    assert not any(row not in (printed, equal, close, counted) for _, row in found)


def test_max_ops_stops_the_script_with_the_budget_not_an_error(oracle):
    recorder = probe.Recorder(__file__)
    with pytest.raises(probe.StepBudget):
        with probe_mode(recorder, oracle, max_ops=5):
            x = torch.zeros(2)
            while True:
                x = x + 1
    assert recorder.ops == 6


@pytest.fixture(scope="module")
def missing_kernel_ops():
    """Ops whose kernel raises as MPSFallback.mm's error kernel does (with the switch off), or another way."""
    lib = torch.library.Library("mpslint_probe", "DEF")
    lib.define("missing(Tensor x) -> Tensor")
    lib.define("limited(Tensor x) -> Tensor")

    def missing(x):
        raise NotImplementedError(messages.not_implemented("aten::_pdist_forward", (2, 13), "cf30153c"))

    def limited(x):  # a restriction inside an existing kernel: the switch does not help
        raise NotImplementedError(messages.CONV_OUTPUT_SIZE)

    lib.impl("missing", missing, "CPU")
    lib.impl("limited", limited, "CPU")
    yield torch.ops.mpslint_probe
    del lib


def test_a_missing_kernel_error_is_recorded_as_raised_with_the_fallback_switchs_write_in_force(oracle,
                                                                                            missing_kernel_ops):
    """On a Mac the error comes from the op the probe dispatches; it is seen as it is raised, so a script that
    catches it (and runs the op on the CPU itself) is seen too."""
    recorder = probe.Recorder(__file__)
    recorder.fallback_write = lambda: 4  # the child's EnvWatch: the fifth write set the value in os.environ now
    x = torch.randn(3)
    rows = set()
    with probe_mode(recorder, oracle, fallback=False):
        for _ in range(2):
            try:
                missing_kernel_ops.missing(x)
            except NotImplementedError as exc:
                rows.add(exc.__traceback__.tb_lineno)
        with pytest.raises(NotImplementedError, match="Output channels"):
            missing_kernel_ops.limited(x)
    (row,) = rows
    assert recorder.raised_json() == [{"op": "aten::_pdist_forward", "filename": os.path.abspath(__file__),
                                       "row": row, "count": 2, "fallback_write": 4}]


# -- the child: runs on the real-device path here only up to "no device"; its report survives crashes -------------

simulates = pytest.mark.skipif(not hasattr(torch.utils, "swap_tensors"), reason="--simulate needs torch 2.3")

def run_child(tmp_path, source, options=None, env=None):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    opts = dict({"simulate": True}, **(options or {}))
    run = launcher.launch(launcher.Options(str(script), simulate=True, max_steps=opts.get("max_steps"),
                                           max_ops=opts.get("max_ops"), timeout=opts.get("timeout")), capture=True)
    return run, script


@simulates
def test_a_crash_keeps_the_report_written_so_far_and_says_where(tmp_path):
    run, script = run_child(tmp_path, """
        import os, signal, time
        import torch
        from torch import nn
        model = nn.Linear(3, 1).to("mps")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            optimizer.zero_grad()
            loss = model(torch.randn(4, 3, device="mps")).sum()
            loss.backward()
            optimizer.step()
            print(loss.item())
            time.sleep(1.1)  # the report is rewritten at most once a second, at a step
        import ctypes
        ctypes.string_at(0)  # a segmentation fault, as a Metal assertion aborts the process
    """)
    assert run.raw is not None and run.raw["status"] == "running"
    verdict = report.build(launcher.Options(str(script), simulate=True), run)
    (error,) = verdict.report["errors"]
    assert error["type"] == "Crash" and f"(last at {script}:15)" in error["message"]
    assert error["location"] == {"filename": str(script), "row": 15}
    assert verdict.report["syncs"] and verdict.report["syncs"][0]["count"] >= 2  # recorded before the crash


@simulates
def test_torch_compile_is_said_to_run_eagerly_and_max_steps_bounds_a_plain_loop(tmp_path):
    run, script = run_child(tmp_path, """
        import torch
        model = torch.nn.Linear(3, 1).to("mps")
        step = torch.compile(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(1000):
            optimizer.zero_grad()
            step(torch.randn(4, 3, device="mps")).sum().backward()
            optimizer.step()
        print("never")
    """, options={"max_steps": 3})
    verdict = report.build(launcher.Options(str(script), simulate=True, max_steps=3), run)
    assert verdict.report["errors"] == [] and verdict.report["verdict"] == "pass"
    assert run.raw["clocks"]["optimizer"] == 3 and "never" not in run.output
    notes = "\n".join(verdict.notes)
    assert f"{script}:4: torch.compile runs eagerly under mpslint verify" in notes
    assert "stopped after --max-steps 3 as asked" in notes


@pytest.mark.skipif(hasattr(torch.utils, "swap_tensors"), reason="this torch has what --simulate needs")
def test_simulate_on_a_torch_older_than_2_3_is_a_clear_usage_error(tmp_path):
    from clitools import cli_runner

    from mpslint.verify.command import verify

    script = tmp_path / "s.py"
    script.write_text("import torch\nprint('must not run')\n")
    result = cli_runner().invoke(verify, ["--simulate", str(script)])
    assert result.exit_code == 2
    assert f"mpslint verify --simulate needs torch 2.3 or newer (torch.utils.swap_tensors); this is torch " \
           f"{torch.__version__}" in result.stderr
    assert "must not run" not in result.stdout


def test_the_oldest_torch_each_path_supports():
    class Fake:
        def __init__(self, version, swap):
            self.__version__ = version
            self.utils = type("utils", (), {"swap_tensors": None} if swap else {})()

    assert "needs torch 2.1 or newer" in child._unsupported(Fake("2.0.1", False), simulate=False)
    assert child._unsupported(Fake("2.1.2+cu121", False), simulate=False) is None
    assert "--simulate needs torch 2.3 or newer" in child._unsupported(Fake("2.1.2", False), simulate=True)
    assert child._unsupported(Fake("2.13.0+cpu", True), simulate=True) is None


@simulates
def test_a_script_stuck_where_python_cannot_stop_it_keeps_its_report_and_says_where(tmp_path):
    """SIGTERM ignored (as in a wait inside C++): the launcher asks faulthandler where it is, then kills it."""
    script = tmp_path / "stuck.py"
    script.write_text(textwrap.dedent("""
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        import torch
        x = torch.ones(3, device="mps")
        print(x.sum().item())
        while True:
            time.sleep(0.05)
    """))
    options = launcher.Options(str(script), simulate=True, timeout=30)
    run = launcher.launch(options, capture=True)
    assert run.timed_out and run.raw is not None and run.raw["status"] == "running"
    verdict = report.build(options, run)
    (error,) = verdict.report["errors"]
    assert error["type"] == "Timeout" and error["location"] == {"filename": str(script), "row": 8}
    assert error["message"] == (f"the script did not finish within 30 s (last at {script}:8); "
                                "the report covers what ran until then")
    assert verdict.report["ops_on_device"] > 0


def test_the_autocast_disabled_warning_is_recorded_at_the_line_that_built_the_autocast():
    """torch/amp/autocast_mode.py warns with stacklevel=2: the finding is the user's `torch.autocast(...)` line."""
    recorder = probe.Recorder(__file__)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        undo = probe.install_warning_hook(recorder)
        try:
            torch.autocast("mps", dtype=torch.float32); line = _line()  # noqa: E702
            torch.autocast("cpu", dtype=torch.bfloat16)  # a dtype its device takes: no warning
        finally:
            undo()
    assert [(e["kind"], e["key"], e["row"]) for e in recorder.as_json()] == [("warning", "autocast-disabled", line)]


# -- ops that run on the CPU by design: MPSFallback.mm registers them on the MPS key (issue 27 item 1) -------------

FALLBACK_FILE = "/Users/runner/work/pytorch/pytorch/pytorch/aten/src/ATen/mps/MPSFallback.mm"


@pytest.fixture
def registered_by_design():
    """Stand-in registrations on the MPS key of this CPU build, made from a file the dispatcher records as
    MPSFallback.mm (``torch._C._dispatch_dump`` names the registering file), as ``m.impl(op, mps_fallback)`` does on a
    Mac: ``im2col`` (registered so on 2.1-2.3; the table says it has an MPS kernel). ``upsample_nearest3d.vec`` stays
    unregistered: the table lists it, the installed torch does not register it."""
    namespace = {}
    source = textwrap.dedent("""
        import torch
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("im2col", lambda *args: None, "MPS")
    """)
    exec(compile(source, FALLBACK_FILE, "exec"), namespace)
    yield
    del namespace["lib"]


def test_the_dispatcher_says_which_ops_run_on_the_cpu_by_design(registered_by_design):
    from mpslint.verify import kernels
    aten = torch.ops.aten
    assert kernels.registered_as_cpu_fallback("aten::im2col")
    assert not kernels.registered_as_cpu_fallback("aten::add.Tensor")
    # A typed kernel in the same file is no fallback: _slow_conv2d_forward's device check, as a Mac's dispatcher
    # prints it (Python registers boxed kernels only, so this one is read from its text).
    typed = (f"MPS: registered at {FALLBACK_FILE}:92 :: (Tensor _0, Tensor _1, SymInt[2] _2, Tensor? _3, SymInt[2] _4, "
             "SymInt[2] _5) -> Tensor _0 [ boxed unboxed ]\n")
    assert kernels.parse_mps_registration(typed) == (FALLBACK_FILE, False)
    assert not kernels._is_cpu_fallback(kernels.parse_mps_registration(typed))
    oracle = KernelOracle(dispatcher_knows=True)
    assert oracle.table.has_mps_kernel("im2col")  # what the old order decided first
    assert oracle.decide(aten.im2col.default).kind == "explicit-fallback"
    # Listed by the hand-kept table, not registered by this torch: no false fallback on a Mac ...
    assert oracle.decide(aten.upsample_nearest3d.vec).kind != "explicit-fallback"
    assert oracle.by_design == {"aten::im2col"}
    # ... while a CPU build, whose dispatcher cannot say, keeps the table's list.
    cpu_build = KernelOracle(dispatcher_knows=False)
    assert cpu_build.decide(aten.linalg_svd.default).kind == "explicit-fallback" \
        or "linalg_svd" not in cpu_build.table.explicit_cpu_fallbacks


@pytest.mark.parametrize("action", ["ignore", "default", "error"])
def test_by_design_fallbacks_are_counted_every_call_whatever_the_warning_filter(registered_by_design, action):
    """PyTorch warns once per process (TORCH_WARN_ONCE), and a script may filter warnings; the probe counts calls."""
    recorder = probe.Recorder(__file__)
    oracle = KernelOracle(dispatcher_knows=True)
    image = torch.randn(1, 2, 4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter(action)
        undo = probe.install_warning_hook(recorder)
        try:
            with probe_mode(recorder, oracle, fallback=False):  # by design: no switch needed
                for _ in range(3):
                    torch.nn.functional.unfold(image, 2); line = _line()  # noqa: E702
        finally:
            undo()
    assert [(e["kind"], e["key"], e["count"], e["row"]) for e in recorder.as_json()] == [
        ("fallback", "aten::im2col", 3, line)]
    assert oracle.by_design == {"aten::im2col"}


@pytest.fixture
def svd_and_renorm_on_a_mac():
    """``linalg_svd`` and ``embedding_renorm_`` as MPSFallback.mm registers them on a Mac (``m.impl(op,
    mps_fallback)``), on the MPS key of this CPU build. ``linalg_svd`` is a composite: on a Mac its kernel on the MPS
    key stops the decomposition, so the probe sees ``aten::linalg_svd`` itself; here CPU tensors play the device's,
    so a kernel on the CPU key stops it the same way (and runs the op on the CPU, as mps_fallback does)."""
    namespace = {}
    source = textwrap.dedent("""
        import torch
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("linalg_svd", lambda *args, **kwargs: None, "MPS")
        lib.impl("embedding_renorm_", lambda *args, **kwargs: None, "MPS")
    """)
    exec(compile(source, FALLBACK_FILE, "exec"), namespace)
    cpu = torch.library.Library("aten", "IMPL")

    def svd_on_the_cpu(A, full_matrices=True, *, driver=None):
        return torch.ops.aten._linalg_svd(A, full_matrices, True, driver=driver)

    cpu.impl("linalg_svd", svd_on_the_cpu, "CPU")
    yield
    del cpu, namespace["lib"]


@pytest.mark.parametrize("action", ["ignore", "default", "always", "error"])
def test_linalg_svd_and_embedding_renorm_run_on_the_cpu_by_design_whatever_the_warning_filter(
        svd_and_renorm_on_a_mac, action):
    """Both have a kernel on the MPS key, so "has a kernel" alone would call them native: the dispatcher's record of
    who registered it decides first. Counted per call, with the fallback switch off, under any warning filter; a
    fallback warning that does surface is not counted twice."""
    recorder = probe.Recorder(__file__)
    oracle = KernelOracle(dispatcher_knows=True)
    weight = torch.randn(4, 3)
    shown: list = []
    with warnings.catch_warnings():
        warnings.simplefilter(action)
        # What the hook passes on lands here, not in pytest's warnings summary (catch_warnings restores it).
        warnings.showwarning = lambda message, *rest, **kw: shown.append(str(message))
        undo = probe.install_warning_hook(recorder)
        try:
            with probe_mode(recorder, oracle, fallback=False):
                for _ in range(3):
                    torch.linalg.svd(torch.randn(3, 3)); svd = _line()  # noqa: E702
                    torch.embedding_renorm_(weight, torch.tensor([0, 2]), 1.0, 2.0); renorm = _line()  # noqa: E702
            if action in ("default", "always"):  # as PyTorch's own warning would surface on a Mac, once
                warnings.warn(REAL_FALLBACK.replace("aten::sgn.out", "aten::linalg_svd"), UserWarning)
        finally:
            undo()
    assert len(shown) == (1 if action in ("default", "always") else 0)  # the hook passed it on, nothing else
    assert sorted((e["kind"], e["key"], e["count"], e["row"]) for e in recorder.as_json()) == [
        ("fallback", "aten::embedding_renorm_", 3, renorm), ("fallback", "aten::linalg_svd", 3, svd)]
    assert oracle.by_design == {"aten::linalg_svd", "aten::embedding_renorm_"}
    assert oracle.decide(torch.ops.aten.add.Tensor).kind == "native"  # a kernel of its own on the MPS key


def test_by_design_fallbacks_read_as_running_on_the_cpu_in_the_report():
    steps = {"optimizer": [1, 2, 3], "batches": [1, 2, 3], "forward": [1, 2, 3]}
    raw = {"status": "ran", "simulated": False, "torch_version": "2.13.0", "script_exit_code": 0, "duration_s": 1.0,
           "events": [{"kind": "fallback", "key": "aten::im2col", "row": 7, "count": 3, "by_design": 0,
                       "steps": steps}],
           "explicit_fallbacks": ["aten::im2col"], "errors": [], "lines": list(range(1, 10)),
           "clocks": {"optimizer": 3, "batches": 3, "forward": 3}, "notes": [], "torch_imported": True, "ops": 9,
           "ops_on_device": 9}
    verdict = report.build(launcher.Options("train.py"), launcher.Run(raw, 0, False, 1.0))
    assert verdict.report["fallbacks"] == [{"op": "aten::im2col", "count": 3, "location": {"filename": "train.py",
                                                                                         "row": 7},
                                            "without_fallback": "runs on the CPU"}]
    assert verdict.report["verdict"] == "fail" and "CPU fallbacks" in verdict.report["reasons"]


@simulates
def test_max_steps_counts_loop_steps_not_the_modules_a_dataset_calls(tmp_path):
    """A Dataset calling an nn.Module transform (every torchvision transform is one) is no step: before, --max-steps
    stopped inside the first batch fetch and reported a pass."""
    run, script = run_child(tmp_path, """
        import torch
        from torch import nn

        class Scale(nn.Module):  # a transform: no parameters
            def forward(self, x):
                return x * 2

        class Data(torch.utils.data.Dataset):
            def __init__(self):
                self.transform = Scale()
                self.encoder = nn.Linear(3, 3)  # a module with parameters, called inside the fetch
            def __len__(self):
                return 64
            def __getitem__(self, i):
                with torch.no_grad():
                    return self.encoder(self.transform(torch.randn(3)))

        model = nn.Linear(3, 1).to("mps")
        loss_fn = nn.MSELoss()
        seen = 0
        for batch in torch.utils.data.DataLoader(Data(), batch_size=4):
            out = model(batch.to("mps"))
            loss_fn(out, torch.zeros_like(out)).item()
            seen += 1
        print("batches", seen)
    """, options={"max_steps": 3})
    assert "batches 3" in run.output
    assert run.raw["clocks"]["batches"] == 3 and run.raw["clocks"]["forward"] == 3  # the model only


@simulates
def test_an_error_is_placed_at_the_innermost_line_in_the_users_own_files(tmp_path):
    (tmp_path / "net.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(3, 3)
            def forward(self, x):
                bias = torch.ones(3)  # made on the CPU inside the model
                return self.body(x) + bias
    """))
    run, script = run_child(tmp_path, """
        import torch
        from net import Net
        model = Net().to("mps")
        model(torch.randn(2, 3, device="mps"))
    """)
    verdict = report.build(launcher.Options(str(script), simulate=True), run)
    (error,) = verdict.report["errors"]
    assert error["type"] == "RuntimeError" and "same device" in error["message"]
    assert os.path.abspath(error["location"]["filename"]) == str(tmp_path / "net.py")
    assert error["location"]["row"] == 11  # not the driver's line 5, and not torch's frames below
    assert run.raw["errors"][0]["script_row"] == 5
