"""Azure Pipelines logging commands: each finding becomes an error on the build's summary and the file.

``##vso[task.logissue ...]`` is documented at
https://learn.microsoft.com/azure/devops/pipelines/scripts/logging-commands#logissue-log-an-error-or-warning
"""

from __future__ import annotations

from typing import Sequence

from mpslint.diagnostic import Diagnostic, where
from mpslint.output import Options, file_region


def _escape(text: str) -> str:
    # The escapes Azure's agent decodes in logging commands (its VSO command parser).
    return text.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A").replace("]", "%5D").replace(";", "%3B")


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    lines = []
    for d in diagnostics:
        start, _ = file_region(d, options)
        properties = (
            f"type=error;sourcepath={_escape(d.filename)};linenumber={start.row};"
            f"columnnumber={start.column};code={d.code};"
        )
        lines.append(f"##vso[task.logissue {properties}]{_escape(f'{where(d)}: {d.message}')}\n")
    return "".join(lines)
