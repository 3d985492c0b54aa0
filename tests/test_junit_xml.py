"""``--output-format junit`` is well-formed XML whatever a file name or quoted source holds (issue 29, item 6).

XML 1.0 cannot hold control characters, lone surrogates or U+FFFE/U+FFFF even
as character references; they are written as their Python escapes instead.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import pytest

from mpslint.diagnostic import Diagnostic, Location
from mpslint.output import Options, render

from clitools import enter, run

FORBIDDEN = "\x00\x01\x08\x0b\x0c\x1b\x7f\ufffe\uffff\ud800"


def test_forbidden_characters_in_names_and_messages_are_escaped():
    here = Location(2, 5)
    finding = Diagnostic("MPS101", f"quoted `x{FORBIDDEN}y` here", f"dir/a{FORBIDDEN}b.py", here, here)
    root = ET.fromstring(render("junit", [finding], Options()).encode("utf-8"))
    case = root.find("testsuite/testcase")
    assert case is not None
    assert case.get("file") == "dir/a\\x00\\x01\\x08\\x0b\\x0c\\x1b\x7f\\ufffe\\uffff\\ud800b.py"
    failure = case.find("failure")
    assert failure.get("message") == "quoted `x\\x00\\x01\\x08\\x0b\\x0c\\x1b\x7f\\ufffe\\uffff\\ud800y` here"
    assert failure.text.endswith(failure.get("message"))


def test_what_xml_can_hold_is_kept_as_it_is():
    here = Location(1, 1)
    text = "tab\tnewline\nreturn\r émoji 😀 <&> \"quotes\""
    finding = Diagnostic("MPS101", text, "ok.py", here, here)
    root = ET.fromstring(render("junit", [finding], Options()).encode("utf-8"))
    assert root.find("testsuite/testcase/failure").text.endswith(text.replace("\r", "\n"))


@pytest.mark.skipif(sys.platform == "win32", reason="Windows file names cannot hold control characters")
def test_the_issue_reproducer(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / "a\x01b.py").write_text("import torch\ny = torch.zeros(1).cuda()\n")
    result = run("--no-cache", "--output-format", "junit", ".")
    assert result.exit_code == 1, result.output
    root = ET.fromstring(result.stdout.encode("utf-8"))
    assert [case.get("file") for case in root.iter("testcase")] == ["a\\x01b.py"]
