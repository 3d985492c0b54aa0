"""The HTML report in a real browser: it renders, its links land, it logs no error and requests nothing.

Needs Playwright (``pip install playwright``) and a Chromium (``apt-get install
chromium``, or ``MPSLINT_CHROMIUM=/path/to/chrome``); Playwright's own browser
download is not needed. Without them these tests skip, as in CI. Run them with
``python -m pytest -m browser``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from clitools import enter, run

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def _chromium() -> str:
    path = os.environ.get("MPSLINT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser") \
        or shutil.which("google-chrome")
    if not path:
        pytest.skip("no Chromium installed (apt-get install chromium, or set MPSLINT_CHROMIUM)")
    return path


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install playwright)")
    executable = _chromium()
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(str(profile), executable_path=executable, args=ARGS,
                                                       headless=True, viewport={"width": 1100, "height": 900})
        yield context
        context.close()


@pytest.fixture
def page_of(browser, tmp_path, monkeypatch):
    """Write the report of a copy of the fixtures (and a verify report) and open it; record what the page does."""
    shutil.copytree(ROOT / "fixtures", tmp_path / "code")
    (tmp_path / "code" / "<script>alert(1).py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    enter(tmp_path, monkeypatch)
    (tmp_path / "verify.json").write_text(json.dumps({
        "script": "code/verify/missing_kernel_loop.py", "verdict": "fail", "simulated": True,
        "torch_version": "2.13.0", "script_exit_code": 0, "fallbacks": [], "syncs": [], "errors": [],
        "static": [{"code": "MPS501", "row": 24, "status": "confirmed"}],
    }))
    result = run("report", "code", "--verify-report", "verify.json", "-o", "report.html")
    assert result.exit_code == 0, result.output
    url = (tmp_path / "report.html").resolve().as_uri()
    page = browser.new_page()
    events = {"requests": [], "console": [], "errors": []}
    page.on("request", lambda request: events["requests"].append(request.url))
    page.on("console", lambda message: events["console"].append((message.type, message.text)))
    page.on("pageerror", lambda error: events["errors"].append(str(error)))
    page.goto(url)
    yield page, url, events
    page.close()


def test_renders_with_no_request_and_no_console_message(page_of):
    page, url, events = page_of
    assert page.title().startswith("mpslint report")
    assert page.locator("#verdict .verdict").is_visible()
    charts = page.locator("svg.chart")
    assert charts.count() >= 3
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box and box["width"] > 300 and box["height"] > 20
    bars = page.locator("svg.chart rect.fails")
    assert bars.count() > 0 and bars.first.bounding_box()["width"] > 1
    assert events["requests"] == [url]  # the page itself, nothing else
    assert events["console"] == [] and events["errors"] == []
    assert page.evaluate("document.scripts.length") == 0


def test_rule_links_open_the_bundled_rule_page(page_of):
    page, url, events = page_of
    links = page.locator("#what table a[href^='#rule-']")
    assert links.count() > 5
    for i in range(links.count()):
        link = links.nth(i)
        code = link.get_attribute("href")[len("#rule-"):]
        link.click()
        assert page.evaluate("location.hash") == f"#rule-{code}"
        target = page.locator(":target")
        assert target.get_attribute("id") == f"rule-{code}"
        assert target.is_visible() and f"({code})" in target.locator("pre").inner_text()
        box = target.bounding_box()
        assert box is not None and -2 <= box["y"] < 900  # scrolled into view
    assert events["requests"] == [url] and events["errors"] == []


def test_file_and_chart_links_land_on_the_findings(page_of):
    page, url, events = page_of
    first = page.locator("#where table a").first
    first.click()
    target = page.locator(":target")
    assert target.get_attribute("class") == "file" and target.locator("h3").inner_text() == first.inner_text()
    chart_link = page.locator("#what svg a").first
    chart_link.click()
    assert page.evaluate("location.hash").startswith("#rule-")
    runtime_link = page.locator("#runtime h3 a")
    runtime_link.click()
    assert page.locator(":target h3").inner_text() == "code/verify/missing_kernel_loop.py"
    assert "runtime: confirmed" in page.locator(":target").inner_text()
    assert events["requests"] == [url]


def test_hostile_file_name_is_text(page_of):
    page, _, events = page_of
    assert page.get_by_text("<script>alert(1).py").count() >= 1
    assert events["console"] == [] and page.evaluate("document.scripts.length") == 0


def test_dark_mode_and_print(page_of):
    page, _, _ = page_of
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.emulate_media(color_scheme="dark")
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert light == "rgb(255, 255, 255)" and dark != light
    channels = [int(c) for c in dark[dark.index("(") + 1:-1].split(",")[:3]]
    assert max(channels) < 64
    page.emulate_media(media="print", color_scheme="light")
    assert page.evaluate("getComputedStyle(document.querySelector('nav')).display") == "none"
    assert page.locator("#findings").is_visible()
    pdf = page.pdf()
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000


def test_phone_width_keeps_labels_readable_and_paths_whole(page_of):
    """At 390 px (a phone) chart labels keep their size and a path wraps at `/`, never a character per line."""
    page, _, events = page_of
    page.set_viewport_size({"width": 390, "height": 844})
    sizes = page.evaluate(
        """() => [...document.querySelectorAll('svg.chart text.label')].slice(0, 20).map(t => {
               const box = t.getBoundingClientRect(); return box.height; })"""
    )
    assert sizes and min(sizes) >= 10  # 12 px labels; a shrunken chart drew them at about 4 px
    heights = page.evaluate(
        """() => [...document.querySelectorAll('#where td.path a, section.file h3')].slice(0, 30).map(n => {
               const style = getComputedStyle(n); const line = parseFloat(style.lineHeight) || 20;
               return [n.textContent, n.getBoundingClientRect().width, Math.round(n.getBoundingClientRect().height / line)]; })"""
    )
    for text, width, lines in heights:
        segments = text.count("/") + 1
        assert lines <= segments, (text, width, lines)  # wraps only after a `/`
        assert width >= 60, (text, width)
    page.set_viewport_size({"width": 1100, "height": 900})
    assert events["errors"] == []
