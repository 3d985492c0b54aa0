"""MPS505 at runtime: the writes of the fallback switch as they run (``envwatch``), and how the report ties a
missing-kernel NotImplementedError to the line that set the switch after torch was imported. No torch needed."""

from __future__ import annotations

import inspect
import os

import pytest

from mpslint.verify import envwatch, launcher, report

VARIABLE = "PYTORCH_ENABLE_MPS_FALLBACK"
NOT_IMPLEMENTED = ("The operator 'aten::_pdist_forward' is not currently implemented for the MPS device. If you want "
                   "this op to be considered for addition please comment on "
                   "https://github.com/pytorch/pytorch/issues/141287 and mention use-case, that resulted in missing op "
                   "as well as commit hash cf30153c4c131c8164ee7798e5022d810682e2cb. As a temporary fix, you can set "
                   "the environment variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. "
                   "WARNING: this will be slower than running natively on MPS.")


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


def _here(filename: str) -> bool:
    return os.path.abspath(filename) == os.path.abspath(__file__)


@pytest.fixture
def watch():
    saved = os.environ.get(VARIABLE)
    watch = envwatch.EnvWatch([VARIABLE])
    watch.install()
    try:
        yield watch
    finally:
        watch.remove()
        if saved is None:
            os.environ.pop(VARIABLE, None)
        else:
            os.environ[VARIABLE] = saved


def test_every_way_python_writes_the_environment_is_seen_with_its_line(watch):
    os.environ[VARIABLE] = "0"; rows = [_line()]  # noqa: E702
    os.environ[VARIABLE] = "1"; rows.append(_line())  # noqa: E702
    watch.torch_imported = True
    os.environ.setdefault(VARIABLE, "ignored")  # already set: no write
    del os.environ[VARIABLE]; rows.append(_line())  # noqa: E702
    os.environ.setdefault(VARIABLE, "2"); rows.append(_line())  # noqa: E702
    os.environ.update({VARIABLE: "3"}); rows.append(_line())  # noqa: E702
    os.environ |= {VARIABLE: "4"}; rows.append(_line())  # noqa: E702
    from os import putenv  # bound after the watch was installed, as a script binds it

    putenv(VARIABLE, "5"); rows.append(_line())  # noqa: E702
    os.environ.pop(VARIABLE); rows.append(_line())  # noqa: E702
    os.environ["PYTORCH_MPS_HIGH_WATERMARK_RATIO"] = "0.0"  # not watched
    del os.environ["PYTORCH_MPS_HIGH_WATERMARK_RATIO"]
    seen = [(w.value, w.after_import, envwatch.innermost(w.frames, _here)) for w in watch.writes]
    where = (os.path.abspath(__file__),)
    assert seen == [(value, after, where + (row,)) for value, after, row in zip(
        ["0", "1", None, "2", "3", "4", "5", None], [False, False, True, True, True, True, True, True], rows)]
    assert watch.in_force(VARIABLE) == len(rows) - 1
    assert watch.last_before_import(VARIABLE).value == "1"


def test_the_same_line_writing_the_same_value_again_is_one_write(watch):
    for _ in range(1000):
        os.environ[VARIABLE] = "1"
    os.environ[VARIABLE] = "0"
    assert [w.value for w in watch.writes] == ["1", "0"] and watch.in_force(VARIABLE) == 1


def test_the_watch_is_undone_and_a_refused_write_is_no_write():
    original = os.putenv, os.unsetenv
    watch = envwatch.EnvWatch([VARIABLE])
    watch.install()
    assert os.putenv is not original[0] and os.putenv.__wrapped__ is original[0]
    with pytest.raises(ValueError):
        os.putenv(VARIABLE, "a\0b")  # embedded null byte: refused by the OS layer
    watch.remove()
    assert (os.putenv, os.unsetenv) == original and watch.writes == [] and watch.in_force(VARIABLE) is None


def test_a_write_is_placed_at_the_innermost_line_in_the_users_files():
    frames = (("<frozen os>", 685), ("/usr/lib/python3/_collections_abc.py", 950), ("/proj/helpers.py", 5),
              ("/proj/train.py", 12))
    assert envwatch.innermost(frames, lambda f: f.startswith("/proj/")) == ("/proj/helpers.py", 5)
    assert envwatch.innermost(frames, lambda f: False) == (None, None)


