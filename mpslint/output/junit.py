"""JUnit XML: a test suite per file, a failed test case per finding (what CI dashboards ingest)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby
from typing import Sequence

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    root = ET.Element("testsuites", name="mpslint", tests=str(len(diagnostics)), failures=str(len(diagnostics)), errors="0")
    if not diagnostics:
        suite = ET.SubElement(root, "testsuite", name="mpslint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="No findings")
    for filename, group in groupby(diagnostics, key=lambda d: d.filename):
        found = list(group)
        suite = ET.SubElement(
            root, "testsuite", name=filename, tests=str(len(found)), failures=str(len(found)), errors="0", package="org.mpslint"
        )
        for d in found:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"org.mpslint.{d.code}",
                classname=filename,
                file=filename,
                line=str(d.location.row),
                column=str(d.location.column),
            )
            failure = ET.SubElement(case, "failure", message=d.message, type=d.code)
            failure.text = f"line {d.location.row}, col {d.location.column}, {d.message}"
    ET.indent(root) if hasattr(ET, "indent") else None
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
