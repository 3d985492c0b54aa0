"""The report as GitHub-flavoured Markdown, sized for a pull-request comment.

The summary stays open; long lists fold into ``<details>`` sections and are
capped (a GitHub comment holds 65,536 characters), each cap saying how many
entries it left out and which command lists them all. Rule codes link to the
rule pages online. Text from the checked code is escaped: a message's
`backquoted` spans become code spans (whose content Markdown never
interprets), everything else has its Markdown and HTML characters escaped.
"""

from __future__ import annotations

import re
import shlex
from typing import List

from mpslint import __version__
from mpslint.catalog import DOCS_URL
from mpslint.report.as_html import entry_points_note, op_status, recount_note
from mpslint.report.impact import LABELS
from mpslint.report import runtime
from mpslint.report.model import Report, RuntimeRun
from mpslint.report.verdict import directories, plural

TOP_DIRECTORIES = 10
MAX_FILES = 50  # rows of the file table
MAX_FINDINGS = 150  # findings listed in all; a comment has room for about that many messages
MAX_FINDINGS_PER_FILE = 10
MAX_BLOCKERS_PER_ENTRY = 3  # as the fix run's summary lists them

# What can start inline markup mid-line; text never starts a line here, so `#`, `-`, `+` are safe.
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def text(value: object) -> str:
    """Plain text: HTML and Markdown characters cannot start markup."""
    escaped = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")
    return _SPECIAL.sub(r"\\\1", escaped)


def code(value: object, *, table: bool = False) -> str:
    """A code span that holds any text: a fence longer than any run of backquotes inside (CommonMark).

    In a table cell a pipe ends the cell even inside a code span, so it is escaped there (GFM).
    """
    content = str(value).replace("\n", " ")
    if table:
        content = content.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if content.startswith("`") or content.endswith("`") or longest else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def message(value: str) -> str:
    """A rule message: its `backquoted` spans as code, the rest as text."""
    pieces = str(value).split("`")
    if len(pieces) % 2 == 0:  # an unpaired backquote: no code spans at all
        return text(value)
    return "".join(code(p) if i % 2 else text(p) for i, p in enumerate(pieces))


def _cell_message(value: str) -> str:
    """``message`` inside a table cell, where a pipe ends the cell even in a code span."""
    pieces = str(value).split("`")
    if len(pieces) % 2 == 0:
        return text(value)
    return "".join(code(p, table=True) if i % 2 else text(p) for i, p in enumerate(pieces))


def rule_link(code_: str) -> str:
    return f"[{text(code_)}]({DOCS_URL.format(code=code_)})"


def render(report: Report) -> str:
    c = report.counts
    out: List[str] = ["## mpslint: MPS migration plan", "", f"**{message(report.verdict_text)}**", ""]
    safe, unsafe = report.fix, report.fix_unsafe
    fixed, fixed_unsafe = (safe.fixed if safe else 0), (unsafe.fixed if unsafe else 0)
    out += [
        "| | findings |",
        "|---|---:|",
        f"| fail on MPS | {c.fails} |",
        f"| slow MPS down | {c.slows} |",
        f"| other | {c.other} |",
        f"| fixed by `mpslint --fix` | {fixed} |",
        f"| fixed by `mpslint --fix --unsafe-fixes` | {fixed_unsafe} |",
        f"| left for a human after both | {unsafe.remaining if unsafe else c.findings} |",
        "",
        f"{plural(c.findings, 'finding')} in {report.files_with_findings} of "
        f"{plural(report.files_checked, 'file')} checked ({text(' '.join(report.paths) or '.')}), "
        f"fixes and version gates target torch {text(', '.join(report.fix_floors) or '-')}; "
        f"op coverage checked against torch {text(', '.join(report.floors) or '-')}.",
        "",
    ]
    if recount_note(report):
        out += [message(recount_note(report)), ""]
    if report.errors:
        out += [f"{plural(len(report.errors), 'path')} could not be checked:", ""]
        out += [f"- {code(path)}: {text(msg)}" for path, msg in report.errors] + [""]
    out += _entry_points(report) + _where(report) + _what(report) + _ops(report) + _runtime(report) + _next(report)
    out += ["", f"<sub>mpslint {text(__version__)} · `mpslint report --output-format markdown`</sub>", ""]
    return "\n".join(out)


def _entry_points(report: Report) -> List[str]:
    if not report.entry_points:
        return []
    out = ["### Entry points", "", message(entry_points_note(report)), ""]
    folded = len(report.entry_points) > TOP_DIRECTORIES
    if folded:
        out += [f"<details><summary>{plural(len(report.entry_points), 'entry point')}, blocked ones first</summary>", ""]
    out += ["| entry point | after `--fix` | what blocks it, or where its device is chosen |", "|---|---|---|"]
    for r in report.entry_points[:MAX_FILES]:
        if r.blockers:
            what = "<br>".join(
                f"{rule_link(b.code)} {code(b.path + ':' + (f'cell {b.cell}:' if b.cell else '') + str(b.row), table=True)}"
                f" {_cell_message(b.message)}{text(f' (imported at {b.imported_at})') if b.imported_at else ''}"
                for b in r.blockers[:MAX_BLOCKERS_PER_ENTRY])
            more = r.blocker_count - min(len(r.blockers), MAX_BLOCKERS_PER_ENTRY)
            what += f"<br>and {more} more" if more > 0 else ""
        else:
            what = text(r.status)
        state = "can reach MPS" if r.reaches else ("blocked" if r.blockers else "no device chosen")
        out.append(f"| {code(r.path, table=True)} | {state} | {what} |")
    if len(report.entry_points) > MAX_FILES:
        out.append(f"\n{len(report.entry_points) - MAX_FILES} more: `mpslint report --output-format json` lists them all.")
    if folded:
        out += ["", "</details>"]
    return out + [""]


