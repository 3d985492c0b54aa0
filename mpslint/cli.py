"""The command line: ``mpslint [PATHS]`` (= ``mpslint check``), ``mpslint rule``, ``mpslint verify``.

Exit codes, as Ruff's: 0 clean (or everything fixed), 1 findings remain (or
``--diff`` would change something), 2 usage, configuration or internal error.
A path that cannot be read or decoded is a finding (MPS001, Ruff's E902), so
every report format shows it; ``--strict`` makes it, and MPS900, exit 2.

Imports stay inside the functions that need them: ``mpslint one_file.py`` in
pre-commit should cost little more than importing LibCST.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

import click

from mpslint import __version__
from mpslint.options import configuration_options, resolver_for, selection_options, selection_overrides
from mpslint.output import FORMATS as FORMAT_CHOICES, TEXT_FORMATS

if TYPE_CHECKING:
    from mpslint.diagnostic import Diagnostic

# Subcommands whose module is imported only when used (the verifier belongs to another package area).
LAZY_COMMANDS: Dict[str, Tuple[str, str, str]] = {
    "verify": ("mpslint.verify.command", "verify", "Run a script and report what happened on the mps device."),
    "server": ("mpslint.server.command", "server", "Run the language server for editors (LSP over stdio)."),
    "report": ("mpslint.report.command", "report", "Write a migration plan for MPS: HTML, Markdown or JSON."),
}


INTERRUPTED = 130  # the exit code of a run stopped by Ctrl-C


class UsageFailure(Exception):
    """A usage or configuration problem: message on stderr, exit 2."""


class MpslintGroup(click.Group):
    """A group whose default command is ``check``: ``mpslint --fix src`` means ``mpslint check --fix src``."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        group_flags = {"--help", "-h", "--version"}
        commands = self.list_commands(ctx)
        if not args or (args[0] not in commands and args[0] not in group_flags):
            _reject_mistyped_command(ctx, args[0] if args else None, commands)
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted(set(self.commands) | set(LAZY_COMMANDS))

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # Ctrl-C exits 130 (128 + SIGINT), as a shell and Ruff do; click's own handling exits 1,
            # which a caller cannot tell from "findings remain".
            click.echo("Interrupted.", err=True)
            ctx.exit(INTERRUPTED)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        command = self.commands.get(name)
        if command is not None or name not in LAZY_COMMANDS:
            return command
        module_name, attribute, _ = LAZY_COMMANDS[name]
        try:
            import importlib

            return getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            return _unavailable(name, exc)


    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing commands in `mpslint --help` must not import the verifier (and torch). Each description is
        # the command's first sentence, whole: click's default cuts it at 45 characters, mid-sentence.
        rows = [(name, command.get_short_help_str(limit=1000)) for name, command in sorted(self.commands.items())]
        rows += [(name, help_text) for name, (_, _, help_text) in LAZY_COMMANDS.items() if name not in self.commands]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


def _reject_mistyped_command(ctx: click.Context, word: Optional[str], commands: List[str]) -> None:
    """`mpslint reprot .` is a typo for `report`, not a path to check (Ruff: exit 2 with a tip).

    Only a word that names nothing on disk and is close to a command: a file or
    folder of that name is still checked, as any path is.
    """
    if not word or word.startswith("-") or os.path.lexists(word):
        return
    import difflib

    close = difflib.get_close_matches(word, commands, n=1, cutoff=0.75)
    if close:
        raise click.UsageError(f"unrecognized subcommand {word!r}\n\n  tip: a similar subcommand exists: {close[0]!r}", ctx)


