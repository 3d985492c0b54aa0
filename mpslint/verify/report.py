"""From what the child recorded to a verdict: the report's JSON shape, its text form, the static cross-reference."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set

from mpslint.verify import messages
from mpslint.verify.launcher import Options, Run

# The clocks a step is read from, in order of preference (see step_clock).
CLOCKS = ("optimizer", "batches", "forward")
SYNC_KINDS = ("item", "to_host", "data_dependent", "synchronize")

# Which runtime events confirm a static finding (rule code -> matching kinds).
# "error:<kind>" is an error of messages.error_kind <kind>; "error" any error.
CONFIRMED_BY: Dict[str, Set[str]] = {
    "MPS101": {"error"}, "MPS102": {"error"}, "MPS104": {"error"}, "MPS105": {"error"}, "MPS107": {"error"},
    "MPS108": {"error"},
    "MPS201": {"sync:item", "sync:to_host"},
    "MPS202": {"sync:to_host", "error:numpy"},
    "MPS203": {"sync:synchronize"},
    "MPS204": {"sync:item", "sync:data_dependent", "sync:to_host"},
    "MPS301": {"error:numpy"},
    "MPS302": {"error:device-mismatch"},
    "MPS303": {"error:float64"},
    "MPS501": {"fallback", "error:unimplemented"},
    "MPS502": {"fallback"},
    "MPS503": {"error"},
    "MPS504": {"error"},
}

ADVICE = {
    "fallback": "no MPS kernel in this torch: the op runs on the CPU with a copy each way; "
                "avoid it in the loop, run it on the CPU on purpose, or upgrade torch",
    "item": "waits for the GPU every step: accumulate on the device and read the value every N steps",
    "to_host": "copies to the host every step: keep the tensor on the device, or copy every N steps",
    "data_dependent": "the result's size depends on the data, so the host waits for the GPU: "
                      "use fixed-shape ops (torch.where, masked_fill, a multiplied mask)",
    "synchronize": "stalls the GPU pipeline every step: synchronize only around timing code",
    "float64": "MPS has no float64: use float32 (torch.from_numpy(a).float(), a.astype(np.float32), dtype=torch.float32)",
    "device-mismatch": "move every input to the model's device: batch = batch.to(device)",
    "unimplemented": "no MPS kernel: set PYTORCH_ENABLE_MPS_FALLBACK=1 to run it on the CPU, or avoid the op",
    "numpy": "copy to the host first: t.detach().cpu().numpy()",
}


def step_clock(clocks: Dict[str, int]) -> Optional[str]:
    """The clock that defines a step: optimizer steps, else DataLoader batches, else top-level forward calls."""
    for name in CLOCKS:
        if clocks.get(name, 0) > 0:
            return name
    return None


def is_hot(steps_seen: Sequence[int], total: int) -> bool:
    """Repeats in most steps: seen in at least two steps and in more than half of them.

    An event before the first step is in step 0, so a loop of N steps spans
    N + 1 windows; a sync at the end of each of N steps is seen in N of them.
    """
    distinct = len(set(steps_seen))
    return total >= 2 and distinct >= 2 and 2 * distinct > total


@dataclass
class Verdict:
    report: Dict[str, Any]
    exit_code: int  # 0 pass, 1 fail
    notes: List[str]
    step_clock: Optional[str]
    steps: int


def build(options: Options, run: Run, *, allow_fallback: bool = False, allow_syncs: bool = False,
          static: Optional[List[Dict[str, Any]]] = None) -> Verdict:
    raw = run.raw or {}
    script = options.script
    clocks = raw.get("clocks", {})
    notes = list(raw.get("notes", []))
    clock = step_clock(clocks)
    total = clocks.get(clock, 0) if clock else 0
    fallbacks, syncs = [], []
    for event in sorted(raw.get("events", []), key=lambda e: (e["row"] or 0, e["kind"], e["key"])):
        location = _location(script, event["row"])
        if event["kind"] == "fallback":
            fallbacks.append({"op": event["key"], "count": event["count"], "location": location})
        else:
            seen = event["steps"].get(clock, []) if clock else []
            hot = is_hot(seen, total)
            if hot and event.get("by_design", 0) == event["count"]:
                hot = False
                notes.append(f"{script}:{event['row']}: the {event['key']} sync every step is GradScaler.step "
                             "reading found_inf, which PyTorch does on every device; not counted as hot")
            syncs.append({"kind": event["key"], "count": event["count"], "hot": hot, "location": location})
    limit = f"the script did not finish within {options.timeout:g} s" if options.timeout else None
    errors = [{"type": e["type"], "message": limit if e["type"] == "Timeout" and limit else e["message"],
               "location": _location(script, e.get("row"))}
              for e in raw.get("errors", [])]
    exit_code_script = raw.get("exit_code") if run.raw is not None else None
    if run.raw is None:
        if run.timed_out:
            errors.append({"type": "Timeout", "message": limit or "the script did not finish within the timeout",
                           "location": None})
        else:
            errors.append({"type": "Crash", "message": f"the script died without a report "
                                                       f"(exit status {run.returncode})", "location": None})
    failed = bool(errors) or (bool(fallbacks) and not allow_fallback) or \
        (any(s["hot"] for s in syncs) and not allow_syncs)
    statuses = cross_reference(static or [], raw, errors, fallbacks, syncs)
    report = {
        "script": script,
        "device": "mps",
        "simulated": bool(raw.get("simulated", options.simulate)),
        "torch_version": raw.get("torch_version", ""),
        "verdict": "fail" if failed else "pass",
        "exit_code": exit_code_script,
        "duration_s": raw.get("duration_s", run.duration_s),
        "fallbacks": fallbacks,
        "syncs": syncs,
        "errors": errors,
        "static": statuses,
    }
    if clock is None and syncs:
        notes.append("no step was observed (no optimizer step, DataLoader batch or model call), "
                     "so no sync is marked hot")
    return Verdict(report, 1 if failed else 0, notes, clock, total)


def _location(script: str, row: Optional[int]) -> Optional[Dict[str, Any]]:
    return {"filename": script, "row": row} if row is not None else None


def static_findings(script: str) -> List[Dict[str, Any]]:
    """The static findings of the script (all rules, default settings), as (code, rows) records."""
    from mpslint.config import Settings
    from mpslint.engine import check_text

    with open(script, encoding="utf-8") as handle:
        text = handle.read()
    result = check_text(text, script, Settings())
    return [{"code": d.code, "row": d.location.row, "end_row": d.end_location.row} for d in result.diagnostics]


def cross_reference(findings: Iterable[Dict[str, Any]], raw: Dict[str, Any], errors: List[Dict[str, Any]],
                    fallbacks: List[Dict[str, Any]], syncs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """confirmed: a matching event on the finding's lines; not-reached: none of its lines ran; else not-observed."""
    observed: Dict[int, Set[str]] = {}

    def add(location: Optional[Dict[str, Any]], tags: Iterable[str]) -> None:
        if location is not None:
            observed.setdefault(location["row"], set()).update(tags)

    for error in errors:
        kind = messages.error_kind(error["type"], error["message"])
        add(error["location"], {"error"} | ({f"error:{kind}"} if kind else set()))
    for fallback in fallbacks:
        add(fallback["location"], {"fallback"})
    for sync in syncs:
        add(sync["location"], {f"sync:{sync['kind']}"})
    ran = set(raw.get("lines", []))
    statuses = []
    for finding in findings:
        rows = range(finding["row"], finding.get("end_row", finding["row"]) + 1)
        wanted = CONFIRMED_BY.get(finding["code"], set())
        if any(wanted & observed.get(row, set()) for row in rows):
            status = "confirmed"
        elif any(row in ran for row in rows):
            status = "not-observed"
        else:
            status = "not-reached"
        statuses.append({"code": finding["code"], "row": finding["row"], "status": status})
    return statuses


