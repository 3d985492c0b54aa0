"""Issue 18's "Done means": what `--fix` calls fixed runs on MPS, checked on the simulated mps device.

Each fixture of fixtures/cuda/ named in RUNNABLE is a script whose CUDA code
was fixed wrongly or awkwardly before; its golden fix (`name.fixed.py`) is
checked by test_fixtures.py. Here the fixed scripts run, all in one
`mpslint verify --simulate` run (one torch import), and each must finish and
say its work ran on mps. Left-reported cases say why they were not fixed.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from clitools import cli_runner
from helpers import check

from mpslint.verify.command import verify

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cuda"
RUNNABLE = ("availability_flag", "args_no_cuda", "device_in_scope", "half_migrated", "device_helper")

DRIVER = textwrap.dedent(
    """
    import contextlib, io, runpy, sys

    for path in {paths!r}:
        buffer = io.StringIO()
        try:
            with contextlib.redirect_stdout(buffer):
                runpy.run_path(path, run_name="__main__")
            status = "ok"
        except BaseException as exc:  # the report names the script that failed
            status = f"{{type(exc).__name__}}: {{exc}}"
        lines = [line for line in buffer.getvalue().splitlines() if line.startswith("work ran on")]
        print(f"{{path}} | {{status}} | {{lines[-1] if lines else 'no work line'}}", file=sys.stderr)
    """
)


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fixed")
    paths = []
    for name in RUNNABLE:
        fixed = FIXTURES / f"{name}.fixed.py"
        target = directory / f"{name}.py"
        target.write_text(fixed.read_text(encoding="utf-8"), encoding="utf-8")
        paths.append(str(target))
    driver = directory / "driver.py"
    driver.write_text(DRIVER.format(paths=paths), encoding="utf-8")
    result = cli_runner().invoke(verify, ["--simulate", "--output-format", "json", str(driver)], catch_exceptions=False)
    report = json.loads(result.stdout)
    lines = {Path(line.split(" | ")[0]).stem: line.split(" | ")[1:] for line in result.stderr.splitlines() if " | " in line}
    return report, lines


@pytest.mark.parametrize("name", RUNNABLE)
def test_the_fixed_script_runs_its_work_on_mps(simulated_run, name):
    report, lines = simulated_run
    status, work = lines[name]
    assert status == "ok"
    assert work.split()[3:] and all(kind == "mps" for kind in work.split()[3:]), work


def test_nothing_failed_on_the_simulated_device(simulated_run):
    report, _ = simulated_run
    assert report["errors"] == []
    assert report["ops_on_device"] > 0  # the verifier's count of torch ops that ran on the device


def test_a_guard_that_also_needs_cuda_is_left_reported_with_the_reason():
    text = (FIXTURES / "guarded_sync.py").read_text(encoding="utf-8")
    [finding] = check(text, ["MPS101"], torch_version="2.4")
    assert finding.fix is None
    assert finding.message.endswith(
        "not fixed: a CUDA availability test decides whether it runs, and under it, "
        "`torch.cuda.synchronize()` (line 9) needs CUDA"
    )