def _unavailable(name: str, exc: BaseException) -> click.Command:
    @click.command(name, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
    @click.pass_context
    def command(ctx: click.Context) -> None:
        click.echo(f"error: `mpslint {name}` is not available in this installation: {exc}", err=True)
        if name == "verify" and isinstance(exc, ImportError) and exc.name == "torch":
            click.echo("hint: the verifier needs PyTorch: pip install 'mpslint[verify]'", err=True)
        ctx.exit(2)

    return command


@click.group(cls=MpslintGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="mpslint", message="%(prog)s %(version)s")
def main() -> None:
    """mpslint: make PyTorch code ready for Apple silicon's mps device.

    `mpslint [PATHS]` is the same as `mpslint check [PATHS]`.
    """


@main.command("check")
# readable=False: a path that cannot be read is an MPS001 finding, and the other paths are still checked.
@click.argument("paths", nargs=-1, type=click.Path(path_type=str, readable=False))
@click.option("--fix", is_flag=True, help="Apply fixes (safe ones; with --unsafe-fixes, unsafe ones too).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix) or offer fixes that may change behaviour.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff and write nothing; exit 1 if there is one.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied, per file.")
@click.option("--fix-only", is_flag=True, help="Apply fixes and report nothing else; exit 0 whatever remains (implies --fix).")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODES` to every line with findings, and nothing else.")
@click.option("--ignore-noqa", is_flag=True, help="Report (and fix) what `# noqa` comments suppress.")
@click.option("--follow-symlinks", is_flag=True,
              help="With --fix, also write through symbolic links to files outside the paths checked.")
@selection_options
@configuration_options
@click.option(
    "--output-format",
    type=click.Choice(FORMAT_CHOICES),
    envvar="MPSLINT_OUTPUT_FORMAT",
    show_envvar=True,
    default="concise",
    show_default=True,
    help="How to print findings; only concise, full and grouped add summary lines.",
)
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=str), help="Write the report to this file.")
@click.option("--statistics", is_flag=True, help="Count findings per rule instead of listing them.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if nothing remains.")
@click.option("-n", "--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option(
    "--cache-dir",
    envvar="MPSLINT_CACHE_DIR",
    show_envvar=True,
    type=click.Path(file_okay=False, path_type=str),
    help="Where to keep the cache (default: .mpslint_cache in the project root).",
)
@click.option("--torch-version", metavar="X.Y", help="The lowest torch version the code supports (overrides config).")
@click.option("--stdin-filename", metavar="PATH", help="The path of the code read from stdin (for config and messages).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: one per CPU this process may use).")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only: no summary, no warnings about the configuration or an empty run.")
@click.option("-s", "--silent", is_flag=True, help="Print nothing; the exit code still says whether findings remain.")
@click.option("--show-files", is_flag=True, help="Print the files that would be checked, then exit.")
@click.option("--show-settings", is_flag=True, help="Print the settings the first file is checked with, then exit.")
@click.option("-w", "--watch", is_flag=True, help="Check again whenever a checked file changes (Ctrl-C stops).")
@click.option("--color", type=click.Choice(("auto", "always", "never")), default="auto", show_default=True,
              help="Colour the findings; auto: on a terminal, unless NO_COLOR is set (FORCE_COLOR forces it).")
@click.option("--strict", is_flag=True, help="Exit 2 when a rule crashed (MPS900) or a path could not be read (MPS001).")
@click.option("-v", "--verbose", is_flag=True, help="Print the traceback of internal errors (MPS900).")
@click.version_option(__version__, "--version", prog_name="mpslint", message="%(prog)s %(version)s")
def check(paths: Tuple[str, ...], watch: bool, **flags) -> None:
    """Check PATHS (default: the current directory); `-` reads stdin."""
    if watch:
        from mpslint.watch import watch_and_check

        sys.exit(watch_and_check(paths, lambda: _check_or_fail(paths, flags), flags))
    sys.exit(_check_or_fail(paths, flags))


def _check_or_fail(paths: Tuple[str, ...], flags: Dict[str, object]) -> int:
    try:
        return _check(paths, **flags)  # type: ignore[arg-type]
    except UsageFailure as exc:
        click.echo(f"error: {exc}", err=True)
        return 2


