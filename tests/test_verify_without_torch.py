"""The verifier's launcher, child and report on any Python, torch or not: a script that never imports torch."""

from __future__ import annotations

import textwrap

from mpslint.verify import launcher, report


def test_a_script_that_never_imports_torch_runs_and_does_not_pass(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(textwrap.dedent("""
        import os
        os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "0"
        print(sum(range(10)))
        raise SystemExit(3)
    """))
    options = launcher.Options(str(script), simulate=True)
    run = launcher.launch(options, capture=True)
    assert run.raw is not None and run.raw["status"] == "ran" and run.raw["torch_imported"] is False
    assert "45" in run.output
    verdict = report.build(options, run)
    r = verdict.report
    assert r["script_exit_code"] == 3 and r["verdict"] == "fail" and verdict.exit_code == 1
    assert r["errors"] == [{"type": "SystemExit", "message": "the script exited with status 3",
                            "location": {"filename": str(script), "row": 5}}]
    assert (r["ops"], r["ops_on_device"], r["device"], r["fallback_setting"]) == (0, 0, None, None)
    text = report.render_text(verdict)
    assert text.splitlines()[0].startswith(f"FAIL: {script} on mps (simulated), torch (not imported)")
    assert "the script exited with status 3" in text
