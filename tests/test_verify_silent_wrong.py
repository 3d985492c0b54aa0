"""Known silently wrong results on MPS (issue 27 item 4): the cited table, its triggers matched on the calls'
arguments through the probe (meta tensors stand for the device: real shapes and strides, no memory), with traps for
calls and torch versions outside a trigger, and the report under --simulate."""

from __future__ import annotations

import inspect
import re
import textwrap

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from mpslint.knowledge import silent_wrong as table  # noqa: E402
from mpslint.verify import launcher, probe, report, silent_wrong  # noqa: E402

TESTS = {"defined", "non_contiguous", "contiguous", "dim_equals", "dim_at_least", "size_over", "size_at_least",
         "numel_over", "any_numel_over", "any_non_contiguous", "sum_numel_over", "product_over"}


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


def test_every_entry_cites_its_issue_and_names_real_ops_and_arguments():
    for entry in table.entries():
        assert re.fullmatch(r"https://github\.com/pytorch/pytorch/issues/\d+", entry["issue"]), entry["id"]
        assert entry.get("fixed_by") is None or re.fullmatch(r"https://github\.com/pytorch/pytorch/pull/\d+",
                                                            entry["fixed_by"])
        assert entry["title"] and entry["trigger"] and entry["advice"]
        assert table.release(entry["affected_from"]) < table.release(entry["affected_before"])
        assert entry["fixed_in"] in (None, entry["affected_before"])
        for match in entry["match"]:
            if "op" in match:
                namespace, name = match["op"].split("::")
                schema = getattr(torch.ops.aten, name).default._schema
                arguments = {argument.name for argument in schema.arguments}
            else:
                assert silent_wrong._resolve(match["function"]) is not None
                arguments = set(match["params"])
            for test in match["when"]:
                assert test["test"] in TESTS
                named = [test["arg"]] if "arg" in test else test.get("args", [a for a, _ in test.get("sizes", [])])
                assert set(named) <= arguments, (entry["id"], named)
    assert len({entry["id"] for entry in table.entries()}) == len(table.entries())


def test_releases_in_range():
    entry = table.by_id()["addcdiv-noncontiguous"]
    assert [v for v in ("2.2.2", "2.3.0", "2.3.1", "2.4.0", "2.13.0+cpu") if table.affects(entry, v)] == \
        ["2.3.0", "2.3.1"]
    assert table.releases(entry) == "torch 2.3, fixed in 2.4"
    assert table.releases(table.by_id()["bmm-input-over-2-32"]) == "torch 2.4 to 2.14, no release with a fix cited"
    assert table.release("2.14.0.dev20260709") == (2, 14)


def meta(*shape):
    return torch.empty(*shape, device="meta")


def recorded(version, calls):
    """Run ``calls`` under the probe (and the function-level triggers) with meta tensors as the device's."""
    recorder = probe.Recorder(__file__)
    triggers = silent_wrong.Triggers(version)
    with silent_wrong.FunctionTriggers(triggers, recorder.wrong, device="meta"), \
            probe.ProbeMode(recorder, device="meta", triggers=triggers):
        calls()
    return sorted((e["key"], e["row"], e["count"]) for e in recorder.as_json() if e["kind"] == "wrong")


def test_each_trigger_is_reported_once_per_call_site_with_a_count_and_its_traps_are_not():
    rows = {}

    def calls():
        a, b = meta(65540, 2, 256).transpose(1, 2), meta(65540, 2, 256)  # out: 65540 * 256 * 256 > 2**32
        for _ in range(3):
            torch.bmm(a, b); rows["bmm"] = _line()  # noqa: E702
        torch.bmm(a.contiguous(), b)  # trap: all contiguous, every tensor under 2**32 elements
        torch.bmm(a, meta(65540, 2, 16))  # trap: a transposed, but the output is small
        torch.bmm(meta(65537, 256, 256), meta(65537, 256, 64)); rows["big input"] = _line()  # noqa: E702
        torch.bmm(meta(65536, 256, 256), meta(65536, 256, 64))  # trap: exactly 2**32 elements
        torch.bmm(meta(1, 256, 256).expand(65537, 256, 256), meta(65537, 256, 64))  # trap: broadcast, 2**16 stored
        x, w, bias = meta(65537, 11, 128), meta(512, 128), meta(512)
        F.linear(x, w, bias); rows["linear"] = _line()  # noqa: E702
        torch.nn.Linear(128, 512, device="meta")(x); rows["module"] = _line()  # noqa: E702
        F.linear(x, w)  # trap: no bias
        F.linear(x[:65536], w, bias)  # trap: 65536 is the last right size
        F.linear(x.transpose(1, 2).transpose(1, 2), w, bias); rows["view"] = _line()  # noqa: E702  contiguous view
        F.linear(meta(11, 65537, 128).transpose(0, 1), w, bias)  # trap: non-contiguous input is right
        F.linear(x.reshape(-1, 128), w, bias)  # trap: 2-D, the issue's workaround
        m, n = meta(32, 40000), meta(40000, 16)
        m @ n; rows["mm"] = _line()  # noqa: E702
        torch.addmm(meta(16), m, n); rows["addmm"] = _line()  # noqa: E702
        meta(32, 32768) @ meta(32768, 16)  # trap: K = 32768 is not over
        meta(8, 40000) @ n  # trap: fewer than 16 rows
        torch.cat([meta(2 ** 30)] * 3); rows["cat"] = _line()  # noqa: E702
        torch.cat([meta(2 ** 30)] * 2)  # trap: exactly 2**31
        torch.index_select(meta(2 ** 31 + 1), 0, torch.zeros(1, dtype=torch.long, device="meta")); rows["select"] = _line()  # noqa: E501,E702
        F.embedding(torch.zeros(3, dtype=torch.long, device="meta"), meta(2 ** 21, 1025)); rows["embedding"] = _line()  # noqa: E501,E702
        F.embedding(torch.zeros(3, dtype=torch.long, device="meta"), meta(2 ** 21, 1024))  # trap: exactly 2**31

    found = recorded("2.13.0", calls)
    assert found == sorted([
        ("bmm-output-over-2-32-noncontiguous", rows["bmm"], 3),
        ("mm-long-reduction", rows["mm"], 1), ("mm-long-reduction", rows["addmm"], 1),
        ("linear-bias-batch-over-65536", rows["linear"], 1), ("linear-bias-batch-over-65536", rows["module"], 1),
        ("linear-bias-batch-over-65536", rows["view"], 1), ("bmm-input-over-2-32", rows["big input"], 1),
        ("cat-output-over-2-31", rows["cat"], 1),
        ("index-select-source-over-2-31", rows["select"], 1), ("index-select-source-over-2-31", rows["embedding"], 1),
    ])