def _check(
    paths: Tuple[str, ...],
    *,
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    show_fixes: bool,
    fix_only: bool,
    add_noqa: bool,
    ignore_noqa: bool,
    follow_symlinks: bool,
    select: Tuple[str, ...],
    extend_select: Tuple[str, ...],
    ignore: Tuple[str, ...],
    exclude: Tuple[str, ...],
    extend_exclude: Tuple[str, ...],
    force_exclude: bool,
    config_options: Tuple[str, ...],
    isolated: bool,
    per_file_ignores: Tuple[str, ...],
    extend_per_file_ignores: Tuple[str, ...],
    respect_gitignore: Optional[bool],
    output_format: str,
    output_file: Optional[str],
    statistics: bool,
    exit_zero: bool,
    exit_non_zero_on_fix: bool,
    no_cache: bool,
    cache_dir: Optional[str],
    torch_version: Optional[str],
    stdin_filename: Optional[str],
    jobs: Optional[int],
    quiet: bool,
    silent: bool,
    show_files: bool,
    show_settings: bool,
    color: str,
    strict: bool,
    verbose: bool,
) -> int:
    from mpslint.config import ConfigError, check_torch_floor, parse_torch_version
    from mpslint.runner import Mode

    if sum((fix_only, add_noqa, diff)) > 1:
        raise UsageFailure("--fix-only, --add-noqa and --diff cannot be combined")
    fix = fix or fix_only
    quiet = quiet or silent

    use_stdin = "-" in paths or (stdin_filename is not None and not paths)
    if use_stdin and len(paths) > 1:
        raise UsageFailure("`-` (stdin) cannot be combined with other paths")
    warnings: List[str] = []
    try:
        floor = None
        if torch_version is not None:
            floor = parse_torch_version(torch_version)
            warning = check_torch_floor(floor, "--torch-version")
            if warning is not None:
                warnings.append(warning)
        overrides = selection_overrides(select, extend_select, ignore, exclude, extend_exclude, floor)
        resolver = resolver_for(overrides, config_options, isolated, per_file_ignores, extend_per_file_ignores,
                                respect_gitignore, ignore_noqa)
    except ConfigError as exc:
        raise UsageFailure(str(exc)) from None
    if show_files or show_settings:
        if use_stdin and not stdin_filename:
            raise UsageFailure("--show-files and --show-settings need paths (or --stdin-filename)")
        from mpslint.show import print_files, print_settings

        try:
            shown = [stdin_filename] if use_stdin else list(paths) or ["."]
            return (print_files if show_files else print_settings)(shown, resolver, force_exclude)
        except ConfigError as exc:
            raise UsageFailure(str(exc)) from None
    roots = None  # where --fix may write: under the paths given, unless asked to follow links out of them
    if fix and not use_stdin and not follow_symlinks:
        roots = tuple(os.path.realpath(p) for p in (paths or (".",)))
    mode = Mode(fix=fix and not diff, diff=diff, unsafe=unsafe_fixes, roots=roots)
    machine = output_format not in TEXT_FORMATS

    try:
        if use_stdin:
            results, sources, stdin_output = _run_stdin(stdin_filename, resolver, mode, force_exclude)
            unreadable: List["Diagnostic"] = []
            located: Dict[str, str] = {}
        else:
            sources = {}
            results, unreadable, located = _run_paths(
                list(paths) or ["."], resolver, mode, force_exclude, jobs, None if no_cache else cache_dir, no_cache
            )
    except ConfigError as exc:
        raise UsageFailure(str(exc)) from None
    if not quiet:
        for warning in warnings + resolver.warnings:
            click.echo(f"warning: {warning}", err=True)
    if results is None:  # stdin named an excluded file
        return 0
    if add_noqa:
        if use_stdin:
            raise UsageFailure("--add-noqa edits files: it cannot read stdin")
        from mpslint.add_noqa import add_noqa_to_files

        added, failures_ = add_noqa_to_files(results, located)
        for path, message in failures_:
            click.echo(f"error: {path}: {message}", err=True)
        if not silent:
            click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
        return 2 if failures_ else 0

    from mpslint.diagnostic import IO_ERROR
    from mpslint.output import Options
    from mpslint.output.concise import header
    from mpslint.output.summary import show_fixes as render_show_fixes, statistics as render_statistics, summary

    remaining = sorted(unreadable + [d for r in results for d in r.diagnostics], key=lambda d: d.sort_key())
    fixed_total = sum(sum(r.fixed.values()) for r in results)
    failures = [(r.display, r.error) for r in results if r.error]
    for path, message in failures:
        click.echo(f"error: {path}: {message}", err=True)
    nothing_checked = not results and not unreadable  # only paths: stdin always gives a result
    if nothing_checked and not quiet:
        click.echo("warning: No Python files found under the given path(s)", err=True)
    if verbose:
        for r in results:
            if r.detail:
                click.echo(r.detail, err=True, nl=False)
    for r in results:
        if r.warning:
            click.echo(f"warning: {r.display}: {r.warning}", err=True)
    internal = [d for d in remaining if d.code == "MPS900"]
    io_errors = [d for d in remaining if d.code == IO_ERROR]
    if verbose:
        for d in internal:
            click.echo(f"{d.filename}: {d.message}\n{d.detail or ''}", err=True)
    # MPS001 and MPS900 are findings like any other (exit 1, as Ruff's E902); --strict makes them exit 2.
    failed = bool(failures) or (strict and bool(internal or io_errors))

    if mode.diff:
        diffs = "".join(r.diff for r in results if r.diff)
        would = fixed_total
        _emit(diffs, output_file, err=False)
        for d in io_errors:  # stdout holds the diff only: a path the diff could not cover is said on stderr
            click.echo(header(d, Options()), err=True)
        if not quiet:
            click.echo(f"Would fix {_plural(would)}." if would else "No fixes would be applied.", err=True)
            floors = _fix_floors(results, resolver, True)
            if floors and would:
                click.echo(floors, err=True)
            for line in _entry_points(results, after="--fix"):
                click.echo(line, err=True)
        changed = any(r.diff for r in results)
        return 2 if failed else (1 if changed or io_errors else 0)

    stdin_fix = use_stdin and mode.fix
    if stdin_fix:
        # The fixed source is the only thing on stdout (in the input's own encoding); the report goes to stderr.
        click.echo(stdin_output, nl=False)

    from mpslint.output import render

    colour = _colour(color, output_file) and not machine
    options = Options(unsafe=unsafe_fixes, source=lambda path: _source(path, sources, located), color=colour)
    remaining_count = len(remaining)
    if fix_only:
        # What is left is not reported (Ruff's --fix-only); what could not be read or parsed still is.
        remaining = [d for d in remaining if d.code in (IO_ERROR, "MPS000")]
    if silent:
        remaining = []
    pieces: List[str] = []
    if statistics and not silent:
        pieces.append(render_statistics(remaining, unsafe=unsafe_fixes, as_json=output_format == "json"))
    elif not silent:
        pieces.append(render(output_format, remaining, options))
    notes: List[str] = []
    if show_fixes and mode.fix and not silent:
        notes.append(render_show_fixes([(r.display, r.fixed) for r in results]))
    if not quiet and (not machine or stdin_fix):
        if fix_only:
            lines = [f"Fixed {_plural(fixed_total)}." if fixed_total else "No fixes applied."]
        else:
            lines = summary(remaining, fixed_total, unsafe=unsafe_fixes, fixing=mode.fix)
        if not (remaining or fixed_total) and (failures or nothing_checked):
            lines = []  # "All checks passed!" only when every path asked for was checked
        floors = _fix_floors(results, resolver, mode.fix)
        if floors and lines and (fixed_total or not fix_only):
            lines.append(floors)
        gates = _gate_floors(results, resolver)
        if gates and lines:
            lines.append(gates)
        if mode.fix and lines and not use_stdin:
            lines.extend(_entry_points(results))
        if lines:
            notes.append("\n".join(lines) + "\n")
    if machine:
        if not silent:
            _emit("".join(pieces), output_file, err=stdin_fix)
        for note in notes:
            click.echo(note, err=True, nl=False)
    else:
        report = "".join(pieces)
        if report and notes and output_format in ("full", "grouped") and not statistics:
            report += "\n"  # the last block and the summary are separate paragraphs
        _emit(report + "".join(notes), output_file, err=stdin_fix, color=colour)

    if failed:
        return 2
    if fix_only:
        return 1 if exit_non_zero_on_fix and fixed_total else 0
    if exit_zero:
        return 0
    if remaining_count:
        return 1
    if exit_non_zero_on_fix and fixed_total:
        return 1
    return 0