# -- the report ------------------------------------------------------------------------------------------------

SCRIPT = "train.py"
PATH = os.path.abspath(SCRIPT)


def _write(row, value="1", after=True, filename=PATH, name=VARIABLE):
    return {"filename": filename, "row": row, "name": name, "value": value, "enables": value not in (None, "0"),
            "after_import": after}


def _raised(row, write, op="aten::_pdist_forward", count=1):
    return {"op": op, "filename": PATH, "row": row, "count": count, "fallback_write": write}


def _build(writes=(), raised=(), enabled=False, source="--no-fallback (the variable is unset)", errors=(),
           static=None, lines=range(1, 40)):
    raw = {"status": "ran", "simulated": True, "torch_version": "2.13.0", "script_exit_code": 1 if errors else 0,
           "duration_s": 1.0, "events": [], "errors": list(errors), "lines": list(lines),
           "clocks": {"optimizer": 0, "batches": 0, "forward": 0}, "notes": [], "torch_imported": True, "ops": 9,
           "ops_on_device": 9, "env_writes": list(writes), "unimplemented": list(raised),
           "fallback": {"value": "1" if enabled else None, "enabled": enabled, "source": source, "row": None,
                        "filename": None}}
    return report.build(launcher.Options(SCRIPT), launcher.Run(raw, 0, False, 1.0), static=static)


def test_a_missing_kernel_raised_while_the_late_value_was_in_force_confirms_mps505_at_that_line():
    error = {"type": "NotImplementedError", "message": NOT_IMPLEMENTED, "row": 9}
    verdict = _build([_write(7)], [_raised(9, 0)], errors=[error],
                     static=[{"code": "MPS505", "row": 7, "end_row": 7}, {"code": "MPS501", "row": 9, "end_row": 9}])
    r = verdict.report
    assert r["set_after_import"] == [{
        "variable": VARIABLE, "value": "1", "location": {"filename": SCRIPT, "row": 7}, "rule": "MPS505",
        "url": "https://github.com/mpslint/mpslint/blob/main/rules/MPS505.md", "status": "confirmed", "reason": None,
        "raised": [{"op": "aten::_pdist_forward", "count": 1, "location": {"filename": SCRIPT, "row": 9}}]}]
    assert r["static"] == [{"code": "MPS505", "row": 7, "status": "confirmed"},
                           {"code": "MPS501", "row": 9, "status": "confirmed"}]
    assert r["verdict"] == "fail" and r["reasons"] == ["errors"] and verdict.exit_code == 1  # as without MPS505
    text = report.render_text(verdict).splitlines()
    assert "    cause: train.py:7 sets PYTORCH_ENABLE_MPS_FALLBACK after torch was imported (MPS505, below)" in text
    at = text.index("set after torch was imported:")
    assert text[at + 1:at + 4] == [
        "  train.py:7: PYTORCH_ENABLE_MPS_FALLBACK=1 is set after torch was imported: PyTorch read it once, while "
        "torch loaded, so this line has no effect",
        "    confirmed: aten::_pdist_forward still raised NotImplementedError at train.py:9 once",
        "    MPS505: set it before the first torch import, or where Python starts (PYTORCH_ENABLE_MPS_FALLBACK=1 "
        "python train.py); https://github.com/mpslint/mpslint/blob/main/rules/MPS505.md"]


def test_a_raise_the_script_caught_confirms_every_line_that_kept_the_switch_on_and_is_counted_once():
    """A helper turned it on, a loop turned it on again each step, the op raised each step and was caught."""
    writes = [_write(5, filename=os.path.abspath("helpers.py")), _write(18)]
    raised = [_raised(10, 1, count=3)]
    verdict = _build(writes, raised, static=[{"code": "MPS501", "row": 10, "end_row": 10}])
    late = verdict.report["set_after_import"]
    assert [(w["location"], w["status"], w["raised"]) for w in late] == [
        ({"filename": "helpers.py", "row": 5}, "confirmed",
         [{"op": "aten::_pdist_forward", "count": 3, "location": {"filename": SCRIPT, "row": 10}}]),
        ({"filename": SCRIPT, "row": 18}, "confirmed",
         [{"op": "aten::_pdist_forward", "count": 3, "location": {"filename": SCRIPT, "row": 10}}])]
    assert verdict.report["errors"] == [] and verdict.report["verdict"] == "pass"  # the script handled it
    assert verdict.report["static"] == [{"code": "MPS501", "row": 10, "status": "confirmed"}]


