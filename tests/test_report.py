"""`mpslint report`: the same numbers as `mpslint --statistics` and `--fix` in every format, escaped, self-contained."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from clitools import enter, run
from mpslint import catalog
from mpslint.config.selectors import engine_codes
from mpslint.knowledge import mps_kernels
from mpslint.report import impact
from mpslint.report.command import output_format_for

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A copy of the fixtures (a realistic little CUDA code base, for a current torch) as the working directory."""
    shutil.copytree(FIXTURES, tmp_path / "code")
    (tmp_path / "code" / "requirements.txt").write_text("torch>=2.13\n")
    return enter(tmp_path, monkeypatch)


def report(*args, fmt="json"):
    result = run("report", "--output-format", fmt, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if fmt == "json" else result.stdout


def statistics(*args):
    result = run("--statistics", "--output-format", "json", *args)
    assert result.exit_code == 1, result.output
    return {row["code"]: row for row in json.loads(result.stdout)}


# ------------------------------------------------------------------ each format's numbers


def json_counts(data):
    return {r["code"]: r["count"] for r in data["rules"]}


def markdown_counts(text):
    rows = re.findall(r"^\| \[(MPS\d+)\]\([^)]*\) [a-z0-9-]+ \| [^|]+ \| (\d+) \|", text, re.MULTILINE)
    return {code: int(count) for code, count in rows}


class Tags(HTMLParser):
    """Every start tag with its attributes, every id, and the text of each rule-table row."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.ids, self.rows, self._row, self._in_what = [], set(), [], None, False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if "id" in attrs:
            self.ids.add(attrs["id"])
            if tag == "section":
                self._in_what = attrs["id"] == "what"
        if tag == "tr" and self._in_what:
            self._row = []

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            self.rows.append([c.strip() for c in "".join(self._row).split("\x00") if c.strip()])
            self._row = None
        if tag in ("td", "th") and self._row is not None:
            self._row.append("\x00")

    def handle_data(self, data):
        if self._row is not None:
            self._row.append(data)


def parse_html(text):
    parser = Tags()
    parser.feed(text)
    return parser


def html_counts(text):
    counts = {}
    for cells in parse_html(text).rows:
        match = re.match(r"(MPS\d+) ", cells[0])
        if match:
            counts[match.group(1)] = int(cells[2])
    return counts


def test_every_format_counts_what_statistics_counts(repo):
    stats = statistics("code")
    expected = {code: row["count"] for code, row in stats.items()}
    data = report("code")
    assert json_counts(data) == expected
    assert markdown_counts(report("code", fmt="markdown")) == expected
    assert html_counts(report("code", fmt="html")) == expected
    assert data["counts"]["findings"] == sum(expected.values())
    # The fix markers are --statistics' own.
    assert {r["code"]: r["mark"] == "[*]" for r in data["rules"]} == {c: r["fixable"] for c, r in stats.items()}
    # Every finding has exactly one impact.
    counts = data["counts"]
    assert counts["fails"] + counts["slows"] + counts["other"] == counts["findings"]


def _would_fix(*flags):
    result = run("--diff", *flags, "code")
    match = re.search(r"Would fix (\d+) findings?", result.stderr)
    return int(match.group(1)) if match else 0


def _fix_summary(tmp_path, *flags):
    copy = tmp_path / ("fixed" + "".join(flags).replace("-", "_"))
    shutil.copytree(tmp_path / "code", copy)
    result = run("--fix", *flags, str(copy.relative_to(tmp_path)))
    found = re.search(r"Found \d+ findings? \((\d+) fixed, (\d+) remaining\)", result.stdout)
    return int(found.group(1)), int(found.group(2))


def test_fix_numbers_are_what_fix_does(repo):
    data = report("code")
    fixed, remaining = _fix_summary(repo)
    fixed_unsafe, remaining_unsafe = _fix_summary(repo, "--unsafe-fixes")
    assert (data["fix"]["fixed"], data["fix"]["remaining"]) == (fixed, remaining)
    assert (data["fix_unsafe"]["fixed"], data["fix_unsafe"]["remaining"]) == (fixed_unsafe, remaining_unsafe)
    assert _would_fix() == fixed and _would_fix("--unsafe-fixes") == fixed_unsafe
    assert fixed_unsafe > fixed > 0
    # Per rule and per file, the fixes add up to the same totals.
    assert sum(r["fixed"] for r in data["rules"]) == fixed
    assert sum(r["fixed_unsafe"] for r in data["rules"]) == fixed_unsafe
    assert sum(f["counts"]["fixed"] for f in data["files"]) == fixed
    markdown = report("code", fmt="markdown")
    assert f"| fixed by `mpslint --fix` | {fixed} |" in markdown
    assert f"| fixed by `mpslint --fix --unsafe-fixes` | {fixed_unsafe} |" in markdown
    html = report("code", fmt="html")
    assert f"<code>mpslint --fix</code> fixes {fixed} and leaves {remaining} " in html


def test_the_report_writes_nothing(repo):
    before = {p: p.read_bytes() for p in (repo / "code").rglob("*.py")}
    report("code", "--no-cache")
    assert {p: p.read_bytes() for p in (repo / "code").rglob("*.py")} == before


def test_selection_and_config_apply_and_reach_the_suggested_commands(repo):
    data = report("--select", "MPS1", "--ignore", "MPS108", "code")
    # The engine's own codes (a notebook cell that does not parse is MPS000) are never selected away.
    rules = [r["code"] for r in data["rules"] if r["code"] not in engine_codes()]
    assert rules and all(code.startswith("MPS1") and code != "MPS108" for code in rules)
    assert json_counts(data) == {c: r["count"] for c, r in statistics("--select", "MPS1", "--ignore", "MPS108",
                                                                          "code").items()}
    commands = "\n".join(step["command"] for step in data["next_steps"])
    assert "mpslint --fix --select MPS1 --ignore MPS108 code" in commands


# ------------------------------------------------------------------ escaping and self-containment

HOSTILE = '''import torch

model = torch.nn.Linear(2, 2).to("mps")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in loader:
    x = batch.to("mps")
    out = model(x)
    loss = out.sum()
    loss.backward()
    opt.step()
    print(out["<script>alert(1)</script>"].item())
    print(f"<img src=x onerror=alert(2)>{loss}")
'''
HOSTILE_NAME = "<img src=x onerror=alert(3)>.py"


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(HOSTILE, encoding="utf-8")
    (tmp_path / HOSTILE_NAME).write_text(HOSTILE, encoding="utf-8")
    return enter(tmp_path, monkeypatch)


SAFE_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "nav", "main", "footer", "section",
             "article", "h1", "h2", "h3", "p", "ol", "ul", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
             "code", "pre", "span", "strong", "b", "br", "div", "svg", "rect", "text"}


def test_source_text_is_escaped_in_every_format(hostile):
    data = report(".")
    messages = [d["message"] for f in data["files"] for d in f["findings"]]
    assert any("<script>alert(1)</script>" in m for m in messages)  # the finding really quotes the source
    assert any(f["path"] == HOSTILE_NAME for f in data["files"])

    html = report(".", fmt="html")
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(3)&gt;.py" in html
    tags = parse_html(html).tags
    assert {tag for tag, _ in tags} <= SAFE_TAGS
    assert not [attrs for _, attrs in tags if any(name.startswith("on") for name in attrs)]

    markdown = report(".", fmt="markdown")
    # Code blocks and code spans show their content verbatim: HTML there is text.
    outside_code = re.sub(r"^ *```.*?^ *```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    outside_code = re.sub(r"(`+).*?\1", "", outside_code)
    assert "<script" not in outside_code.lower() and "<img" not in outside_code.lower()
    assert "&lt;img src=x onerror=alert(2)&gt;" in markdown or "`f\"<img src=x onerror=alert(2)>{loss}\"`" in markdown


def test_html_loads_nothing_and_every_link_lands_in_the_page(repo):
    html = report("code", fmt="html")
    parsed = parse_html(html)
    for tag, attrs in parsed.tags:
        assert tag not in ("script", "link", "img", "iframe", "object", "embed", "audio", "video", "source")
        for name in ("src", "srcset", "poster", "data", "action", "xlink:href", "background"):
            assert name not in attrs, (tag, attrs)
        if "href" in attrs:
            assert attrs["href"].startswith("#"), attrs["href"]
            assert attrs["href"][1:] in parsed.ids, f"dangling link {attrs['href']}"
    assert "url(" not in html and "@import" not in html
    # No address on the web outside the rule pages' text (their References quote URLs as text, not links).
    outside_rule_pages = re.sub(r"<pre>.*?</pre>", "", html, flags=re.DOTALL)
    assert "http://" not in outside_rule_pages and "https://" not in outside_rule_pages


def test_rule_links_lead_to_the_bundled_rule_pages(repo):
    html = report("code", fmt="html")
    data = report("code")
    from html import escape

    for rule in data["rules"]:
        assert f'href="#rule-{rule["code"]}"' in html
        page = re.search(rf'<article class="rule" id="rule-{rule["code"]}">.*?<pre>(.*?)</pre>', html, re.DOTALL)
        assert page is not None and page.group(1) == escape(catalog.find(rule["code"]).text)


def test_markdown_fits_a_pull_request_comment(repo):
    markdown = report("code", fmt="markdown")
    assert len(markdown) < 65536
    assert markdown.count("<details>") == markdown.count("</details>") >= 2
    for code in markdown_counts(markdown):
        assert f"({catalog.DOCS_URL.format(code=code)})" in markdown


# ------------------------------------------------------------------ content


def test_files_most_blocking_first_and_at_most_n_findings_each(repo):
    data = report("--max-findings", "2", "code")
    keys = [(-f["counts"]["fails"], -f["counts"]["slows"], -f["counts"]["findings"]) for f in data["files"]]
    assert keys == sorted(keys)
    for f in data["files"]:
        assert len(f["findings"]) == min(2, f["counts"]["findings"])
        assert f["omitted"] == f["counts"]["findings"] - len(f["findings"])
    crowded = next(f for f in data["files"] if f["omitted"])
    assert f'and {crowded["omitted"]} more' in report("--max-findings", "2", "code", fmt="html")
    dirs = {d["path"]: d["counts"]["findings"] for d in data["directories"]}
    assert sum(dirs.values()) == data["counts"]["findings"]
    in_cuda = [f for f in data["files"] if f["path"].startswith("code/cuda/")]
    assert dirs["code/cuda"] == sum(f["counts"]["findings"] for f in in_cuda)


def test_ops_name_the_torch_release_that_adds_the_kernel(repo):
    data = report("--torch-version", "2.4", "code/ops/old_floor.py")
    ops = {row["op"]: row for row in data["ops"]}
    assert "upsample_bicubic2d.out" in ops
    row = ops["upsample_bicubic2d.out"]
    assert row["floor"] == "2.4" and row["kind"] == "no-kernel"
    assert row["gains"] == mps_kernels.version_text(mps_kernels.load_table((2, 4)).first_mps_version(row["op"]))
    assert "F.interpolate" in row["calls"]
    assert f"torch {row['gains']} adds one" in report("--torch-version", "2.4", "code/ops/old_floor.py", fmt="html")


def test_no_findings_is_a_clean_verdict(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / "ok.py").write_text("import torch\nx = torch.ones(2)\n", encoding="utf-8")
    data = report(".")
    assert data["verdict"] == "clean" and data["counts"]["findings"] == 0 and data["files"] == []
    assert "No findings" in report(".", fmt="html")


def test_a_path_that_cannot_be_read_is_an_io_error_finding_as_in_check(repo):
    result = run("report", "--output-format", "json", "code/cuda", "missing.py")
    # A plan, not a gate, but an incomplete one: exit 2, as for a file the run could not finish.
    assert result.exit_code == 2, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == "unread"
    assert json_counts(data) == {c: r["count"] for c, r in statistics("code/cuda", "missing.py").items()}
    row = next(f for f in data["files"] if f["path"] == "missing.py")
    assert [(d["code"], d["message"]) for d in row["findings"]] == [("MPS001", "No such file or directory")]
    assert row["counts"]["other"] == 1 and data["errors"] == []
    assert "missing.py" in run("report", "--output-format", "html", "code/cuda", "missing.py").stdout


@pytest.mark.parametrize(
    "fmt, name, expected",
    [(None, None, "markdown"), (None, "r.html", "html"), (None, "r.HTM", "html"), (None, "r.json", "json"),
     (None, "r.md", "markdown"), (None, "r.txt", "markdown"), ("json", "r.html", "json")],
)
def test_output_format_defaults_to_markdown_or_the_file_suffix(fmt, name, expected):
    assert output_format_for(fmt, name) == expected


def test_a_report_of_nothing_readable_never_says_it_runs(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    result = run("report", "missing.py")
    assert result.exit_code == 2
    assert "Not checked: 1 path could not be read (MPS001)." in result.stdout
    assert "Runs on MPS" not in result.stdout


def test_an_output_file_of_unknown_kind_is_a_usage_error(repo):
    result = run("report", "code", "-o", "plan.pdf")
    assert result.exit_code == 2 and "cannot tell the report format" in result.stderr
    assert not (repo / "plan.pdf").exists()
    assert run("report", "code", "-o", "plan.pdf", "--output-format", "html").exit_code == 0


def test_output_file(repo):
    result = run("report", "code", "-o", "out/plan.html")
    assert result.exit_code == 0
    assert (repo / "out" / "plan.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "Wrote the html report to out/plan.html" in result.stderr and result.stdout == ""


def test_every_rule_has_an_explicit_impact():
    for code in catalog.load():
        assert code in impact.IMPACT, f"classify {code} in mpslint/report/impact.py"
        assert impact.IMPACT[code] in impact.LABELS


def test_each_file_counts_what_the_fixer_fixes_there(repo):
    """The report reuses a file's safe fix run for --unsafe-fixes only where that changes nothing."""
    from mpslint.config import ConfigResolver
    from mpslint.fixer import fix_text
    from mpslint.notebook.lint import fix_notebook

    report_data = report("code", "--no-cache")
    resolver = ConfigResolver()
    by_path = {f["path"]: f["counts"] for f in report_data["files"]}
    for path, counts in by_path.items():
        settings = resolver.for_path(repo / path).settings_for(Path(path))
        data = (repo / path).read_bytes()
        for unsafe, key in ((False, "fixed"), (True, "fixed_unsafe")):
            if path.endswith(".ipynb"):
                fixed = fix_notebook(data, path, settings, unsafe=unsafe).fixed
            else:
                fixed = fix_text(data.decode("utf-8"), path, settings, unsafe=unsafe).fixed
            assert sum(fixed.values()) == counts[key], (path, key)


def test_the_page_lists_the_findings_of_the_most_blocking_files_only(repo, monkeypatch):
    from mpslint.report import as_html

    monkeypatch.setattr(as_html, "MAX_FILE_SECTIONS", 3)
    data = report("code")
    html = report("code", fmt="html")
    parsed = parse_html(html)
    sections = [attrs["id"] for tag, attrs in parsed.tags if tag == "section" and attrs.get("class") == "file"]
    assert sections == [f["anchor"] for f in data["files"][:3]]
    rest = data["files"][3:]
    assert f"The findings of {len(rest)} more files ({sum(f['counts']['findings'] for f in rest)} findings)" in html
    hrefs = [attrs["href"][1:] for _, attrs in parsed.tags if "href" in attrs]
    assert all(h in parsed.ids for h in hrefs)


def test_a_warm_report_reuses_the_fix_outcomes_and_says_the_same(repo, monkeypatch):
    from mpslint import fixer

    cold = report("code")
    calls = []
    original = fixer.fix_text
    monkeypatch.setattr(fixer, "fix_text", lambda *a, **k: calls.append(a[1]) or original(*a, **k))
    assert report("code") == cold
    assert calls == []  # every outcome came from the cache
    (repo / "code" / "cuda" / "train_cuda.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    changed = report("code")
    assert calls == ["code/cuda/train_cuda.py"]  # only the changed file is fixed again (safe run reused)
    assert changed["fix"]["fixed"] == cold["fix"]["fixed"] - 8 + 1


def test_a_fix_that_reveals_findings_is_explained(repo):
    # A fix run counts no finding the check did not (issue 25): on the fixtures the totals agree, and no note is
    # written; where they would differ, the note says so.
    from types import SimpleNamespace

    from mpslint.report.as_html import recount_note

    data = report("code")
    total = data["fix"]["fixed"] + data["fix"]["remaining"]
    assert total == data["counts"]["findings"]
    assert "The fix runs count" not in report("code", fmt="markdown")
    fake = SimpleNamespace(fix=SimpleNamespace(fixed=3, remaining=2), fix_unsafe=None, counts=SimpleNamespace(findings=4))
    assert recount_note(fake).startswith("The fix runs count 5 findings in all, not 4")


def test_the_header_says_which_torch_fixes_and_checks_assume_as_check_does(tmp_path, monkeypatch):
    """The fixes' and gates' floor (2.0 assumed without a declared one) and the op table's torch, each named."""
    enter(tmp_path, monkeypatch)
    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(1).cuda()\n", encoding="utf-8")
    data = report(".")
    assert data["fix_floors"] == ["2.0 (assumed: no floor declared)"]
    markdown = run("report", ".").stdout
    assert "fixes and version gates target torch 2.0 (assumed: no floor declared); op coverage checked against torch" in markdown
    assert "Fixes target torch 2.0" in run("--fix", "--diff", "a.py").stderr
    (tmp_path / "requirements.txt").write_text("torch>=2.4\n", encoding="utf-8")
    assert report(".")["fix_floors"] == ["2.4"]


# ------------------------------------------------------------------ entry points (issue 25 item 6)

ENTRY_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/streams.py": "import torch\n\n\ndef side_stream():\n    return torch.cuda.Stream()\n",
    "pkg/dev.py": 'import torch\n\nDEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
    # blocked through an import, though its own code is clean after the fix
    "train.py": "import torch\nfrom pkg.streams import side_stream\n\nif __name__ == '__main__':\n"
                "    print(torch.ones(2).cuda(), side_stream)\n",
    # its device comes from pkg/dev.py, which --fix makes choose MPS too
    "serve.py": "from pkg.dev import DEVICE\n\nif __name__ == '__main__':\n    print(DEVICE)\n",
    "plain.py": "import json\n\nif __name__ == '__main__':\n    print(json.dumps(1))\n",
    "lib.py": "import torch\n\n\ndef move(x):\n    return x.cuda()\n",  # not an entry point
}


@pytest.fixture
def entry_project(tmp_path, monkeypatch):
    for name, text in ENTRY_PROJECT.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return enter(tmp_path, monkeypatch)


def test_the_report_says_of_each_entry_point_what_the_fix_run_then_says(entry_project):
    data = report(".", "--no-cache")
    rows = {r["path"]: r for r in data["entry_points"]}
    assert sorted(rows) == ["plain.py", "serve.py", "train.py"]
    assert [r["path"] for r in data["entry_points"]] == ["plain.py", "train.py", "serve.py"]  # blocked ones first
    assert rows["train.py"]["reaches"] is False
    assert rows["train.py"]["blockers"] == [{
        "code": "MPS108", "path": "pkg/streams.py", "row": 5, "cell": None, "imported_at": "line 2",
        "message": "`torch.cuda.Stream` has no MPS equivalent (MPS has a single command queue: there are no extra streams)",
    }]
    assert rows["serve.py"]["reaches"] is True and rows["serve.py"]["device_from"] == "pkg/dev.py"
    assert rows["plain.py"]["reaches"] is False and rows["plain.py"]["blockers"] == []
    # The fix run, afterwards, says the same of each, word for word.
    fixed = run("--fix", "--no-cache", ".")
    tail = fixed.output[fixed.output.index("Entry points:"):].splitlines()
    assert tail[0].startswith("Entry points: 1 of 3 can reach MPS")
    assert tail[1:] == [f"  {r['path']}: {r['status']}" for r in data["entry_points"]]


def test_markdown_has_an_entry_point_table_naming_the_blocking_module(entry_project):
    text = report(".", "--no-cache", fmt="markdown")
    section = text[text.index("### Entry points"):text.index("### Where")]
    assert "1 of 3 entry points" in section
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[0] for row in rows] == ["| `plain.py`", "| `train.py`", "| `serve.py`"]
    assert "| blocked | [MPS108](" in rows[1] and "`pkg/streams.py:5`" in rows[1] and "(imported at line 2)" in rows[1]
    assert rows[2].endswith("| can reach MPS | can reach MPS (its device is chosen in pkg/dev.py) |")
    assert "| no device chosen |" in rows[0]


def test_html_has_an_entry_point_section_linked_from_the_contents(entry_project):
    page = report(".", "--no-cache", fmt="html")
    parsed = Tags()
    parsed.feed(page)
    assert "entry-points" in parsed.ids
    assert any(attrs.get("href") == "#entry-points" for _, attrs in parsed.tags)
    section = page[page.index('<section id="entry-points">'):]
    section = section[:section.index("</section>")]
    assert '<span class="badge fail">blocked</span>' in section
    assert '<a href="#rule-MPS108">MPS108</a> <span class="loc">pkg/streams.py:5</span>' in section
    assert "(imported at line 2)" in section
    assert "can reach MPS (its device is chosen in pkg/dev.py)" in section


def test_a_tree_without_entry_points_says_so(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / "lib.py").write_text(ENTRY_PROJECT["lib.py"], encoding="utf-8")
    assert report(".", "--no-cache")["entry_points"] == []
    assert "### Entry points" not in report(".", "--no-cache", fmt="markdown")
    assert "No entry point" in report(".", "--no-cache", fmt="html")
