"""From what the child recorded to a verdict: the report's JSON shape, its text form, the static cross-reference."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set

from mpslint.catalog import DOCS_URL
from mpslint.knowledge import silent_wrong
from mpslint.verify import memory, messages
from mpslint.verify.launcher import Options, Run

# The clocks a step is read from, in order of preference (see step_clock).
CLOCKS = ("optimizer", "batches", "forward")
SYNC_KINDS = ("item", "to_host", "data_dependent", "synchronize")

# Which runtime events confirm a static finding (rule code -> matching kinds).
# "error:<kind>" is an error of messages.error_kind <kind>; "error" any error.
CONFIRMED_BY: Dict[str, Set[str]] = {
    "MPS101": {"error"}, "MPS102": {"error"}, "MPS104": {"error"}, "MPS105": {"error"}, "MPS107": {"error"},
    "MPS108": {"error"}, "MPS109": {"error"}, "MPS110": {"error"}, "MPS111": {"error"}, "MPS112": {"error"},
    "MPS201": {"sync:item", "sync:to_host"},
    "MPS202": {"sync:to_host", "error:numpy"},
    "MPS203": {"sync:synchronize"},
    "MPS204": {"sync:item", "sync:data_dependent", "sync:to_host"},
    "MPS301": {"error:numpy"},
    "MPS302": {"error:device-mismatch"},
    "MPS303": {"error:float64"},
    "MPS501": {"fallback", "error:unimplemented"},
    "MPS502": {"fallback"},
    "MPS503": {"error", "warning:autocast-disabled"},
    "MPS504": {"error"},
    "MPS505": {"set-too-late"},  # an op without a kernel raised although this line had set the fallback switch
}

# The static rule about a variable set after torch read it (rules/MPS505.md).
SET_TOO_LATE = "MPS505"
# Why a write after the import could not be shown to have no effect in this run (see _set_after_import).
NOT_CONFIRMED = {
    "fallback-on": "torch loaded with the fallback already on{source}: ops without an MPS kernel run on the CPU "
                   "whatever this line sets{hint}",
    "no-missing-kernel": "no op without an MPS kernel ran while the value it set was in force",
    "does-not-enable": "its value does not turn the fallback on, so no op can show it",
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
    "unimplemented": "no MPS kernel: set PYTORCH_ENABLE_MPS_FALLBACK=1 before torch is imported to run it on the "
                     "CPU, or avoid the op",
    "dtype": "this MPS kernel does not take this dtype: cast (x.float()) or run this op on the CPU on purpose",
    "autocast-disabled": "MPS autocast takes torch.float16 or torch.bfloat16 (bfloat16 from torch 2.6, on macOS 14 "
                         "or newer): with this dtype PyTorch turned autocast off and the block ran in float32 (MPS503)",
    "restriction": "a limit inside this MPS kernel: change the shape (sizes that divide evenly, fewer than 65,536 "
                   "per dimension) or run this op on the CPU on purpose",
    "numpy": "copy to the host first: t.detach().cpu().numpy()",
    "backend": "this process group's backend has no mps support (gloo takes CPU tensors): run the collective on a "
               "CPU copy (c = t.cpu(); dist.all_reduce(c); t.copy_(c))",
    "capture": "Metal writes a GPU trace only with MTL_CAPTURE_ENABLED=1 in the environment: set it, or check "
               "torch.mps.profiler.is_metal_capture_enabled() before metal_capture",
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
    explicit = set(raw.get("explicit_fallbacks", []))
    fallbacks, syncs, warned, wrong = [], [], [], []
    events = raw.get("events", [])
    for event in sorted(events, key=lambda e: (_display(script, e.get("filename")) or "", e["row"] or 0,
                                                e["kind"], e["key"])):
        location = _location(script, event["row"], event.get("filename"))
        if event["kind"] == "fallback":
            fallbacks.append({"op": event["key"], "count": event["count"], "location": location,
                              "without_fallback": "runs on the CPU" if event["key"] in explicit
                              else "NotImplementedError"})
        elif event["kind"] == "warning":
            warned.append({"kind": event["key"], "count": event["count"], "location": location})
        elif event["kind"] == "wrong":
            wrong.append(_known_wrong(event["key"], event["count"], location))
        else:
            seen = event["steps"].get(clock, []) if clock else []
            hot = is_hot(seen, total)
            if hot and event.get("by_design", 0) == event["count"]:
                hot = False
                notes.append(f"{_where(location, script)}: the {event['key']} sync every step is GradScaler.step "
                             "reading found_inf, which PyTorch does on every device; not counted as hot")
            syncs.append({"kind": event["key"], "count": event["count"], "hot": hot, "location": location})
    limit = f"the script did not finish within {options.timeout:g} s" if options.timeout else None
    errors = [{"type": e["type"], "message": limit if e["type"] == "Timeout" and limit else e["message"],
               "location": _location(script, e.get("row"), e.get("filename"))}
              for e in raw.get("errors", [])]
    stuck = _stuck_at(run.fault, script)
    if run.raw is None or raw.get("status") == "running":
        partial = "; the report covers what ran until then" if run.raw is not None else ""
        where = f" (last at {script}:{stuck})" if stuck else ""
        if run.timed_out:
            errors.append({"type": "Timeout", "message": (limit or "the script did not finish within the timeout")
                           + where + partial, "location": _location(script, stuck)})
        elif run.returncode == 0:
            # Exit status 0 says the script finished; it left before the report was (a C extension's exit(),
            # say). That is no failure of the script, but the report lacks the end of the run.
            notes.append("the script exited (status 0) without letting mpslint finish its report"
                         + ("; the report covers what ran until its last periodic write, about a second before"
                            if run.raw is not None else "; nothing it did could be collected"))
        else:
            errors.append({"type": "Crash", "message": f"the script died (exit status {run.returncode}){where}"
                                                       + (partial or " without a report"),
                           "location": _location(script, stuck)})
    ops, on_device = raw.get("ops", 0), raw.get("ops_on_device", 0)
    reasons = []
    if errors:
        reasons.append("errors")
    if fallbacks and not allow_fallback:
        reasons.append("CPU fallbacks")
    if any(s["hot"] for s in syncs) and not allow_syncs:
        reasons.append("hot host syncs")
    if not errors and not raw.get("torch_imported", run.raw is None):
        reasons.append("the script never imported torch, so nothing ran on mps")
    elif not errors and not on_device:
        reasons.append(f"nothing ran on mps ({ops} torch ops, none with a tensor on mps): the usual cause is a "
                       "placement guarded by CUDA availability (torch.cuda.is_available(), or a flag set from it), "
                       "which is False on a Mac; choose the device with torch.backends.mps.is_available() too")
    failed = bool(reasons)
    fallback = raw.get("fallback")
    late = _set_after_import(raw, script, fallback)
    statuses = cross_reference(static or [], dict(raw, script_name=script), errors, fallbacks, syncs, late, warned)
    report = {
        "script": script,
        "device": "mps" if on_device else None,
        "simulated": bool(raw.get("simulated", options.simulate)),
        "torch_version": raw.get("torch_version", ""),
        "verdict": "fail" if failed else "pass",
        "reasons": reasons,
        "script_exit_code": raw.get("script_exit_code") if run.raw is not None else None,
        "duration_s": raw.get("duration_s", run.duration_s),
        "ops": ops,
        "ops_on_device": on_device,
        "fallback_setting": _fallback_setting(fallback, script),
        "fallbacks": fallbacks,
        "syncs": syncs,
        "errors": errors,
        "warnings": warned,
        "set_after_import": late,
        "known_wrong": wrong,
        "memory": _memory(raw, clock),
        "static": statuses,
    }
    notes.extend(_notes(raw, script, fallback, fallbacks))
    if clock is None and syncs:
        notes.append("no step was observed (no optimizer step, DataLoader batch or model call), "
                     "so no sync is marked hot")
    return Verdict(report, 1 if failed else 0, notes, clock, total)


def _known_wrong(entry_id: str, count: int, location: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    entry = silent_wrong.by_id()[entry_id]
    return {"id": entry_id, "count": count, "location": location, "title": entry["title"], "issue": entry["issue"],
            "releases": silent_wrong.releases(entry), "fixed_in": entry.get("fixed_in"), "advice": entry["advice"]}


def _memory(raw: Dict[str, Any], clock: Optional[str]) -> Optional[Dict[str, Any]]:
    """Device memory at each step of the step clock, and the growth rule's verdict (``memory``); None when the
    child sampled nothing (torch never imported)."""
    found = raw.get("memory")
    if not found:
        return None
    if not found.get("measured"):
        return {"measured": False, "reason": found.get("reason")}
    series = found.get("clocks", {}).get(clock) if clock else None
    if series is None:
        reason = f"the memory counters failed: {found['error']}" if found.get("error") else \
            "no step was observed (no optimizer step, DataLoader batch or model call), so nothing was sampled"
        return {"measured": False, "reason": reason}
    samples = series["samples"]
    return {"measured": True, "clock": clock, "steps_sampled": series["count"], "samples": samples,
            "peak_driver_bytes": series["peak_driver_bytes"], "peak_current_bytes": series["peak_current_bytes"],
            "growth": memory.growth(samples), "rule": memory.GROWTH_RULE}


def _fallback_setting(fallback: Optional[Dict[str, Any]], script: str) -> Optional[Dict[str, Any]]:
    if not fallback:
        return None
    location = _location(script, fallback.get("row"), fallback.get("filename"))
    return {"enabled": fallback["enabled"], "value": fallback["value"], "source": fallback["source"],
            "row": location["row"] if location and location["filename"] == script else None}


def _set_after_import(raw: Dict[str, Any], script: str,
                      fallback: Optional[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Each line that set a variable after torch had read it, and whether this run showed that it had no effect.

    Confirmed: an op without an MPS kernel raised NotImplementedError while
    the variable was on in ``os.environ`` without a break since this line
    turned it on. A removal is left out, as the static rule leaves it.
    """
    writes = raw.get("env_writes", [])
    events = raw.get("unimplemented", [])
    confirmed_by: Dict[int, List[int]] = {}  # write index -> the raises (indices in events) it was in force for
    for number, event in enumerate(events):
        index = event["fallback_write"]
        name = writes[index]["name"] if index is not None and index < len(writes) else None
        while index is not None and index >= 0:
            write = writes[index]
            if write["name"] == name:
                if not (write["after_import"] and write["enables"]):
                    break
                confirmed_by.setdefault(index, []).append(number)
            index -= 1
    by_line: Dict[tuple, Dict[str, Any]] = {}
    for index, write in enumerate(writes):
        if not write["after_import"] or write["value"] is None:
            continue
        location = _location(script, write["row"], write["filename"])
        entry = by_line.get((write["name"], write["filename"], write["row"]))
        if entry is None:
            entry = by_line[(write["name"], write["filename"], write["row"])] = {
                "variable": write["name"], "value": write["value"], "location": location, "rule": SET_TOO_LATE,
                "url": DOCS_URL.format(code=SET_TOO_LATE), "status": "unconfirmed", "reason": None, "raised": [],
                "_enables": False, "_events": set()}
        entry["value"] = write["value"]  # the line's last value
        entry["_enables"] = entry["_enables"] or write["enables"]
        entry["_events"].update(confirmed_by.get(index, []))  # a line run in a loop: each raise once
    late = []
    for entry in by_line.values():
        enables = entry.pop("_enables")
        for number in sorted(entry.pop("_events")):
            event = events[number]
            _add_raised(entry["raised"], event["op"], event["count"],
                        _location(script, event["row"], event["filename"]))
        if entry["raised"]:
            entry["status"] = "confirmed"
        elif fallback and fallback["enabled"]:
            entry["reason"] = "fallback-on"
        elif not enables:
            entry["reason"] = "does-not-enable"
        else:
            entry["reason"] = "no-missing-kernel"
        late.append(entry)
    return late


