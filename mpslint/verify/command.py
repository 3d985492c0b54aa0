"""``mpslint verify SCRIPT [-- ARGS]``: the click command (registered by ``mpslint.cli``)."""

from __future__ import annotations

import importlib.util
import io
import os
import sys
import threading
import traceback

import click

from mpslint.verify import launcher, report


def _static(script: str, into: dict) -> None:
    try:
        into["findings"] = report.static_findings(script)
    except Exception as exc:  # the runtime verdict stands without the cross-reference
        into["note"] = f"static cross-reference unavailable: {type(exc).__name__}: {exc}"


def _stream_fd(stream) -> int:
    try:
        return stream.fileno()
    except (AttributeError, io.UnsupportedOperation, ValueError):
        return -1


@click.command(
    "verify",
    context_settings={"ignore_unknown_options": False},
    help="Run SCRIPT and report what happens on the mps device: CPU fallbacks, host syncs in the loop, "
         "errors. Arguments after -- go to the script.",
)
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--simulate", is_flag=True, help="Run on an emulated mps device (any OS, no Mac needed).")
@click.option("--no-fallback", is_flag=True, help="Leave PYTORCH_ENABLE_MPS_FALLBACK unset: ops without an MPS kernel raise.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, help="Seconds before the run is killed.")
@click.option("--max-steps", type=click.IntRange(min=1), default=None,
              help="Stop every DataLoader loop after N batches; without a DataLoader, stop after N optimizer steps.")
@click.option("--max-ops", type=click.IntRange(min=1), default=None, help="Stop the script after N torch ops.")
@click.option("--allow-fallback", is_flag=True, help="CPU fallbacks do not fail the verdict.")
@click.option("--allow-syncs", is_flag=True, help="Hot host syncs do not fail the verdict.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def verify(script, args, simulate, no_fallback, timeout, max_steps, max_ops, allow_fallback, allow_syncs,
           output_format):
    if not os.path.isfile(script):
        raise click.UsageError(f"no such script: {script}")
    if importlib.util.find_spec("torch") is None:  # torch itself is imported only in the child
        click.echo("error: mpslint verify needs torch: pip install 'mpslint[verify]'", err=True)
        sys.exit(2)
    options = launcher.Options(script, list(args), simulate=simulate, fallback=not no_fallback,
                               timeout=timeout, max_steps=max_steps, max_ops=max_ops)
    # The static check of the same script runs while the child does.
    static_result: dict = {}
    static_thread = threading.Thread(target=_static, args=(script, static_result), daemon=True)
    static_thread.start()
    machine = output_format == "json"
    target = sys.stderr if machine else sys.stdout
    fd = _stream_fd(target)
    try:
        if fd >= 0:
            target.flush()
            run = launcher.launch(options, stdout=fd)
        else:  # an in-memory stream (tests): capture the script's output and pass it on
            run = launcher.launch(options, capture=True)
            target.write(run.output)
        if run.raw is not None and run.raw.get("status") == "no-device":
            click.echo(
                "error: this machine has no MPS device (torch.backends.mps.is_available() is False). "
                f"To verify on an emulated mps device, run: mpslint verify --simulate {script}", err=True)
            sys.exit(2)
        if run.raw is not None and run.raw.get("status") == "unsupported":
            click.echo(f"error: {run.raw.get('message')}", err=True)
            sys.exit(2)
        if run.raw is not None and run.raw.get("status") == "verifier-error":
            click.echo("error: mpslint verify crashed while setting up the run; please report this:", err=True)
            click.echo(run.raw.get("message", ""), err=True)
            sys.exit(2)
        static_thread.join()
        static = static_result.get("findings", [])
        static_note = static_result.get("note")
        verdict = report.build(options, run, allow_fallback=allow_fallback, allow_syncs=allow_syncs, static=static)
        if static_note:
            verdict.notes.append(static_note)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception:
        click.echo("error: mpslint verify crashed; please report this with the traceback below", err=True)
        click.echo(traceback.format_exc(), err=True)
        sys.exit(2)
    if machine:
        click.echo(report.render_json(verdict))
        for note in verdict.notes:
            click.echo(f"note: {note}", err=True)
    else:
        click.echo(report.render_text(verdict))
    sys.exit(verdict.exit_code)
