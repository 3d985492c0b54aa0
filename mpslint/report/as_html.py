"""The report as one self-contained HTML page.

Nothing is loaded when the page opens: the styles are inline, the charts are
inline SVG, there is no script and no font, and every link is an anchor in the
page (the rule pages are bundled, so they work offline too). The page reads the
same without CSS, prints (``@media print``) and follows the reader's dark mode
(``prefers-color-scheme``). Every string that comes from the checked code, a
path or a verify report goes through ``escape``.
"""

from __future__ import annotations

from html import escape
from typing import Iterable, List, Optional

from mpslint import __version__
from mpslint.report import charts, runtime
from mpslint.report.impact import FAILS, LABELS, OTHER, SLOWS
from mpslint.report.model import Counts, FileRow, OpRow, Report, RuntimeRun
from mpslint.report.verdict import directories, plural

TOP_DIRECTORIES = 15  # bars in the "where" chart; the file table lists every file
# Files whose findings the page lists (most blocking first): with at most --max-findings each, this
# bounds the page on a repository with thousands of files with findings; the rest are counted.
MAX_FILE_SECTIONS = 100

STYLE = """
:root { color-scheme: light dark; --bg: #fff; --fg: #1d1f23; --muted: #5b6270; --line: #d9dce1; --card: #f5f6f8;
  --fails: #c9372c; --slows: #d98a00; --other: #8a94a6; --fixed: #1f8a4c; --unsafe: #7fbf96; --left: #c3c8d0;
  --track: #eef0f3; --link: #0b62c4; --code: #f0f1f4; --target: #fff6d6; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #15171b; --fg: #e4e6ea; --muted: #a0a7b4; --line: #343841; --card: #1e2126;
    --fails: #ff6b5e; --slows: #ffb84d; --other: #8f99ab; --fixed: #4cc47f; --unsafe: #2f7a4d; --left: #4a4f59;
    --track: #23262c; --link: #7ab4ff; --code: #23262c; --target: #3a3420; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1000px; padding: 24px; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
a { color: var(--link); }
h1 { font-size: 1.6em; margin: 0 0 4px; } h2 { margin-top: 2em; border-bottom: 1px solid var(--line); }
h3 { margin-bottom: 4px; overflow-wrap: break-word; }
.meta, .note { color: var(--muted); }
.verdict { font-size: 1.25em; font-weight: 600; margin: 16px 0; padding: 12px 16px; border-radius: 6px;
  background: var(--card); border-left: 6px solid var(--other); }
.verdict-work, .verdict-fix, .verdict-unsafe-fix, .verdict-unread { border-left-color: var(--fails); }
.verdict-runs { border-left-color: var(--slows); } .verdict-clean { border-left-color: var(--fixed); }
.numbers { display: flex; gap: 12px; flex-wrap: wrap; margin: 12px 0; }
.number { flex: 1 1 200px; background: var(--card); border-radius: 6px; padding: 10px 14px; }
.number b { display: block; font-size: 2em; line-height: 1.2; }
.number.fails b { color: var(--fails); } .number.slows b { color: var(--slows); }
.number.fixed b { color: var(--fixed); }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.path { overflow-wrap: break-word; min-width: 10em; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; }
code { background: var(--code); padding: 0 3px; border-radius: 3px; }
pre { background: var(--code); padding: 10px 12px; border-radius: 6px; overflow-x: auto; white-space: pre-wrap; }
pre code { background: none; padding: 0; }
.chart-box, .table-box { overflow-x: auto; }
.chart { display: block; max-width: 100%; height: auto; margin: 8px 0; font-size: 12px; }
@media (max-width: 720px) {
  .chart { width: var(--chart-width); max-width: none; }
}
.chart .label, .chart .value { fill: var(--fg); } .chart .track { fill: var(--track); }
.chart .fails { fill: var(--fails); } .chart .slows { fill: var(--slows); } .chart .other { fill: var(--other); }
.chart .fixed { fill: var(--fixed); } .chart .unsafe { fill: var(--unsafe); } .chart .left { fill: var(--left); }
.chart a .label { fill: var(--link); text-decoration: underline; }
.legend { display: flex; gap: 16px; flex-wrap: wrap; color: var(--muted); font-size: 0.9em; }
.legend span::before { content: ""; display: inline-block; width: 10px; height: 10px; margin-right: 5px;
  border-radius: 2px; background: var(--sw); }
.sw-fails { --sw: var(--fails); } .sw-slows { --sw: var(--slows); } .sw-other { --sw: var(--other); }
.sw-fixed { --sw: var(--fixed); } .sw-unsafe { --sw: var(--unsafe); } .sw-left { --sw: var(--left); }
.badge { display: inline-block; font-size: 0.8em; padding: 0 6px; border-radius: 9px; border: 1px solid var(--line);
  white-space: nowrap; }
.badge.fails { border-color: var(--fails); color: var(--fails); }
.badge.slows { border-color: var(--slows); color: var(--slows); }
.badge.confirmed, .badge.pass { border-color: var(--fixed); color: var(--fixed); }
.badge.fail { border-color: var(--fails); color: var(--fails); }
ol.findings { padding-left: 0; list-style: none; } ol.findings li { margin: 6px 0; }
.loc { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: var(--muted); }
section.file, article.rule { scroll-margin-top: 12px; }
:target { background: var(--target); }
nav ol { columns: 2; }
footer { margin-top: 3em; color: var(--muted); font-size: 0.9em; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; } nav { display: none; }
  a { color: inherit; text-decoration: none; } section.file, article.rule, tr, .chart { break-inside: avoid; }
  h2 { break-after: avoid; } pre { white-space: pre-wrap; }
}
"""


