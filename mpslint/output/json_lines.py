"""One JSON object per line, each as in ``json`` (Ruff's ``json-lines``): streams and greps well."""

from __future__ import annotations

import json
from typing import Sequence

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options
from mpslint.output.json import as_dict


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    return "".join(json.dumps(as_dict(d), ensure_ascii=False) + "\n" for d in diagnostics)
