"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request.

A notebook finding is annotated on the line of the ``.ipynb`` file that holds
the code (GitHub shows the file's JSON in pull requests); the message starts
with ``path:cell N:line:col``.
"""

from __future__ import annotations

from typing import Optional, Sequence

from mpslint.diagnostic import Diagnostic, where
from mpslint.output import Options, file_region


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def line(d: Diagnostic, options: Optional[Options] = None) -> str:
    start, end = file_region(d, options if options is not None else Options())
    props = [f"title={_property(f'mpslint ({d.code})')}", f"file={_property(d.filename)}", f"line={start.row}"]
    if start.row == end.row:
        # Columns are only meaningful to GitHub on a single-line annotation.
        props.append(f"col={start.column}")
    props.append(f"endLine={end.row}")
    if start.row == end.row:
        props.append(f"endColumn={end.column}")
    return f"::error {','.join(props)}::{_data(f'{where(d)}: {d.code} {d.message}')}"


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    return "".join(line(d, options) + "\n" for d in diagnostics)