def _add_raised(raised: List[Dict[str, Any]], op: str, count: int, location: Optional[Dict[str, Any]]) -> None:
    for item in raised:
        if item["op"] == op and item["location"] == location:
            item["count"] += count
            return
    raised.append({"op": op, "count": count, "location": location})


def _notes(raw: Dict[str, Any], script: str, fallback: Optional[Dict[str, Any]],
           fallbacks: List[Dict[str, Any]]) -> List[str]:
    notes = []
    if fallback:
        state = "on" if fallback["enabled"] else "off"
        decided_at = _location(script, fallback.get("row"), fallback.get("filename"))
        where = _where(decided_at, script) if decided_at else fallback["source"]
        value = "unset" if fallback["value"] is None else f"={fallback['value']}"
        notes.append(f"PYTORCH_ENABLE_MPS_FALLBACK{value if value != 'unset' else ' unset'} when torch was imported "
                     f"(from {where}): CPU fallback {state}")
        missing = [f for f in fallbacks if f["without_fallback"] == "NotImplementedError"]
        if fallback["enabled"] and missing and fallback.get("source") != "script":
            first = missing[0]
            notes.append(f"without PYTORCH_ENABLE_MPS_FALLBACK=1 in your environment this script stops with "
                         f"NotImplementedError at {_where(first['location'], script)} ({first['op']} has no MPS "
                         "kernel); run with --no-fallback to see it")
    warned = raw.get("warned_fallbacks", {})
    decided = {f["op"] for f in fallbacks}
    for op in sorted(set(warned) - decided):
        notes.append(f"{op}: PyTorch warned that it fell back to the CPU, which the kernel table did not predict")
    for filename, row in raw.get("compile_calls", []):
        notes.append(f"{_display(script, filename)}:{row}: torch.compile runs eagerly under mpslint verify (Dynamo "
                     "does not compile while a dispatch mode records the ops), so this report describes eager "
                     "execution")
    stopped = raw.get("stopped")
    if stopped:
        notes.append(f"stopped after {stopped['budget']} as asked; the script did not run to its end")
    return notes


