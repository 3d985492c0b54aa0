"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request."""

from __future__ import annotations

from typing import Sequence

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def line(d: Diagnostic) -> str:
    props = [f"title={_property(f'mpslint ({d.code})')}", f"file={_property(d.filename)}", f"line={d.location.row}"]
    if d.location.row == d.end_location.row:
        # Columns are only meaningful to GitHub on a single-line annotation.
        props.append(f"col={d.location.column}")
    props.append(f"endLine={d.end_location.row}")
    if d.location.row == d.end_location.row:
        props.append(f"endColumn={d.end_location.column}")
    where = f"{d.filename}:{d.location.row}:{d.location.column}"
    return f"::error {','.join(props)}::{_data(f'{where}: {d.code} {d.message}')}"


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    return "".join(line(d) + "\n" for d in diagnostics)
