"""`mpslint report --verify-report`: verify reports shown next to the static findings they confirm."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clitools import enter, run
from mpslint.report import runtime

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = "code/missing_kernel_loop.py"


def verify_report(script=SCRIPT, *, renamed=False, **extra):
    """A report in the shape `mpslint verify --output-format json` writes (mpslint/verify/report.py)."""
    data = {
        "script": script,
        "device": "mps",
        "simulated": True,
        "torch_version": "2.13.0+cpu",
        "verdict": "fail",
        "duration_s": 7.1,
        "fallbacks": [{"op": "aten::_pdist_forward", "count": 4, "location": {"filename": script, "row": 24}}],
        "syncs": [{"kind": "item", "count": 1, "hot": False, "location": {"filename": script, "row": 26}}],
        "errors": [],
        "static": [{"code": "MPS501", "row": 24, "status": "confirmed"}],
    }
    data["script_exit_code" if renamed else "exit_code"] = 0
    data.update(extra)
    return data


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "code").mkdir()
    shutil.copy(ROOT / "fixtures" / "verify" / "missing_kernel_loop.py", tmp_path / SCRIPT)
    shutil.copy(ROOT / "fixtures" / "verify" / "float64_numpy.py", tmp_path / "code" / "float64_numpy.py")
    return enter(tmp_path, monkeypatch)


def write(path: Path, data) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path.name)


def test_a_verify_report_confirms_the_static_finding(project):
    name = write(project / "verify.json", verify_report())
    result = run("report", "--output-format", "json", "--verify-report", name, "code")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [run_] = data["runtime"]
    assert run_["verdict"] == "fail" and run_["script_exit_code"] == 0
    assert run_["fallbacks"][0]["op"] == "aten::_pdist_forward"
    row = next(f for f in data["files"] if f["path"] == SCRIPT)
    assert run_["file_anchor"] == row["anchor"]
    finding = next(d for d in row["findings"] if d["code"] == "MPS501")
    assert finding["runtime"] == "confirmed" and row["confirmed"] == 1
    other = next(f for f in data["files"] if f["path"] != SCRIPT)
    assert all(d["runtime"] is None for d in other["findings"])
    assert "`mpslint verify` failed on 1 of 1 run." in data["verdict_text"]

    html = run("report", "--output-format", "html", "--verify-report", name, "code").stdout
    assert "runtime: confirmed" in html and "aten::_pdist_forward" in html
    assert f'<a href="#{row["anchor"]}">{SCRIPT.replace("/", "/<wbr>")}</a>' in html  # wraps only after a slash
    markdown = run("report", "--verify-report", name, "code").stdout
    assert "confirms MPS501 line 24" in markdown and "(runtime: confirmed)" in markdown


def test_new_verify_fields_are_read_too(project):
    name = write(project / "verify.json", verify_report(renamed=True, ops_on_device=1234, verdict="pass"))
    data = json.loads(run("report", "--output-format", "json", "--verify-report", name, "code").stdout)
    assert data["runtime"][0]["script_exit_code"] == 0 and data["runtime"][0]["ops_on_device"] == 1234
    assert "1234 ops on the device" in run("report", "--output-format", "html", "--verify-report", name, "code").stdout


def test_several_reports_and_a_list_in_one_file(project):
    first = write(project / "a.json", verify_report())
    both = write(project / "b.json", [verify_report("code/float64_numpy.py", verdict="pass", static=[]),
                                      verify_report()])
    data = json.loads(run("report", "--output-format", "json", "--verify-report", first, "--verify-report", both,
                          "code").stdout)
    assert [r["script"] for r in data["runtime"]] == [SCRIPT, "code/float64_numpy.py", SCRIPT]


@pytest.mark.parametrize(
    "content, needle",
    [("not json", "is not JSON"), (json.dumps({"verdict": "pass"}), "is not an `mpslint verify"),
     (json.dumps([1, 2]), "is not an `mpslint verify")],
)
def test_a_bad_verify_report_is_a_usage_error_before_checking(project, content, needle):
    (project / "bad.json").write_text(content, encoding="utf-8")
    result = run("report", "--verify-report", "bad.json", "code")
    assert result.exit_code == 2 and needle in result.stderr and result.stdout == ""


def test_a_missing_verify_report_is_a_usage_error(project):
    result = run("report", "--verify-report", "nope.json", "code")
    assert result.exit_code == 2 and "cannot read verify report nope.json" in result.stderr


def test_a_report_made_elsewhere_finds_its_script_by_path_suffix(tmp_path):
    displays = ["code/train.py", "other/train.py", "code/missing_kernel_loop.py"]
    assert runtime._match("/elsewhere/checkout/code/train.py", str(tmp_path / "v.json"), displays) == "code/train.py"
    assert runtime._match("missing_kernel_loop.py", str(tmp_path / "v.json"), displays) == "code/missing_kernel_loop.py"
    assert runtime._match("unrelated.py", str(tmp_path / "v.json"), displays) is None


def test_a_script_path_relative_to_the_report_file(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text("x = 1\n", encoding="utf-8")
    # The report was written inside proj/ and names the script relative to it.
    assert runtime._match("./train.py", str(tmp_path / "proj" / "verify.json"), ["proj/train.py"]) == "proj/train.py"


MEMORY = {
    "measured": True, "clock": "optimizer.step", "steps_sampled": 30,
    "samples": [{"step": 1, "driver_bytes": 100 << 20, "current_bytes": 50 << 20},
                {"step": 30, "driver_bytes": 400 << 20, "current_bytes": 350 << 20}],
    "peak_driver_bytes": 400 << 20, "peak_current_bytes": 350 << 20,
    "growth": {"judged": True, "growing": ["current"], "from_step": 14, "to_step": 30,
               "per_step_bytes": {"current": 10 << 20, "driver": 0}},
}
KNOWN_WRONG = [{"id": "x", "count": 3, "location": {"filename": SCRIPT, "row": 24}, "title": "index_add on int64 "
                "drops updates", "issue": "https://github.com/pytorch/pytorch/issues/1", "releases": "2.13"}]


def test_memory_growth_and_known_silently_wrong_results_are_shown(project):
    """What verify's own output says (mpslint/verify/report.py) reaches every format of mpslint report."""
    name = write(project / "verify.json", verify_report(simulated=False, memory=MEMORY, known_wrong=KNOWN_WRONG))
    data = json.loads(run("report", "--output-format", "json", "--verify-report", name, "code").stdout)
    assert data["runtime"][0]["memory"]["growth"]["growing"] == ["current"]
    assert data["runtime"][0]["known_wrong"][0]["count"] == 3
    for fmt in ("markdown", "html"):
        out = run("report", "--output-format", fmt, "--verify-report", name, "code").stdout.replace("\\_", "_")
        assert "memory grows every step: current_allocated_memory (live tensors) rose over steps 14-30, " \
               "about 10.0 MiB a step" in out, fmt
        assert "known silently wrong result" in out and "index_add on int64 drops updates" in out, fmt
        assert "Metal driver 100.0 MiB at step 1, 400.0 MiB at step 30" in out, fmt