def test_a_torch_outside_an_entrys_releases_is_not_reported():
    rows = {}

    def calls():
        torch.index_select(meta(2 ** 31 + 1), 0, torch.zeros(1, dtype=torch.long, device="meta")); rows["select"] = _line()  # noqa: E501,E702
        param = meta(3, 2).t()
        param.addcdiv_(meta(2, 3), meta(2, 3)); rows["addcdiv"] = _line()  # noqa: E702
        meta(2, 3).addcdiv_(meta(2, 3), meta(2, 3))  # trap: contiguous

    assert recorded("2.14.0", calls) == []  # index_select fixed in 2.14; addcdiv_ in 2.4
    assert recorded("2.13.0", calls) == [("index-select-source-over-2-31", rows["select"], 1)]
    assert recorded("2.3.1", calls) == [("addcdiv-noncontiguous", rows["addcdiv"], 1)]


def test_tensors_off_the_device_are_not_checked():
    def calls():
        m, n = torch.empty(16, 32769), torch.empty(32769, 16)
        m @ n  # on the CPU: not the device the probe watches
        F.linear(torch.empty(65537, 1, 1), torch.empty(1, 1), torch.empty(1))

    assert recorded("2.13.0", calls) == []


def test_aten_linear_as_a_mac_dispatches_it_is_matched_on_its_own_arguments():
    """A Mac runs F.linear as one MPS kernel, so the probe sees aten::linear there (elsewhere it decomposes into
    mm/addmm, matched above)."""
    found = []
    triggers = silent_wrong.Triggers("2.13.0")
    linear = torch.ops.aten.linear.default
    triggers.check(linear, (meta(32, 40000), meta(16, 40000)), {}, found.append)
    triggers.check(linear, (meta(32, 40000), meta(8, 40000), meta(8)), {}, found.append)  # trap: 8 output columns
    triggers.check(linear, (meta(4, 32, 40000), meta(16, 40000)), {}, found.append)  # trap: 3-D, not this entry
    assert found == ["mm-long-reduction"]


simulates = pytest.mark.skipif(not hasattr(torch.utils, "swap_tensors"), reason="--simulate needs torch 2.3")


@simulates
@pytest.mark.skipif(not table.affects(table.by_id()["linear-bias-batch-over-65536"], torch.__version__),
                    reason="the installed torch is outside the F.linear entry's releases")
def test_simulate_reports_a_matching_call_with_its_issue_as_a_warning_not_a_failure(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import torch
        from torch import nn
        head = nn.Linear(1, 1).to("mps")
        plain = nn.Linear(1, 1, bias=False).to("mps")
        x = torch.randn(65537, 1, 1, device="mps")  # 65537 sequences of one token
        for step in range(3):
            head(x).sum()
            plain(x).sum()
        head(x.reshape(-1, 1)).sum()
    """))
    options = launcher.Options(str(script), simulate=True)
    verdict = report.build(options, launcher.launch(options, capture=True))
    assert verdict.report["verdict"] == "pass" and verdict.report["errors"] == []
    (found,) = verdict.report["known_wrong"]
    assert found["id"] == "linear-bias-batch-over-65536" and found["count"] == 3
    assert found["location"] == {"filename": str(script), "row": 8}
    assert found["issue"] == "https://github.com/pytorch/pytorch/issues/189495"
    text = report.render_text(verdict)
    assert f"{script}:8: F.linear with a bias on a contiguous input" in text
    assert "3 times (https://github.com/pytorch/pytorch/issues/189495; torch 2.12 to 2.13, no release with a fix " \
           "cited)" in text