def _where(report: Report) -> List[str]:
    if not report.files:
        return []
    out = ["### Where", "", "| directory | fail | slow | other | files |", "|---|---:|---:|---:|---:|"]
    for d in report.directories[:TOP_DIRECTORIES]:
        c = d.counts
        out.append(f"| {code(d.path, table=True)} | {c.fails} | {c.slows} | {c.other} | {d.files} |")
    if len(report.directories) > TOP_DIRECTORIES:
        out.append(f"\nThe {TOP_DIRECTORIES} most blocking of {directories(len(report.directories))}.")
    out += ["", f"<details><summary>{plural(len(report.files), 'file')} with findings, most blocking first</summary>",
            "", "| file | fail | slow | other | fixed by `--fix` |", "|---|---:|---:|---:|---:|"]
    for f in report.files[:MAX_FILES]:
        c = f.counts
        out.append(f"| {code(f.path, table=True)} | {c.fails} | {c.slows} | {c.other} | {c.fixed} |")
    if len(report.files) > MAX_FILES:
        out.append(f"\nand {len(report.files) - MAX_FILES} more files.")
    out += ["", "</details>", ""]
    out += ["<details><summary>Findings by file</summary>", ""]
    listed = 0
    for f in report.files:
        if listed >= MAX_FINDINGS:
            break
        out.append(f"**{code(f.path)}**")
        out.append("")
        shown = f.findings[:min(MAX_FINDINGS_PER_FILE, MAX_FINDINGS - listed)]
        for d in shown:
            marks = {"safe": " [\\*]", "unsafe": " [-]"}.get(d.fix or "", "")
            runtime = f" (runtime: {d.runtime})" if d.runtime else ""
            out.append(f"- {text(d.where)} {rule_link(d.code)}{marks} {message(d.message)}{runtime}")
        listed += len(shown)
        hidden = f.counts.findings - len(shown)
        if hidden:
            out.append(f"- and {hidden} more: `mpslint {shlex.quote(f.path)}`")
        out.append("")
    if listed < report.counts.findings:
        out.append(f"{report.counts.findings - listed} findings are not listed here; "
                   f"`mpslint {' '.join(shlex.quote(p) for p in report.paths) or '.'}` lists every one.")
        out.append("")
    out += ["</details>", ""]
    return out


def _what(report: Report) -> List[str]:
    if not report.rules:
        return []
    out = ["### What", "", "| rule | impact | findings | files | `--fix` | `--unsafe-fixes` |",
           "|---|---|---:|---:|---:|---:|"]
    for r in report.rules:
        out.append(f"| {rule_link(r.code)} {text(r.name)} | {LABELS[r.impact]} | {r.count} | {r.files} | "
                   f"{r.fixed} | {r.fixed_unsafe} |")
    return out + [""]


def _ops(report: Report) -> List[str]:
    if not report.ops:
        return []
    out = ["### Ops without an MPS kernel", "", "| op | called as | calls | at the project's torch floor |",
           "|---|---|---:|---|"]
    for r in report.ops:
        calls = ", ".join(code(c, table=True) for c in r.calls)
        out.append(f"| {code('aten::' + r.op, table=True)} | {calls} | {r.count} | {text(op_status(r))} |")
    return out + [""]


def _runtime(report: Report) -> List[str]:
    if not report.runtime:
        return []
    out = ["### Runtime (`mpslint verify`)", ""]
    for run in report.runtime:
        out += _run(run)
    return out


def _run(run: RuntimeRun) -> List[str]:
    where = "mps (simulated)" if run.simulated else "mps"
    out = [f"- **{text(run.verdict.upper())}** {code(run.script)} on {where}, torch {text(run.torch_version)}"]
    for f in run.fallbacks:
        out.append(f"  - line {text(_row(f))}: CPU fallback {code(f.get('op', '?'))} × {text(f.get('count'))}")
    for s in run.syncs:
        if s.get("hot"):
            out.append(f"  - line {text(_row(s))}: host sync in most steps {code(s.get('kind', '?'))} "
                       f"× {text(s.get('count'))}")
    for err in run.errors:
        out.append(f"  - line {text(_row(err))}: {text(err.get('type', 'error'))}: {text(err.get('message', ''))}")
    for k in run.known_wrong:
        out.append(f"  - line {text(_row(k))}: known silently wrong result: {text(k.get('title', '?'))} "
                   f"× {text(k.get('count'))} ({text(k.get('issue', ''))}; {text(k.get('releases', ''))})")
    out += [f"  - {text(line)}" for line in runtime.memory_lines(run)]
    confirmed = [s for s in run.static if s.get("status") == "confirmed"]
    if confirmed:
        out.append("  - confirms " + ", ".join(f"{text(s.get('code'))} line {text(s.get('row'))}" for s in confirmed))
    return out + [""]


def _row(event: dict) -> object:
    location = event.get("location")
    return location.get("row", "?") if isinstance(location, dict) else "?"


def _next(report: Report) -> List[str]:
    if not report.next_steps:
        return []
    out = ["### Next steps", ""]
    for i, step in enumerate(report.next_steps, 1):
        out += [f"{i}. **{message(step.title)}**: {message(step.why)}", "", "   ```sh"]
        out += [f"   {line}" for line in step.command.splitlines()]
        out += ["   ```", ""]
    return out