def test_trap_no_memory_line_under_simulate_and_none_without_growth(project):
    name = write(project / "verify.json", verify_report(memory={"measured": False, "reason": "simulated mps"}))
    out = run("report", "--verify-report", name, "code").stdout
    assert "memory" not in out.lower().split("### runtime")[1].split("###")[0]
    steady = dict(MEMORY, growth={"judged": True, "growing": [], "from_step": 14, "to_step": 30,
                                  "per_step_bytes": {"current": 0, "driver": 0}})
    name = write(project / "verify2.json", verify_report(simulated=False, memory=steady))
    out = run("report", "--verify-report", name, "code").stdout
    assert "memory per step" in out and "memory grows" not in out


@pytest.mark.parametrize("memory", [{"measured": False, "reason": "simulated mps"}, {"measured": True},
                                    {"measured": True, "samples": "x", "growth": {}}, None])
def test_memory_not_measured_or_malformed_shows_nothing(project, memory):
    name = write(project / "verify.json", verify_report(memory=memory, known_wrong=[{"issue": "javascript:x"}]))
    for output_format in ("markdown", "html", "json"):
        result = run("report", "--output-format", output_format, "--verify-report", name, "code")
        assert result.exit_code == 0, result.output
        assert "memory per step" not in result.stdout and 'href="javascript' not in result.stdout