def test_a_line_run_many_times_is_one_entry_and_each_raise_counts_once():
    writes = [_write(18), _write(19, value="2"), _write(18)]  # two lines taking turns
    raised = [_raised(10, 2, count=2), _raised(11, 1, op="aten::_ctc_loss")]
    late = _build(writes, raised).report["set_after_import"]
    assert [(w["location"]["row"], w["value"], w["status"]) for w in late] == [(18, "1", "confirmed"),
                                                                            (19, "2", "confirmed")]
    assert late[0]["raised"] == [
        {"op": "aten::_pdist_forward", "count": 2, "location": {"filename": SCRIPT, "row": 10}},
        {"op": "aten::_ctc_loss", "count": 1, "location": {"filename": SCRIPT, "row": 11}}]
    assert late[1]["raised"] == late[0]["raised"]


def test_a_raise_after_the_switch_was_removed_again_confirms_nothing():
    writes = [_write(7), _write(8, value=None)]  # set late, then removed: it was not set when the op raised
    [entry] = _build(writes, [_raised(9, 1)]).report["set_after_import"]
    assert (entry["location"]["row"], entry["status"], entry["reason"]) == (7, "unconfirmed", "no-missing-kernel")


def test_set_before_the_import_there_is_nothing_to_say():
    verdict = _build([_write(3, after=False)], [], enabled=True, source="script")
    assert verdict.report["set_after_import"] == []
    assert "set after torch was imported" not in report.render_text(verdict)


@pytest.mark.parametrize("value, enabled, source, reason, says", [
    ("1", False, "--no-fallback (the variable is unset)", "no-missing-kernel",
     "no op without an MPS kernel ran while the value it set was in force"),
    ("1", True, "mpslint verify (its default; --no-fallback leaves the variable unset)", "fallback-on",
     "torch loaded with the fallback already on: ops without an MPS kernel run on the CPU whatever this line sets; "
     "run with --no-fallback to see them raise"),
    ("0", False, "--no-fallback (the variable is unset)", "does-not-enable",
     "its value does not turn the fallback on, so no op can show it"),
])
def test_unconfirmed_says_why(value, enabled, source, reason, says):
    """Where the script sets it late but nothing showed it: listed, unconfirmed, with the reason (documented)."""
    raised = [_raised(9, 0)] if value == "0" else []  # an op raised, with the switch off in os.environ
    verdict = _build([_write(7, value=value)], raised, enabled=enabled, source=source,
                     static=[{"code": "MPS505", "row": 7, "end_row": 7}])
    [entry] = verdict.report["set_after_import"]
    assert (entry["status"], entry["reason"], entry["raised"]) == ("unconfirmed", reason, [])
    assert verdict.report["static"] == [{"code": "MPS505", "row": 7, "status": "not-observed"}]
    assert f"    not confirmed in this run: {says}" in report.render_text(verdict).splitlines()


def test_the_line_that_chose_the_setting_before_the_import_is_named_wherever_it_ran():
    raw_setting = {"value": "1", "enabled": True, "source": "script", "row": 4, "filename": os.path.abspath("env.py")}
    verdict = report.build(launcher.Options(SCRIPT), launcher.Run(
        {"status": "ran", "torch_imported": True, "ops": 1, "ops_on_device": 1, "fallback": raw_setting}, 0, False, 1.0))
    assert verdict.report["fallback_setting"] == {"enabled": True, "value": "1", "source": "script", "row": None}
    assert "PYTORCH_ENABLE_MPS_FALLBACK=1 when torch was imported (from env.py:4): CPU fallback on" in verdict.notes