def _fix_floors(results, resolver, fixing: bool) -> str:
    """The torch the fixes of this run were written for (files fixed, or offered a fix), and where it came from."""
    from mpslint.knowledge.cuda_api import ASSUMED_FLOOR
    from mpslint.output.summary import floor_note

    def relevant(r) -> bool:
        # The CUDA family's fixes (MPS1xx) depend on the torch they are written for: the device picker, torch.accelerator, AMP.
        if fixing:
            return any(code.startswith("MPS1") for code in r.fixed)
        return any(d.fix is not None and d.code.startswith("MPS1") for d in r.diagnostics)

    return floor_note(_floors_of(results, resolver, relevant), ASSUMED_FLOOR)


def _gate_floors(results, resolver) -> str:
    """Which torch the version-gated findings (MPS504) of this run were checked against, and where that came from."""
    from mpslint.knowledge.cuda_api import ASSUMED_FLOOR
    from mpslint.output.summary import gate_note

    gated = _floors_of(results, resolver, lambda r: any(d.code in VERSION_GATED for d in r.diagnostics))
    return gate_note(gated, ASSUMED_FLOOR)


def _floors_of(results, resolver, relevant) -> list:
    """(torch floor, where it came from) of each file of the run that ``relevant`` keeps."""
    floors = []
    for r in results:
        if not relevant(r):
            continue
        try:
            config = resolver.for_path(Path(r.display)) if r.display != "-" else resolver.for_directory(resolver.cwd)
        except Exception:  # noqa: BLE001 - a note must never fail the run
            continue
        settings = config.settings
        floors.append((settings.torch_version, settings.torch_version_origin))
    return floors


