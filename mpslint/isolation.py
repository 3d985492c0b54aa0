"""mpslint's own processes import nothing from the tree they check.

Python puts a folder the user controls first on ``sys.path`` in three places:
``python -m mpslint`` puts the working directory there, and the ``python -c``
command lines that start multiprocessing's spawned workers and its resource
tracker put ``''`` there (the working directory, looked up at each import).
A ``socket.py``, ``pickle.py``, ``tomllib.py`` or ``libcst/`` in the checked
repository would then run inside mpslint: a security hole when checking an
untrusted pull request, and a crash for an honest repository that happens to
have a module of that name. Only ``mpslint verify`` runs the user's code, by
design.

Children are started with ``-I`` (isolated mode: no working directory, no
script folder on ``sys.path``; Python 3.9 has no ``-P``) and are handed this
process's own, already cleaned, ``sys.path``.
"""

# Only modules the interpreter has imported before `python -m` runs anything (no typing, no
# __future__): this module is imported while the working directory is still on sys.path.
import os
import sys

_ISOLATED = "-I"


def drop_working_directory() -> None:
    """Undo what ``python -m`` did: the working directory first on ``sys.path``.

    Runs before anything but the package itself is imported. The package's own
    modules are found through ``mpslint.__path__``, not ``sys.path``, so this
    also works when mpslint itself lives in the working directory.
    """
    if sys.path and _is_working_directory(sys.path[0]):
        del sys.path[0]


def _is_working_directory(entry: str) -> bool:
    if entry in ("", "."):
        return True
    try:
        return os.path.samefile(entry, os.getcwd())
    except OSError:
        return False


def import_path() -> list:
    """This process's ``sys.path`` without the entries that mean "the working directory"."""
    return [entry for entry in sys.path if entry not in ("", ".")]


def isolate_multiprocessing() -> None:
    """Start multiprocessing's spawned workers and its resource tracker in isolated mode.

    Their command line is ``python <flags> -c "from multiprocessing.spawn import
    ..."``; the ``-c`` puts ``''`` first on ``sys.path`` before multiprocessing
    imports socket, pickle, copyreg and the rest. The flags come from
    ``multiprocessing.util._args_from_interpreter_flags`` on every CPython mpslint
    supports (3.9 to 3.14), the one hook that reaches both command lines. A
    spawned worker gets the parent's ``sys.path`` back from multiprocessing
    before it unpickles anything of mpslint's, so ``-I`` costs nothing (its
    ``-E`` and ``-s`` only apply until then).
    """
    from multiprocessing import util

    flags = util._args_from_interpreter_flags
    if getattr(flags, "mpslint_isolated", False):
        return

    def isolated_flags() -> list:
        args = flags()
        return args if _ISOLATED in args else [*args, _ISOLATED]

    isolated_flags.mpslint_isolated = True  # type: ignore[attr-defined]
    util._args_from_interpreter_flags = isolated_flags


# Run by an isolated interpreter: sys.path is set from the parent's before anything of
# mpslint's (or anything but the standard library) is imported.
_BOOT = "import sys, json, runpy; sys.path[:] = json.loads(sys.argv.pop(1)); runpy.run_module(sys.argv[1], run_name='__main__', alter_sys=True)"


def python_command(module: str) -> list:
    """A command line that runs ``python -m module`` without the working directory on ``sys.path``.

    ``-I`` alone would also drop ``PYTHONPATH`` and the user's site-packages, where
    mpslint itself may be installed; the child gets this process's path instead.
    """
    import json  # not at the top: `python -m mpslint` imports this module before the path is clean

    return [sys.executable, _ISOLATED, "-c", _BOOT, json.dumps(import_path()), module]