def _stuck_at(fault: str, script: str) -> Optional[int]:
    """The script's innermost line in a faulthandler dump (most recent call first), or None."""
    target = os.path.abspath(script)
    for line in (fault or "").splitlines():
        match = re.match(r'\s*File "(?P<file>.*)", line (?P<row>\d+)', line)
        if match and os.path.abspath(match.group("file")) == target:
            return int(match.group("row"))
    return None


def _display(script: str, filename: Optional[str]) -> Optional[str]:
    """The script as the user named it; other files relative to the current directory when below it."""
    if filename is None:
        return None
    if os.path.abspath(filename) == os.path.abspath(script):
        return script
    relative = os.path.relpath(filename)
    return filename if relative.startswith("..") else relative


def _where(location: Optional[Dict[str, Any]], script: str) -> str:
    return f"{location['filename']}:{location['row']}" if location else f"{script}:?"


def _location(script: str, row: Optional[int], filename: Optional[str] = None) -> Optional[Dict[str, Any]]:
    if row is None:
        return None
    return {"filename": _display(script, filename) if filename else script, "row": row}


def static_findings(script: str) -> List[Dict[str, Any]]:
    """The static findings of the script (all rules, default settings), as (code, rows) records."""
    from mpslint.config import Settings
    from mpslint.engine import check_text

    with open(script, encoding="utf-8") as handle:
        text = handle.read()
    result = check_text(text, script, Settings())
    return [{"code": d.code, "row": d.location.row, "end_row": d.end_location.row} for d in result.diagnostics]