def e(value: object) -> str:
    return escape(str(value), quote=True)


def path_html(path: str) -> str:
    """A path that may wrap after a ``/`` only: never one character per line on a narrow screen."""
    return e(path).replace("/", "/<wbr>")


def render(report: Report) -> str:
    parts: List[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>mpslint report: {e(' '.join(report.paths) or '.')}</title>",
        f"<style>{STYLE}</style></head><body>",
        "<header><h1>MPS migration plan</h1>",
        f'<p class="meta">Checked <code>{e(" ".join(report.paths) or ".")}</code>: '
        f"{e(plural(report.files_checked, 'file'))}, {report.files_with_findings} with findings; "
        f"fixes and version gates target torch {e(', '.join(report.fix_floors) or '-')}; op coverage checked against "
        f"torch {e(', '.join(report.floors) or '-')}; mpslint {e(__version__)}</p></header>",
        _nav(report),
        "<main>",
        _verdict(report),
        _entry_points(report),
        _where(report),
        _what(report),
        _ops(report),
        _runtime(report),
        _next(report),
        _findings(report),
        _rule_pages(report),
        "</main>",
        '<footer>Generated by <code>mpslint report</code>. The rule pages above are what '
        "<code>mpslint rule CODE</code> prints; the page loads nothing from the network.</footer>",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _nav(report: Report) -> str:
    links = [("verdict", "Verdict"), ("entry-points", "Entry points"), ("where", "Where"), ("what", "What"), ("ops", "Ops without an MPS kernel"),
             ("runtime", "Runtime"), ("next", "Next steps"), ("findings", "Findings by file"), ("rules", "Rule pages")]
    items = "".join(f'<li><a href="#{key}">{e(title)}</a></li>' for key, title in links)
    return f'<nav aria-label="Contents"><ol>{items}</ol></nav>'


def _legend(*keys: str) -> str:
    names = {FAILS: LABELS[FAILS], SLOWS: LABELS[SLOWS], OTHER: LABELS[OTHER], "fixed": "fixed by mpslint --fix",
             "unsafe": "fixed with --unsafe-fixes", "left": "left for a human"}
    return '<p class="legend">' + "".join(f'<span class="sw-{k}">{e(names[k])}</span>' for k in keys) + "</p>"


def _impact_segments(c: Counts) -> list:
    return [(FAILS, c.fails, LABELS[FAILS]), (SLOWS, c.slows, LABELS[SLOWS]), (OTHER, c.other, LABELS[OTHER])]


def _verdict(report: Report) -> str:
    c = report.counts
    safe, unsafe = report.fix, report.fix_unsafe
    fixed = safe.fixed if safe else 0
    fixed_unsafe = unsafe.fixed if unsafe else 0
    extra = max(0, fixed_unsafe - fixed)
    more = f"; {extra} more with <code>--unsafe-fixes</code>" if extra else ""
    numbers = (
        '<div class="numbers">'
        f'<div class="number fails"><b>{c.fails}</b>{"finding fails" if c.fails == 1 else "findings fail"} on MPS</div>'
        f'<div class="number slows"><b>{c.slows}</b>'
        f'{"finding slows" if c.slows == 1 else "findings slow"} MPS down</div>'
        f'<div class="number fixed"><b>{fixed}</b>fixed by <code>mpslint --fix</code>{more}</div>'
        "</div>"
    )
    chart = ""
    if c.findings:
        left = unsafe.remaining if unsafe else c.findings
        chart = charts.bars([
            charts.Bar("all findings", _impact_segments(c)),
            charts.Bar("after the fixes", [("fixed", fixed, "fixed by mpslint --fix"),
                                           ("unsafe", extra, "fixed with --unsafe-fixes"),
                                           ("left", left, "left for a human")]),
        ], title="Findings by impact, and what the fixes leave", scale=max(c.findings, fixed_unsafe + left))
        chart += _legend(FAILS, SLOWS, OTHER, "fixed", "unsafe", "left")
    remaining = ""
    if safe and c.findings:
        remaining = (f'<p>{e(plural(c.findings, "finding"))} in all. <code>mpslint --fix</code> fixes {safe.fixed} and '
                     f"leaves {safe.remaining} ({safe.remaining_fails} failing); with <code>--unsafe-fixes</code> "
                     f"{unsafe.fixed if unsafe else 0} are fixed and {unsafe.remaining if unsafe else 0} left "
                     f"({unsafe.remaining_fails if unsafe else 0} failing).{_recount(report)}</p>")
    errors = ""
    if report.errors:
        items = "".join(f"<li><code>{e(path)}</code>: {e(message)}</li>" for path, message in report.errors)
        errors = f'<p class="note">{e(plural(len(report.errors), "path"))} could not be checked:</p><ul>{items}</ul>'
    return (f'<section id="verdict"><h2>Verdict</h2><p class="verdict verdict-{e(report.verdict)}">'
            f"{_md_code(report.verdict_text)}</p>{numbers}{remaining}{chart}{errors}</section>")


def entry_points_note(report: Report) -> str:
    rows = report.entry_points
    reached = sum(1 for r in rows if r.reaches)
    return (f"{reached} of {plural(len(rows), 'entry point')} (scripts, notebooks) can reach MPS "
            "after `mpslint --fix`: static, following the project's imports; `mpslint verify --simulate` runs one.")


def _entry_points(report: Report) -> str:
    head = '<section id="entry-points"><h2>Entry points</h2>'
    if not report.entry_points:
        return head + "<p>No entry point: no script with <code>if __name__ == \"__main__\":</code>, no notebook.</p></section>"
    rows = []
    for r in report.entry_points:
        if r.blockers:
            items = "".join(
                f'<li><a href="#rule-{e(b.code)}">{e(b.code)}</a> <span class="loc">{e(b.path)}:'
                f'{e(f"cell {b.cell}:" if b.cell else "")}{b.row}</span> {_md_code(b.message)}'
                f'{e(f" (imported at {b.imported_at})") if b.imported_at else ""}</li>'
                for b in r.blockers)
            more = r.blocker_count - len(r.blockers)
            what = f'<ol class="findings">{items}</ol>' + (f'<p class="note">and {more} more</p>' if more > 0 else "")
        else:
            what = e(r.status)
        badge = '<span class="badge pass">can reach MPS</span>' if r.reaches else (
            '<span class="badge fail">blocked</span>' if r.blockers else '<span class="badge">no device chosen</span>')
        rows.append(f"<tr><td>{path_html(r.path)}</td><td>{badge}</td><td>{what}</td></tr>")
    table = ('<div class="table-box"><table><thead><tr><th>entry point</th><th>after --fix</th>'
             f'<th>what blocks it, or where its device is chosen</th></tr></thead><tbody>{"".join(rows)}</tbody>'
             "</table></div>")
    return f"{head}<p>{_md_code(entry_points_note(report))}</p>{table}</section>"


def recount_note(report: Report) -> str:
    """When fixing changes the total: a fixed line can show a finding the original hid (Ruff counts the same way)."""
    outcomes = [o for o in (report.fix, report.fix_unsafe) if o is not None]
    totals = sorted({o.fixed + o.remaining for o in outcomes} - {report.counts.findings})
    if not totals:
        return ""
    return (f"The fix runs count {' and '.join(map(str, totals))} findings in all, not {report.counts.findings}: "
            "fixing made new findings appear, as `mpslint --fix` reports too.")


def _recount(report: Report) -> str:
    note = recount_note(report)
    return " " + _md_code(note) if note else ""


def _where(report: Report) -> str:
    if not report.files:
        return '<section id="where"><h2>Where</h2><p>No file has findings.</p></section>'
    dirs = report.directories[:TOP_DIRECTORIES]
    chart = charts.bars([charts.Bar(d.path, _impact_segments(d.counts)) for d in dirs],
                        title="Findings per directory, most blocking first")
    shown = "" if len(report.directories) <= TOP_DIRECTORIES else \
        f'<p class="note">The {TOP_DIRECTORIES} most blocking of {len(report.directories)} directories.</p>'
    rows = "".join(
        f'<tr><td class="path">{_file_link(report, f.anchor, f.path)}</td>{_count_cells(f.counts)}</tr>'
        for f in report.files
    )
    table = ('<div class="table-box"><table><thead><tr><th>file</th><th class="n">fail</th><th class="n">slow</th><th class="n">other</th>'
             '<th class="n">fixed by --fix</th></tr></thead><tbody>' + rows + "</tbody></table></div>")
    return (f'<section id="where"><h2>Where</h2><p>{e(directories(len(report.directories)))}, '
            f"{e(plural(len(report.files), 'file'))} with findings; the files that fail on MPS most come first.</p>"
            f"{chart}{_legend(FAILS, SLOWS, OTHER)}{shown}{table}</section>")


def _listed(report: Report) -> List[FileRow]:
    return report.files[:MAX_FILE_SECTIONS]


def _file_link(report: Report, anchor: Optional[str], text: str) -> str:
    """A link to the file's findings when the page lists them, else its name."""
    if anchor and any(f.anchor == anchor for f in _listed(report)):
        return f'<a href="#{e(anchor)}">{path_html(text)}</a>'
    return e(text)


def _count_cells(c: Counts) -> str:
    return (f'<td class="n">{c.fails}</td><td class="n">{c.slows}</td><td class="n">{c.other}</td>'
            f'<td class="n">{c.fixed}</td>')


def _what(report: Report) -> str:
    if not report.rules:
        return '<section id="what"><h2>What</h2><p>No findings.</p></section>'
    chart = charts.bars([
        charts.Bar(f"{r.code} {r.name}", [
            ("fixed", min(r.fixed, r.count), "fixed by mpslint --fix"),
            ("unsafe", max(0, min(r.fixed_unsafe, r.count) - min(r.fixed, r.count)), "fixed with --unsafe-fixes"),
            ("left", max(0, r.count - max(r.fixed, r.fixed_unsafe)), "left for a human"),
        ], href=f"#rule-{r.code}") for r in report.rules
    ], title="Findings per rule, and the share the fixes fix")
    rows = "".join(
        f'<tr><td><a href="#rule-{e(r.code)}">{e(r.code)}</a> {e(r.name)}<br><span class="note">{_md_code(r.summary)}'
        f'</span></td><td><span class="badge {e(r.impact)}">{e(LABELS[r.impact])}</span></td>'
        f'<td class="n">{r.count}</td><td class="n">{r.files}</td><td class="n">{r.fixed}</td>'
        f'<td class="n">{r.fixed_unsafe}</td><td class="n"><code>{e(r.mark)}</code></td></tr>'
        for r in report.rules
    )
    table = ('<div class="table-box"><table><thead><tr><th>rule</th><th>impact</th><th class="n">findings</th><th class="n">files</th>'
             '<th class="n">--fix</th><th class="n">--unsafe-fixes</th><th class="n">statistics</th></tr></thead>'
             f"<tbody>{rows}</tbody></table></div>")
    return (f'<section id="what"><h2>What</h2>{chart}{_legend("fixed", "unsafe", "left")}{table}'
            '<p class="note">The last column is the fix marker <code>mpslint --statistics</code> prints: '
            "<code>[*]</code> fixed by <code>--fix</code>, <code>[-]</code> with <code>--unsafe-fixes</code>.</p>"
            "</section>")


def op_status(row: OpRow) -> str:
    what = "no MPS kernel" if row.kind == "no-kernel" else "always runs on the CPU on mps"
    if row.gains:
        later = f"torch {row.gains} adds one"
    elif row.latest:
        later = f"torch {row.latest} has one"
    else:
        later = f"no torch up to {row.newest_known} has one"
    return f"{what} in torch {row.floor}; {later}"


def _ops(report: Report) -> str:
    head = '<section id="ops"><h2>Ops without an MPS kernel</h2>'
    if not report.ops:
        return head + (f"<p>The code calls no op that lacks an MPS kernel in torch "
                       f"{e(', '.join(report.floors) or '-')} (as far as mpslint can see the calls).</p></section>")
    rows = "".join(
        f"<tr><td><code>aten::{e(r.op)}</code></td><td>{', '.join(f'<code>{e(c)}</code>' for c in r.calls)}</td>"
        f'<td class="n">{r.count}</td><td class="n">{r.files}</td><td>{e(op_status(r))}</td></tr>'
        for r in report.ops
    )
    return (head + '<div class="table-box"><table><thead><tr><th>op</th><th>called as</th><th class="n">calls</th><th class="n">files</th>'
            f"<th>at the project's torch floor</th></tr></thead><tbody>{rows}</tbody></table></div>"
            '<p class="note">Without a kernel an op raises <code>NotImplementedError</code> on mps unless '
            "<code>PYTORCH_ENABLE_MPS_FALLBACK=1</code> runs it on the CPU, with a copy each way.</p></section>")


def _runtime(report: Report) -> str:
    head = '<section id="runtime"><h2>Runtime</h2>'
    if not report.runtime:
        return head + ("<p>No <code>mpslint verify</code> report was given. Run a script on an (emulated) mps device "
                       "and add its JSON report with <code>--verify-report</code>: see the next steps.</p></section>")
    return head + "".join(_run(run, _file_link(report, run.file_anchor, run.script)) for run in report.runtime) \
        + "</section>"


def _loc(location: Optional[dict]) -> str:
    if not isinstance(location, dict):
        return ""
    return f'<span class="loc">line {e(location.get("row", "?"))}</span> '


def _run(run: RuntimeRun, script: str) -> str:
    where = "mps (simulated)" if run.simulated else "mps"
    facts = [f"on {where}", f"torch {run.torch_version}" if run.torch_version else ""]
    if run.ops_on_device is not None:
        facts.append(f"{run.ops_on_device} ops on the device")
    if run.script_exit_code is not None:
        facts.append(f"the script exited with {run.script_exit_code}")
    if run.duration_s is not None:
        try:
            facts.append(f"{float(run.duration_s):.1f} s")
        except (TypeError, ValueError):
            pass
    items: List[str] = []
    for f in run.fallbacks:
        items.append(f"<li>{_loc(f.get('location'))}CPU fallback: <code>{e(f.get('op', '?'))}</code> "
                     f"{e(_times(f.get('count')))}</li>")
    for s in run.syncs:
        if s.get("hot"):
            items.append(f"<li>{_loc(s.get('location'))}host sync in most steps: <code>{e(s.get('kind', '?'))}</code> "
                         f"{e(_times(s.get('count')))}</li>")
    for err in run.errors:
        items.append(f"<li>{_loc(err.get('location'))}<strong>{e(err.get('type', 'error'))}</strong>: "
                     f"{e(err.get('message', ''))}</li>")
    for k in run.known_wrong:
        items.append(f"<li>{_loc(k.get('location'))}<strong>known silently wrong result</strong>: {e(k.get('title', '?'))} "
                     f"{e(_times(k.get('count')))} ({_public_link(k.get('issue'))}; {e(k.get('releases', ''))})</li>")
    for line in runtime.memory_lines(run):
        items.append(f"<li>{e(line)}</li>")
    cold = sum(1 for s in run.syncs if not s.get("hot"))
    if cold:
        items.append(f"<li>{e(plural(cold, 'other host sync'))} (not in most steps)</li>")
    static = ""
    if run.static:
        marks = ", ".join(f'<code>{e(s.get("code"))}</code> line {e(s.get("row"))} '
                          f'<span class="badge {e(s.get("status"))}">{e(s.get("status"))}</span>' for s in run.static)
        static = f"<p>Static findings of this script: {marks}</p>"
    events = f"<ul>{''.join(items)}</ul>" if items else "<p>No fallback, hot sync or error.</p>"
    return (f'<h3>{script} <span class="badge {e(run.verdict)}">{e(run.verdict.upper())}</span></h3>'
            f'<p class="meta">{e(", ".join(f for f in facts if f))}; from <code>{e(run.source)}</code></p>'
            f"{events}{static}")


def _public_link(url: object) -> str:
    """A link to a public page; anything else a report file holds (it may be edited by hand) stays text."""
    if isinstance(url, str) and url.startswith("https://"):
        return f'<a href="{e(url)}">{e(url)}</a>'
    return e(url or "")


def _times(count: object) -> str:
    return "once" if count == 1 else f"{count} times"


def _next(report: Report) -> str:
    if not report.next_steps:
        return '<section id="next"><h2>Next steps</h2><p>Nothing to do.</p></section>'
    items = "".join(f"<li><strong>{_md_code(s.title)}</strong><pre><code>{e(s.command)}</code></pre>"
                    f"<p>{_md_code(s.why)}</p></li>" for s in report.next_steps)
    return f'<section id="next"><h2>Next steps</h2><ol>{items}</ol></section>'


def _findings(report: Report) -> str:
    if not report.files:
        return ""
    limit = report.max_findings_per_file
    body = [f'<section id="findings"><h2>Findings by file</h2><p class="note">At most {limit} findings per file, '
            "in source order; the files that fail on MPS most come first.</p>"]
    listed = _listed(report)
    body.extend(_file(f) for f in listed)
    if len(report.files) > len(listed):
        rest = report.files[len(listed):]
        body.append(f'<p class="note">The findings of {e(plural(len(rest), "more file"))} '
                    f"({sum(f.counts.findings for f in rest)} findings) are counted above but not listed here: "
                    f"<code>mpslint {e(' '.join(_quote(p) for p in report.paths))}</code> lists every one.</p>")
    body.append("</section>")
    return "".join(body)


def _file(f: FileRow) -> str:
    c = f.counts
    facts = [plural(c.findings, "finding"), f"{c.fails} fail on MPS", f"{c.slows} slow it down",
             f"{c.fixed} fixed by --fix"]
    if f.confirmed:
        facts.append(f"{f.confirmed} confirmed at runtime")
    items = []
    for d in f.findings:
        badges = [f'<span class="badge {e(d.impact)}">{e(LABELS[d.impact])}</span>']
        if d.fix == "safe":
            badges.append('<span class="badge">--fix</span>')
        elif d.fix == "unsafe":
            badges.append('<span class="badge">--unsafe-fixes</span>')
        if d.runtime:
            badges.append(f'<span class="badge {e(d.runtime)}">runtime: {e(d.runtime)}</span>')
        items.append(f'<li><span class="loc">{e(d.where)}</span> <a href="#rule-{e(d.code)}">{e(d.code)}</a> '
                     f"{_md_code(d.message)} {' '.join(badges)}</li>")
    more = ""
    if f.omitted:
        more = (f'<p class="note">and {f.omitted} more: <code>mpslint {e(_quote(f.path))}</code> lists them all.</p>')
    return (f'<section class="file" id="{e(f.anchor)}"><h3>{path_html(f.path)}</h3><p class="meta">{e(", ".join(facts))}</p>'
            f'<ol class="findings">{"".join(items)}</ol>{more}</section>')


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)


def _rule_pages(report: Report) -> str:
    from mpslint import catalog

    pages = []
    for r in report.rules:
        doc = catalog.find(r.code)
        text = doc.text if doc is not None else f"{r.code} ({r.name})\n"
        pages.append(f'<article class="rule" id="rule-{e(r.code)}"><h3>{e(r.code)} {e(r.name)}</h3>'
                     f"<pre>{e(text)}</pre></article>")
    if not pages:
        return ""
    return ('<section id="rules"><h2>Rule pages</h2><p class="note">What <code>mpslint rule CODE</code> prints, '
            "for every rule with findings here.</p>" + "".join(pages) + "</section>")


def _md_code(text: str) -> str:
    """Escape ``text``, then show its `backquoted` spans as code (rule messages quote code that way)."""
    pieces: Iterable[str] = str(text).split("`")
    out = []
    for i, piece in enumerate(pieces):
        out.append(f"<code>{e(piece)}</code>" if i % 2 == 1 else e(piece))
    if len(out) % 2 == 0:  # an unpaired backquote: show the rest as text
        last = out.pop()
        out.append(e("`") + last[len("<code>"):-len("</code>")])
    return "".join(out)
