"""JUnit XML: a test suite per file, a failed test case per finding (what CI dashboards ingest).

A notebook finding's ``line``/``column`` are those of the ``.ipynb`` file's
JSON text; the failure text names the cell and the line in it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import groupby
from typing import Sequence

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options, file_region


# Characters XML 1.0 cannot hold, even escaped (control characters, lone surrogates, U+FFFE/U+FFFF):
# a file name or quoted source may carry them, and one makes the whole report unreadable to a parser.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """``text`` with each character XML cannot hold written as its Python escape (``\\x01``)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    root = ET.Element("testsuites", name="mpslint", tests=str(len(diagnostics)), failures=str(len(diagnostics)), errors="0")
    if not diagnostics:
        suite = ET.SubElement(root, "testsuite", name="mpslint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="No findings")
    for shown, group in groupby(diagnostics, key=lambda d: d.filename):
        filename = _xml_text(shown)
        found = list(group)
        suite = ET.SubElement(
            root, "testsuite", name=filename, tests=str(len(found)), failures=str(len(found)), errors="0", package="org.mpslint"
        )
        for d in found:
            start, _ = file_region(d, options)
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"org.mpslint.{d.code}",
                classname=filename,
                file=filename,
                line=str(start.row),
                column=str(start.column),
            )
            message = _xml_text(d.message)
            failure = ET.SubElement(case, "failure", message=message, type=d.code)
            cell = f"cell {d.cell}, " if d.cell is not None else ""
            failure.text = f"{cell}line {d.location.row}, col {d.location.column}, {message}"
    ET.indent(root) if hasattr(ET, "indent") else None
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