# Findings that compare a feature with the project's torch floor (MPS501/MPS502 name their torch in each message).
VERSION_GATED = frozenset({"MPS504"})


def _entry_points(results, after: str = "") -> List[str]:
    """Per entry point of a fix run: can it reach MPS now, or what blocks it (issue 25)."""
    from mpslint.output.entry_points import entry_point_lines

    lines = entry_point_lines([(r.display, r.text, r.diagnostics) for r in results if not r.error])
    if lines and after:
        lines[0] = lines[0].replace(" can reach MPS", f" can reach MPS after {after}", 1)
    return lines


def _plural(n: int) -> str:
    return f"{n} finding" if n == 1 else f"{n} findings"


def _colour(choice: str, output_file: Optional[str]) -> bool:
    """Colour for people at a terminal; the NO_COLOR and FORCE_COLOR conventions (no-color.org, force-color.org)."""
    if choice != "auto":
        return choice == "always"
    if output_file:
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def _emit(text: str, output_file: Optional[str], *, err: bool, color: bool = False) -> None:
    if output_file:
        path = Path(output_file)
        try:
            if path.parent and not path.parent.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageFailure(f"cannot write {output_file}: {exc.strerror or exc}") from None
        return
    if text:
        click.echo(text, nl=False, err=err, color=color or None)


def _source(path: str, sources: Dict[str, str], located: Dict[str, str]) -> Optional[str]:
    """A file's current text, for the `full` format (fixed files are read after the fix).

    ``located`` maps a shown name that is not the file's name (``\\xff`` for a byte) to the file.
    """
    if path in sources:
        return sources[path]
    from mpslint.source import DecodeError, SourceText

    try:
        with open(located.get(path, path), "rb") as handle:
            return SourceText.decode(handle.read()).text
    except (OSError, DecodeError):
        return None