def cross_reference(findings: Iterable[Dict[str, Any]], raw: Dict[str, Any], errors: List[Dict[str, Any]],
                    fallbacks: List[Dict[str, Any]], syncs: List[Dict[str, Any]],
                    late: Sequence[Dict[str, Any]] = (),
                    warned: Sequence[Dict[str, Any]] = ()) -> List[Dict[str, Any]]:
    """confirmed: a matching event on the finding's lines; not-reached: none of its lines ran; else not-observed."""
    observed: Dict[int, Set[str]] = {}

    script = raw.get("script_name")

    def add(location: Optional[Dict[str, Any]], tags: Iterable[str]) -> None:
        if location is not None and (script is None or location["filename"] == script):
            observed.setdefault(location["row"], set()).update(tags)

    for error in errors:
        kind = messages.error_kind(error["type"], error["message"])
        add(error["location"], {"error"} | ({f"error:{kind}"} if kind else set()))
    for error in raw.get("errors", []):  # placed in a module of the user's: its call in the script confirms too
        if script is not None and error.get("script_row") is not None and error.get("filename"):
            kind = messages.error_kind(error["type"], error["message"])
            add({"filename": script, "row": error["script_row"]}, {"error"} | ({f"error:{kind}"} if kind else set()))
    for fallback in fallbacks:
        add(fallback["location"], {"fallback"})
    for sync in syncs:
        add(sync["location"], {f"sync:{sync['kind']}"})
    for warning in warned:
        add(warning["location"], {f"warning:{warning['kind']}"})
    for write in late:
        if write["status"] == "confirmed":
            add(write["location"], {"set-too-late"})
    for event in raw.get("unimplemented", []):  # raised where seen, also when the script caught it
        add(_location(script, event["row"], event["filename"]) if script else None, {"error:unimplemented"})
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
    lines = [f"{r['verdict'].upper()}: {r['script']} on {where}, torch {r['torch_version'] or '(not imported)'}, "
             f"{r['duration_s']:.1f}s{steps}, {r['ops_on_device']} of {r['ops']} torch ops on mps"]
    if r["script_exit_code"]:
        lines.append(f"the script exited with status {r['script_exit_code']}")
    for reason in r["reasons"]:
        if reason not in ("errors", "CPU fallbacks", "hot host syncs"):
            lines.append(f"fail: {reason}")

    def loc(location: Optional[Dict[str, Any]]) -> str:
        cell = f"cell {location['cell']}:" if location and location.get("cell") else ""  # a notebook's cell
        return f"{location['filename']}:{cell}{location['row']}" if location else f"{r['script']}:?"

    if r["fallbacks"]:
        lines.append("CPU fallbacks:")
        for f in r["fallbacks"]:
            lines.append(f"  {loc(f['location'])}: {f['op']} ran on the CPU {_times(f['count'])}")
            lines.append(f"    advice: {ADVICE['fallback']}")
    late = r.get("set_after_import", [])
    if r.get("warnings"):
        lines.append("warnings:")
        for w in r["warnings"]:
            lines.append(f"  {loc(w['location'])}: autocast disabled on mps (\"In MPS autocast, but the target dtype is "
                         f"not supported. Disabling autocast.\") {_times(w['count'])}")
            lines.append(f"    advice: {ADVICE[w['kind']]}")
    if r.get("known_wrong"):
        lines.append(f"known silently wrong results in torch {r['torch_version']} (no error, wrong numbers):")
        for k in r["known_wrong"]:
            lines.append(f"  {loc(k['location'])}: {k['title']} {_times(k['count'])} ({k['issue']}; {k['releases']})")
            lines.append(f"    advice: {k['advice']}")
    if r["errors"]:
        lines.append("errors:")
        for e in r["errors"]:
            lines.append(f"  {loc(e['location'])}: {e['type']}: {e['message']}")
            kind = messages.error_kind(e["type"], e["message"])
            if kind:
                lines.append(f"    advice: {ADVICE[kind]}")
            op = messages.unimplemented_op(e["message"])
            for w in late:
                if any(x["op"] == op and x["location"] == e["location"] for x in w["raised"]):
                    lines.append(f"    cause: {loc(w['location'])} sets {w['variable']} after torch was imported "
                                 f"({w['rule']}, below)")
    if late:
        lines.append("set after torch was imported:")
        for w in late:
            lines.append(f"  {loc(w['location'])}: {w['variable']}={w['value']} is set after torch was imported: "
                         "PyTorch read it once, while torch loaded, so this line has no effect")
            for x in w["raised"]:
                lines.append(f"    confirmed: {x['op']} still raised NotImplementedError at {loc(x['location'])} "
                             f"{_times(x['count'])}")
            if w["reason"]:
                lines.append(f"    not confirmed in this run: {_not_confirmed(w['reason'], r)}")
            lines.append(f"    {w['rule']}: set it before the first torch import, or where Python starts "
                         f"({w['variable']}={w['value']} python {r['script']}); {w['url']}")
    lines.extend(_memory_lines(r.get("memory"), verdict.step_clock))
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


def _memory_lines(found: Optional[Dict[str, Any]], clock: Optional[str]) -> List[str]:
    if not found:
        return []
    if not found["measured"]:
        return [f"memory: not measured: {found['reason']}"]
    head, *growing = memory.growth_lines(found, _clock_name(clock))
    lines = [head]
    growth = found["growth"]
    if not growth["judged"]:
        lines.append(f"  growth not judged: {growth['reason']}")
    lines.extend(f"warning: {line}" for line in growing)
    if growing:
        lines.append(f"    advice: {memory.ADVICE}")
    return lines


def _not_confirmed(reason: str, r: Dict[str, Any]) -> str:
    setting = r.get("fallback_setting") or {}
    if setting.get("source") == "script":
        source = f" (set by {r['script']}:{setting['row']})" if setting.get("row") else " (set by the script)"
        hint = ""
    else:  # mpslint verify's default
        source, hint = "", "; run with --no-fallback to see them raise"
    return NOT_CONFIRMED[reason].format(source=source, hint=hint)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _clock_name(clock: Optional[str]) -> str:
    return {"optimizer": "optimizer steps", "batches": "DataLoader batches", "forward": "model calls"}.get(clock or "", "")
