"""Which lines of the script ran: a static finding on a line that never ran is "not-reached".

Installed before the script starts, so it must not import torch (see ``child``).
"""

from __future__ import annotations

import sys
import threading
from typing import Set


def install(script: str, lines: Set[int]) -> None:
    """Add to ``lines`` every line of ``script`` (as its code objects name it) that runs."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:  # Python >= 3.12: each location reports once, then is disabled
        tool = monitoring.PROFILER_ID
        try:
            monitoring.use_tool_id(tool, "mpslint-verify")
        except ValueError:  # the id is taken (a profiler or coverage runs the verifier): fall back to settrace
            pass
        else:
            def on_line(code, line):
                if code.co_filename == script:
                    lines.add(line)
                return monitoring.DISABLE

            monitoring.register_callback(tool, monitoring.events.LINE, on_line)
            monitoring.set_events(tool, monitoring.events.LINE)
            return

    def local(frame, event, arg):
        if event == "line":
            lines.add(frame.f_lineno)
        return local

    def global_trace(frame, event, arg):
        if frame.f_code.co_filename == script:
            lines.add(frame.f_lineno)
            return local
        return None

    sys.settrace(global_trace)
    threading.settrace(global_trace)


def remove() -> None:
    sys.settrace(None)
    threading.settrace(None)  # type: ignore[arg-type]
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None and monitoring.get_tool(monitoring.PROFILER_ID) == "mpslint-verify":
        monitoring.set_events(monitoring.PROFILER_ID, 0)
        monitoring.free_tool_id(monitoring.PROFILER_ID)