def render_json(verdict: Verdict) -> str:
    return json.dumps(verdict.report, indent=2)


def render_text(verdict: Verdict) -> str:
    r = verdict.report
    where = "mps (simulated)" if r["simulated"] else "mps"
    steps = f", {verdict.steps} steps ({_clock_name(verdict.step_clock)})" if verdict.step_clock else ""
    lines = [f"{r['verdict'].upper()}: {r['script']} on {where}, torch {r['torch_version']}, "
             f"{r['duration_s']:.1f}s{steps}"]

    def loc(location: Optional[Dict[str, Any]]) -> str:
        cell = f"cell {location['cell']}:" if location and location.get("cell") else ""  # a notebook's cell
        return f"{location['filename']}:{cell}{location['row']}" if location else f"{r['script']}:?"

    if r["fallbacks"]:
        lines.append("CPU fallbacks:")
        for f in r["fallbacks"]:
            lines.append(f"  {loc(f['location'])}: {f['op']} ran on the CPU {_times(f['count'])}")
            lines.append(f"    advice: {ADVICE['fallback']}")
    if r["errors"]:
        lines.append("errors:")
        for e in r["errors"]:
            lines.append(f"  {loc(e['location'])}: {e['type']}: {e['message']}")
            kind = messages.error_kind(e["type"], e["message"])
            if kind:
                lines.append(f"    advice: {ADVICE[kind]}")
    hot = [s for s in r["syncs"] if s["hot"]]
    if hot:
        lines.append("hot host syncs (in most steps):")
        for s in hot:
            lines.append(f"  {loc(s['location'])}: {s['kind']} {_times(s['count'])}")
            lines.append(f"    advice: {ADVICE[s['kind']]}")
    cold = [s for s in r["syncs"] if not s["hot"]]
    if cold:
        lines.append("other host syncs: " + ", ".join(f"{loc(s['location'])} {s['kind']} x{s['count']}" for s in cold))
    if r["static"]:
        lines.append("static findings: " + ", ".join(
            f"{s['code']} {'cell %s ' % s['cell'] if s.get('cell') else ''}line {s['row']} {s['status']}" for s in r["static"]))
    for note in verdict.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _clock_name(clock: Optional[str]) -> str:
    return {"optimizer": "optimizer steps", "batches": "DataLoader batches", "forward": "model calls"}.get(clock or "", "")
