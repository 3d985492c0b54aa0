"""``mpslint report [PATHS]``: the click command (registered lazily by ``mpslint.cli``).

Exit codes: 0 the report was written; 2 a usage or configuration error (no
report), a file the run could not finish, or a path that could not be read
(MPS001): the report is still written and names them, and its verdict says the
check is incomplete. Other findings never make the exit code non-zero: a report
is a plan, not a gate (``mpslint check`` is the gate).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import click

from mpslint.options import configuration_options, resolver_for, selection_options, selection_overrides, split_commas

FORMATS = ("markdown", "html", "json")
SUFFIXES = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown", ".txt": "markdown", ".json": "json"}


def output_format_for(output_format: Optional[str], output_file: Optional[str]) -> str:
    """The asked format; else the one the output file's suffix names; else Markdown, which reads well in a terminal."""
    if output_format:
        return output_format
    if output_file:
        suffix = Path(output_file).suffix.lower()
        if suffix not in SUFFIXES:
            known = ", ".join(sorted(SUFFIXES))
            _fail(f"cannot tell the report format from {output_file!r}: name the file with {known}, "
                  "or give --output-format markdown, html or json")
        return SUFFIXES[suffix]
    return "markdown"


@click.command("report")
# readable=False: a path that cannot be read is an MPS001 finding, and the other paths are still checked.
@click.argument("paths", nargs=-1, type=click.Path(path_type=str, readable=False))
@click.option("--output-format", type=click.Choice(FORMATS), default=None,
              help="markdown (default; a pull-request comment), html (one self-contained page) or json. "
                   "Without it, the suffix of --output-file decides (.html, .md, .json).")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=str),
              help="Write the report to this file.")
@click.option("--verify-report", "verify_reports", multiple=True, type=click.Path(dir_okay=False, path_type=str),
              metavar="FILE", help="An `mpslint verify --output-format json` report to show next to the findings "
                                   "(repeatable).")
@click.option("--max-findings", type=click.IntRange(min=0), default=20, show_default=True,
              help="Findings listed per file (the counts always cover every finding).")
@selection_options
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--cache-dir", envvar="MPSLINT_CACHE_DIR", show_envvar=True,
              type=click.Path(file_okay=False, path_type=str), help="Where the check's cache lives.")
@click.option("--torch-version", metavar="X.Y", help="The lowest torch version the code supports (overrides config).")
@configuration_options
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: one per CPU).")
def report(paths, output_format, output_file, verify_reports, max_findings, select, extend_select, ignore, exclude,
           extend_exclude, force_exclude, no_cache, cache_dir, torch_version, config_options, isolated, per_file_ignores,
           extend_per_file_ignores, respect_gitignore, jobs) -> None:
    """Summarise PATHS (default: the current directory) as a migration plan for MPS.

    What fails on MPS, what slows it down, how much `mpslint --fix` fixes,
    where and which rules, ops without an MPS kernel, runtime evidence from
    `mpslint verify`, and the commands to run next. It checks like `mpslint
    check` (same files, config, selection and cache) and runs the fixer in
    memory: no file is written.
    """
    from mpslint.config import ConfigError, parse_torch_version
    from mpslint.report import runtime

    fmt = output_format_for(output_format, output_file)
    if "-" in paths:
        _fail("`mpslint report` reads files, not stdin: give paths")
    try:
        floor = parse_torch_version(torch_version) if torch_version is not None else None
        overrides = selection_overrides(select, extend_select, ignore, exclude, extend_exclude, floor)
        resolver = resolver_for(overrides, config_options, isolated, per_file_ignores, extend_per_file_ignores,
                                respect_gitignore)
        for path in verify_reports:  # a bad report is a usage error before the (long) check, not after
            runtime.read(path)
    except (ConfigError, runtime.RuntimeReportError) as exc:
        _fail(str(exc))
    cache_path = None
    if not no_cache:
        from mpslint.cache import CACHE_DIR_NAME

        cache_path = Path(cache_dir) if cache_dir else resolver.cache_root() / CACHE_DIR_NAME

    from mpslint.report.collect import collect

    try:
        result = collect(list(paths) or ["."], resolver, force_exclude=force_exclude, jobs=jobs, cache_dir=cache_path,
                         verify_reports=verify_reports, max_findings=max_findings,
                         flags=_repeatable_flags(select, extend_select, ignore, torch_version, config_options, isolated,
                                                 per_file_ignores, extend_per_file_ignores, respect_gitignore))
    except (ConfigError, runtime.RuntimeReportError) as exc:
        _fail(str(exc))
    text = render(fmt, result)
    _emit(text, output_file)
    for path, message in result.errors:
        click.echo(f"error: {path}: {message}", err=True)
    if output_file:
        click.echo(f"Wrote the {fmt} report to {output_file}: {result.verdict_text}", err=True)
    sys.exit(2 if result.errors or result.verdict == "unread" else 0)


def render(fmt: str, result) -> str:
    if fmt == "html":
        from mpslint.report import as_html as module
    elif fmt == "json":
        from mpslint.report import as_json as module  # type: ignore[no-redef]
    else:
        from mpslint.report import as_markdown as module  # type: ignore[no-redef]
    return module.render(result)


def _repeatable_flags(select, extend_select, ignore, torch_version, config_options, isolated, per_file_ignores,
                      extend_per_file_ignores, respect_gitignore) -> List[str]:
    """The options the suggested commands must repeat to check what this report checked."""
    flags: List[str] = []
    for name, values in (("--select", select), ("--extend-select", extend_select), ("--ignore", ignore)):
        if values:
            flags += [name, ",".join(split_commas(values))]
    if torch_version:
        flags += ["--torch-version", torch_version]
    for value in config_options:
        flags += ["--config", value]
    if isolated:
        flags.append("--isolated")
    for name, values in (("--per-file-ignores", per_file_ignores), ("--extend-per-file-ignores", extend_per_file_ignores)):
        for value in values:
            flags += [name, value]
    if respect_gitignore is not None:
        flags.append("--respect-gitignore" if respect_gitignore else "--no-respect-gitignore")
    return flags


def _emit(text: str, output_file: Optional[str]) -> None:
    if not output_file:
        click.echo(text, nl=False)
        return
    path = Path(output_file)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        _fail(f"cannot write {output_file}: {exc.strerror or exc}")


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)