def _run_stdin(stdin_filename: Optional[str], resolver, mode, force_exclude: bool):
    from mpslint.runner import process_bytes_safely

    stream = getattr(sys.stdin, "buffer", sys.stdin)
    data = stream.read()
    if isinstance(data, str):
        data = data.encode("utf-8")
    from mpslint.files import shown

    display = shown(stdin_filename) if stdin_filename else "-"
    config = resolver.for_path(Path(stdin_filename)) if stdin_filename else resolver.for_directory(resolver.cwd)
    if stdin_filename and force_exclude:
        from mpslint.files import _forced_out

        if _forced_out(Path(os.path.abspath(stdin_filename)), config, resolver):
            if mode.fix:
                click.echo(data, nl=False)  # pass the code through untouched
            return None, {}, data
    settings = config.settings_for(Path(stdin_filename)) if stdin_filename else config.settings
    result = process_bytes_safely(data, display, settings, mode, target=None)
    sources: Dict[str, object] = {}
    fixed_bytes = data  # undecodable or unchanged input passes through untouched: an editor must not lose it
    from mpslint.source import DecodeError, SourceText

    try:
        source: Optional[SourceText] = SourceText.decode(data)
    except DecodeError:
        source = None
    if result.error is None and source is not None:
        sources[display] = result.text if result.text is not None else source.text
        if result.text is not None and result.fixed:
            fixed_bytes = source.encode(result.text)
    return [result], sources, fixed_bytes


def _run_paths(paths: List[str], resolver, mode, force_exclude: bool, jobs, cache_dir: Optional[str], no_cache: bool):
    from mpslint.files import discover, shown
    from mpslint.runner import run

    found = discover(paths, resolver, force_exclude=force_exclude)
    files = [(path, shown(path), config.settings_for(path)) for path, config in found.files]
    cache_path = None
    if not no_cache and not mode.fixing:
        from mpslint.cache import CACHE_DIR_NAME

        cache_path = Path(cache_dir) if cache_dir else resolver.cache_root() / CACHE_DIR_NAME
    results = run(files, mode, jobs=jobs, cache_dir=cache_path)
    from mpslint.diagnostic import io_error

    located = {display: path for path, display, _ in files if display != path}
    return results, [io_error(shown(path), message) for path, message in found.errors], located


@main.command("clean")
@click.option("--cache-dir", envvar="MPSLINT_CACHE_DIR", show_envvar=True, type=click.Path(file_okay=False, path_type=str),
              help="Also remove this cache folder.")
def clean(cache_dir: Optional[str]) -> None:
    """Remove mpslint's caches in the current directory and its subdirectories (Ruff's `clean`)."""
    from mpslint.cache import remove_caches

    for removed in remove_caches(Path("."), Path(cache_dir) if cache_dir else None):
        click.echo(f"Removing cache at: {removed.as_posix()}", err=True)


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Print every rule.")
@click.option("--output-format", type=click.Choice(("text", "json")), default="text", show_default=True)
def rule(code: Optional[str], show_all: bool, output_format: str) -> None:
    """Explain a rule: `mpslint rule MPS101` or `mpslint rule cuda-method`."""
    from mpslint import catalog

    if show_all == bool(code):
        click.echo("error: give one rule code or name, or --all", err=True)
        sys.exit(2)
    if show_all:
        docs = list(catalog.load().values())
    else:
        doc = catalog.find(code)
        if doc is None:
            click.echo(f"error: unknown rule {code!r}; `mpslint rule --all` lists every rule", err=True)
            sys.exit(2)
        docs = [doc]
    if output_format == "json":
        import json

        data = [
            {"code": d.code, "name": d.name, "summary": d.summary, "fix": d.fix, "since": d.since, "url": d.url, "explanation": d.text}
            for d in docs
        ]
        click.echo(json.dumps(data if show_all else data[0], indent=2))
        return
    click.echo("\n".join(d.text for d in docs), nl=False)


if __name__ == "__main__":  # pragma: no cover
    main()
