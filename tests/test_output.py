"""Output formats, rendered from known diagnostics; machine formats are parsed, not string-matched."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from mpslint import catalog
from mpslint.diagnostic import Applicability, Diagnostic, Edit, Fix, Location
from mpslint.output import FORMATS, Options, render
from mpslint.output.summary import show_fixes, statistics, summary

from clitools import fake_rules  # noqa: F401  (fixture)

SAFE = Fix("Replace with `.to(DEVICE)`", Applicability.SAFE, (Edit(Location(3, 5), Location(3, 13), "x.to(DEVICE)"),))
UNSAFE = Fix("Use float32", Applicability.UNSAFE, (Edit(Location(2, 5), Location(2, 15), "x.float()"),))

D_SAFE = Diagnostic("MPS990", "`.cuda()` only works on CUDA", "pkg/a.py", Location(3, 5), Location(3, 13), SAFE, 3)
D_UNSAFE = Diagnostic("MPS991", "float64 is not supported on MPS", "pkg/a.py", Location(2, 5), Location(2, 15), UNSAFE, 2)
D_MULTI = Diagnostic("MPS992", "spans, lines: 100%", "pkg/b.py", Location(4, 3), Location(6, 2), None, 4)
D_SYNTAX = Diagnostic("MPS000", "could not parse: invalid syntax", "pkg/c.py", Location(1, 7), Location(1, 7))
ALL = [D_UNSAFE, D_SAFE, D_MULTI, D_SYNTAX]

SOURCES = {
    "pkg/a.py": "import torch\nx = x.double()\ny = x.cuda()\n",
    "pkg/b.py": "import torch\n\n\ndef f():\n\tz = (\n        1)\n",
}


@pytest.fixture(autouse=True)
def rules(fake_rules):
    return fake_rules


def opts(unsafe=False):
    return Options(unsafe=unsafe, source=SOURCES.get)


def test_concise():
    assert render("concise", ALL, opts()).splitlines() == [
        "pkg/a.py:2:5: MPS991 float64 is not supported on MPS",
        "pkg/a.py:3:5: MPS990 [*] `.cuda()` only works on CUDA",
        "pkg/b.py:4:3: MPS992 spans, lines: 100%",
        "pkg/c.py:1:7: MPS000 could not parse: invalid syntax",
    ]
    assert render("concise", [D_UNSAFE], opts(unsafe=True)).startswith("pkg/a.py:2:5: MPS991 [*] ")


def test_full_underlines_and_keeps_tabs():
    text = render("full", [D_SAFE, D_MULTI, D_SYNTAX], opts())
    blocks = text.split("\n\n")
    assert blocks[0].splitlines() == [
        "pkg/a.py:3:5: MPS990 [*] `.cuda()` only works on CUDA",
        "  |",
        "3 | y = x.cuda()",
        "  |     ^^^^^^^^ MPS990",
        "  |",
        "  = help: Replace with `.to(DEVICE)`",
    ]
    # A multi-line span is underlined to the end of its first line; tabs are kept in the padding.
    assert blocks[1].splitlines()[2:4] == ["4 | def f():", "  |   ^^^^^^ MPS992"]
    # No source available: the header alone.
    assert blocks[2].strip() == "pkg/c.py:1:7: MPS000 could not parse: invalid syntax"


def test_full_pads_with_the_line_own_tabs():
    d = Diagnostic("MPS990", "m", "pkg/b.py", Location(5, 6), Location(5, 7), None, 5)
    lines = render("full", [d], opts()).splitlines()
    assert lines[2] == "5 | \tz = ("
    assert lines[3] == "  | \t    ^ MPS990"


def test_json_fields_follow_ruff():
    data = json.loads(render("json", [D_SAFE, D_MULTI], opts()))
    first = data[0]
    # Ruff's fields; `cell` is null outside notebooks, as in Ruff.
    assert set(first) == {"cell", "code", "name", "severity", "message", "filename", "location", "end_location", "noqa_row", "url", "fix"}
    assert first["cell"] is None
    assert first["code"] == "MPS990" and first["name"] == "test-cuda-call"
    assert first["filename"] == os.path.abspath("pkg/a.py")
    assert first["location"] == {"row": 3, "column": 5}
    assert first["end_location"] == {"row": 3, "column": 13}
    assert first["noqa_row"] == 3
    assert first["url"].endswith("/rules/MPS990.md")
    assert first["fix"] == {
        "applicability": "safe",
        "message": "Replace with `.to(DEVICE)`",
        "edits": [{"content": "x.to(DEVICE)", "location": {"row": 3, "column": 5}, "end_location": {"row": 3, "column": 13}}],
    }
    assert data[1]["fix"] is None
    assert json.loads(render("json", [], opts())) == []


def test_sarif_structure_and_rule_metadata_from_the_catalog():
    log = json.loads(render("sarif", ALL, opts()))
    assert log["version"] == "2.1.0" and "sarif-2.1.0" in log["$schema"]
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(catalog.load())
    mps000 = rules[[r["id"] for r in rules].index("MPS000")]
    assert mps000["name"] == "invalid-syntax"
    assert mps000["fullDescription"]["markdown"] == catalog.find("MPS000").text
    assert "## What it does" in mps000["fullDescription"]["markdown"]
    assert mps000["helpUri"] == catalog.find("MPS000").url
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["MPS991", "MPS990", "MPS992", "MPS000"]
    syntax = results[3]
    assert rules[syntax["ruleIndex"]]["id"] == "MPS000"
    region = results[2]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 4, "startColumn": 3, "endLine": 6, "endColumn": 2}
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("file://")
    fix = results[1]["fixes"][0]
    assert fix["description"]["text"] == "Replace with `.to(DEVICE)`"
    replacement = fix["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "x.to(DEVICE)"
    assert replacement["deletedRegion"] == {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 13}
    assert "fixes" not in results[2]


def test_github_annotations():
    lines = render("github", [D_SAFE, D_MULTI], opts()).splitlines()
    assert lines[0] == (
        "::error title=mpslint (MPS990),file=pkg/a.py,line=3,col=5,endLine=3,endColumn=13::"
        "pkg/a.py:3:5: MPS990 `.cuda()` only works on CUDA"
    )
    # Multi-line: no columns; `%` is escaped in the message.
    assert lines[1] == "::error title=mpslint (MPS992),file=pkg/b.py,line=4,endLine=6::pkg/b.py:4:3: MPS992 spans, lines: 100%25"


def test_github_escapes_properties():
    d = Diagnostic("MPS990", "a\nb", "odd,name:x.py", Location(1, 1), Location(1, 2))
    assert render("github", [d], opts()) == (
        "::error title=mpslint (MPS990),file=odd%2Cname%3Ax.py,line=1,col=1,endLine=1,endColumn=2::odd,name:x.py:1:1: MPS990 a%0Ab\n"
    )


def test_junit_structure():
    root = ET.fromstring(render("junit", ALL, opts()))
    assert root.tag == "testsuites" and root.get("tests") == "4" and root.get("failures") == "4"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["pkg/a.py", "pkg/b.py", "pkg/c.py"]
    assert suites[0].get("tests") == "2"
    case = suites[0].findall("testcase")[1]
    assert case.get("name") == "org.mpslint.MPS990" and case.get("line") == "3" and case.get("column") == "5"
    failure = case.find("failure")
    assert failure.get("message") == "`.cuda()` only works on CUDA"
    assert failure.text == "line 3, col 5, `.cuda()` only works on CUDA"


def test_junit_without_findings_is_one_passing_case():
    root = ET.fromstring(render("junit", [], opts()))
    assert root.get("failures") == "0"
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 1 and cases[0].find("failure") is None


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_renders_no_findings(name):
    out = render(name, [], opts())
    if name == "sarif":
        assert json.loads(out)["runs"][0]["results"] == []
    else:
        assert "MPS" not in out


def test_unknown_format():
    with pytest.raises(ValueError):
        render("yaml", [], opts())


def test_summary_lines():
    assert summary([], 0, unsafe=False, fixing=False) == ["All checks passed!"]
    assert summary([D_SAFE], 0, unsafe=False, fixing=False) == ["Found 1 finding.", "[*] 1 fixable with --fix."]
    assert summary([D_SAFE, D_UNSAFE, D_MULTI], 0, unsafe=False, fixing=False) == [
        "Found 3 findings.",
        "[*] 1 fixable with --fix (1 more with --fix --unsafe-fixes).",
    ]
    assert summary([D_UNSAFE], 0, unsafe=False, fixing=False) == [
        "Found 1 finding.",
        "No fixes available (1 more with --fix --unsafe-fixes).",
    ]
    assert summary([D_SAFE, D_UNSAFE], 0, unsafe=True, fixing=False)[1] == "[*] 2 fixable with --fix --unsafe-fixes."
    assert summary([D_MULTI], 4, unsafe=False, fixing=True) == ["Found 5 findings (4 fixed, 1 remaining)."]
    assert summary([], 2, unsafe=False, fixing=True) == ["Found 2 findings (2 fixed, 0 remaining)."]


def test_statistics_text_and_json():
    rows = statistics([D_SAFE, D_UNSAFE, D_MULTI, D_SAFE], unsafe=False, as_json=False).splitlines()
    assert rows == ["2\tMPS990\t[*]\ttest-cuda-call", "1\tMPS991\t[-]\ttest-double-call", "1\tMPS992\t[ ]\ttest-synchronize"]
    assert statistics([D_UNSAFE], unsafe=True, as_json=False) == "1\tMPS991\t[*]\ttest-double-call\n"
    assert json.loads(statistics([D_MULTI], unsafe=False, as_json=True)) == [
        {"code": "MPS992", "name": "test-synchronize", "count": 1, "fixable": False, "fixable_count": 0}
    ]


def test_statistics_marks_a_code_fixable_only_when_every_finding_is():
    from dataclasses import replace

    unfixed = replace(D_SAFE, location=Location(9, 1), end_location=Location(9, 5), fix=None)
    unsafe_too = replace(D_SAFE, location=Location(10, 1), end_location=Location(10, 5), fix=UNSAFE)
    assert statistics([D_SAFE, unfixed, D_SAFE], unsafe=False, as_json=False) == "3\tMPS990\t[~]\ttest-cuda-call\n"
    assert statistics([D_SAFE, unsafe_too], unsafe=False, as_json=False) == "2\tMPS990\t[~]\ttest-cuda-call\n"
    assert statistics([D_SAFE, unsafe_too], unsafe=True, as_json=False) == "2\tMPS990\t[*]\ttest-cuda-call\n"
    assert json.loads(statistics([D_SAFE, unfixed], unsafe=False, as_json=True)) == [
        {"code": "MPS990", "name": "test-cuda-call", "count": 2, "fixable": False, "fixable_count": 1}
    ]


def test_show_fixes():
    from collections import Counter

    text = show_fixes([("a.py", Counter({"MPS990": 2, "MPS991": 1})), ("b.py", Counter())])
    assert text == "Fixed 3 findings:\n- a.py:\n    2 × MPS990 (test-cuda-call)\n    1 × MPS991 (test-double-call)\n"
    assert show_fixes([("a.py", Counter())]) == "No findings fixed.\n"


# --- the formats Ruff users reach for: json-lines, grouped, pylint, azure, gitlab, rdjson -------------


def test_json_has_rufflike_severity_and_json_lines_is_the_same_objects():
    array = json.loads(render("json", ALL, opts()))
    assert {entry["severity"] for entry in array} == {"error"}
    lines = render("json-lines", ALL, opts()).splitlines()
    assert [json.loads(line) for line in lines] == array


def test_grouped():
    assert render("grouped", ALL, opts()) == (
        "pkg/a.py:\n"
        "  2:5 MPS991 float64 is not supported on MPS\n"
        "  3:5 MPS990 [*] `.cuda()` only works on CUDA\n"
        "\n"
        "pkg/b.py:\n"
        "  4:3 MPS992 spans, lines: 100%\n"
        "\n"
        "pkg/c.py:\n"
        "  1:7 MPS000 could not parse: invalid syntax\n"
    )


def test_pylint_lines_parse_as_pylints_parseable_format():
    import re

    parseable = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): \[(?P<code>[A-Z]+\d+)\] (?P<message>.+)$")
    lines = render("pylint", ALL, opts()).splitlines()
    assert [parseable.match(line).group("path", "line", "code") for line in lines] == [
        ("pkg/a.py", "2", "MPS991"),
        ("pkg/a.py", "3", "MPS990"),
        ("pkg/b.py", "4", "MPS992"),
        ("pkg/c.py", "1", "MPS000"),
    ]


def test_azure_logging_commands_escape_what_azure_decodes():
    d = Diagnostic("MPS990", "a; b] 100%\nnext", "pkg/a.py", Location(3, 5), Location(3, 13), None, 3)
    (line,) = render("azure", [d], opts()).splitlines()
    assert line == (
        "##vso[task.logissue type=error;sourcepath=pkg/a.py;linenumber=3;columnnumber=5;code=MPS990;]"
        "pkg/a.py:3:5: a%3B b%5D 100%AZP25%0Anext"
    )


def test_gitlab_code_quality_report(monkeypatch, tmp_path):
    monkeypatch.setenv("CI_PROJECT_DIR", os.getcwd())
    moved = Diagnostic("MPS990", D_SAFE.message, "pkg/a.py", Location(9, 5), Location(9, 13), None, 9)
    issues = json.loads(render("gitlab", ALL + [moved], opts()))
    for issue in issues:
        # The fields GitLab's Code Quality report format requires, with its severities.
        assert set(issue) >= {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert issue["description"].startswith(issue["check_name"] + ": ")
        assert isinstance(issue["location"]["path"], str)
        assert issue["location"]["positions"]["begin"]["line"] >= 1
    assert [i["location"]["path"] for i in issues[:2]] == ["pkg/a.py", "pkg/a.py"]
    fingerprints = [i["fingerprint"] for i in issues]
    assert len(set(fingerprints)) == len(fingerprints)  # equal findings in one file stay apart
    # A finding keeps its fingerprint when lines above it move.
    alone = json.loads(render("gitlab", [moved], opts()))[0]["fingerprint"]
    assert alone == json.loads(render("gitlab", [D_SAFE], opts()))[0]["fingerprint"]


def test_rdjson_is_reviewdogs_diagnostic_result_with_byte_columns():
    d = Diagnostic("MPS990", "msg", "pkg/u.py", Location(1, 6), Location(1, 14), SAFE, 1)
    source = {"pkg/u.py": "é = 1; x.cuda()\n"}
    result = json.loads(render("rdjson", [d, D_SYNTAX], Options(source=source.get)))
    assert result["source"]["name"] == "mpslint"
    first, second = result["diagnostics"]
    assert first["code"] == {"value": "MPS990", "url": catalog.DOCS_URL.format(code="MPS990")}
    assert first["severity"] in {"ERROR", "WARNING", "INFO"}
    # 'é' is two bytes in UTF-8: reviewdog's column 7 is our character 6.
    assert first["location"] == {"path": "pkg/u.py", "range": {"start": {"line": 1, "column": 7}, "end": {"line": 1, "column": 15}}}
    assert first["suggestions"] == [{"range": {"start": {"line": 3, "column": 5}, "end": {"line": 3, "column": 13}}, "text": "x.to(DEVICE)"}]
    assert "suggestions" not in second


@pytest.mark.parametrize("name", ["json-lines", "grouped", "pylint", "azure", "gitlab", "rdjson"])
def test_new_formats_from_the_command_line(name, tmp_path):
    from click.testing import CliRunner

    from mpslint.cli import main

    (tmp_path / "t.py").write_text("import torch\nx = torch.zeros(1).cuda()\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["--no-cache", "--output-format", name, str(tmp_path / "t.py")])
    assert result.exit_code == 1, result.output
    assert "MPS990" in result.output  # this module's stand-in rules
    if name != "grouped":
        assert "Found" not in result.output  # machine formats print nothing else
    else:
        assert "Found 1 finding" in result.output
