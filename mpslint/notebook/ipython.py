"""IPython syntax in code cells: which cells are Python at all, and Python stand-ins for the rest, positions kept.

As Ruff does (https://docs.astral.sh/ruff/configuration/#jupyter-notebook-discovery
and its notebook reader): a cell whose first line is an automagic
(``pip install x``, ``cd data``) or that starts with a cell magic other than
the ones that run their body as Python (``%%time``, ``%%timeit``,
``%%capture``, ``%%prun``, ``%%debug``, ``%%python``...) is not Python and is
left out; every other code cell is.

Inside a Python cell, IPython's escapes are not Python: line magics
(``%matplotlib inline``), shell escapes (``!pip install x``), their
assignment forms (``files = !ls``) and help (``torch.cuda?``, ``?x``).
Each is replaced by a Python stand-in of exactly the same length (``...``
padded with spaces), so no line or column of the code around it moves: the
engine's positions and edits are positions in the cell. Which lines hold an
escape is learnt from Python's own parser: a cell is parsed, and only the
line where it fails is replaced, if that line is an escape, until the cell
parses or fails on a line that is not one (then it has a real syntax error,
reported where Python reports it). A ``%`` or ``!`` inside a string or a
comment never reaches the parser as a failure, so it is never touched. The
code after a line magic (``%time train(x)``) is IPython's to run and is not
checked, as in Ruff.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from typing import List, Optional, Tuple

from mpslint.source import line_starts

# The first word of a line that IPython runs as a magic without its `%` (automagic): Ruff's list.
AUTOMAGICS = frozenset(
    """alias alias_magic autoawait autocall automagic bookmark cd code_wrap colors conda config debug dhist
    dirs doctest_mode edit env gui history killbgscripts load load_ext loadpy logoff logon logstart logstate
    logstop lsmagic macro magic mamba matplotlib micromamba notebook page pastebin pdb pdef pdoc pfile pinfo
    pinfo2 pip popd pprint precision prun psearch psource pushd pwd pycat pylab quickref recall rehashx
    reload_ext rerun reset reset_selective run save sc set_env sx system tb time timeit unalias unload_ext
    who who_ls whos xdel xmode""".split()
)
# Cell magics whose body is Python that runs in the notebook's namespace.
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "ipytest", "prun", "pypy", "python", "python3", "time", "timeit"})
_ASSIGNMENT_OPERATORS = frozenset({"=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^="})
# `files = !ls`, `a, b = %sx cmd`: IPython's assignment from a shell escape or a magic.
_ASSIGNED_ESCAPE = re.compile(r"^[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*(?=[!%])")


def is_python_cell(source: str) -> bool:
    lines = source.splitlines()
    if lines:
        words = lines[0].split()
        if words and words[0] in AUTOMAGICS and not (len(words) > 1 and words[1] in _ASSIGNMENT_OPERATORS):
            return False
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("%%"):
            name = stripped[2:].split()
            return bool(name) and name[0] in PYTHON_CELL_MAGICS
        break
    return True


@dataclass(frozen=True)
class PythonCell:
    """A cell's source with its IPython escapes replaced (same length), or the syntax error it really has."""

    text: str
    escapes: Tuple[Tuple[int, int], ...]  # (start, end) offsets of the replaced text
    error: Optional[SyntaxError] = None

    def touches_escape(self, start: int, end: int) -> bool:
        """Whether an edit of [start, end) would change replaced text (an insertion at an escape's start does not)."""
        for first, last in self.escapes:
            if start < last and end > first and not (start == end == first):
                return True
        return False


# Text that may be an IPython escape; a cell without any is Python or has a real syntax error.
_MAYBE_ESCAPE = re.compile(r"^[ \t]*[%!?]|\?[ \t]*(?:#.*)?$|=[ \t]*[!%]", re.MULTILINE)


def may_have_escapes(source: str) -> bool:
    return _MAYBE_ESCAPE.search(source) is not None


def as_python(source: str, *, parse: bool = True) -> PythonCell:
    """The cell as Python; with ``parse=False`` a cell with no escape-like text is taken as it is, unparsed."""
    if not parse and not may_have_escapes(source):
        return PythonCell(source, ())
    text = source
    escapes: List[Tuple[int, int]] = []
    for _ in range(source.count("\n") + source.count("\r") + 2):
        error = _syntax_error(text)
        if error is None:
            return PythonCell(text, tuple(escapes))
        if not isinstance(error, SyntaxError) or not error.lineno:
            break
        region = _escape_on(text, error.lineno)
        if region is None or any(first <= region[0] < last for first, last in escapes):
            return PythonCell(text, tuple(escapes), error)
        start, end = region
        text = text[:start] + _stand_in(text[start:end]) + text[end:]
        escapes.append(region)
    return PythonCell(text, tuple(escapes), _syntax_error(text) or SyntaxError("invalid syntax"))


def _syntax_error(text: str) -> Optional[Exception]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<cell>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return exc
    return None


def _escape_on(text: str, row: int) -> Optional[Tuple[int, int]]:
    """The span of the IPython escape on line ``row`` (through its backslash continuations), if it has one."""
    starts = line_starts(text)
    if row > len(starts):
        return None
    begin = starts[row - 1]
    line = _line(text, starts, row)
    stripped = line.lstrip(" \t")
    if not stripped:
        return None
    if stripped[0] in "%!?" or _code_part(stripped).rstrip().endswith("?"):
        start = begin + len(line) - len(stripped)
    else:
        assigned = _ASSIGNED_ESCAPE.match(line)
        if assigned is None:
            return None
        start = begin + assigned.end()
    end = begin + len(line)
    while line.rstrip().endswith("\\") and row < len(starts):  # IPython joins continued escape lines
        row += 1
        line = _line(text, starts, row)
        end = starts[row - 1] + len(line)
    return start, end


def _code_part(line: str) -> str:
    """``line`` without a trailing comment (a ``#`` outside quotes): ``x = f(  # why?`` is not help syntax."""
    quote = None
    for i, ch in enumerate(line):
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def _line(text: str, starts: List[int], row: int) -> str:
    end = starts[row] if row < len(starts) else len(text)
    return text[starts[row - 1]:end].rstrip("\r\n")


def _stand_in(escape: str) -> str:
    """``...`` (an expression, valid as a statement too) padded to the escape's length; line breaks kept."""
    lines = re.split(r"(\r\n|\r|\n)", escape)
    first = lines[0]
    placeholder = "..." if len(first) >= 3 else "0"
    lines[0] = placeholder + " " * (len(first) - len(placeholder)) if first else first
    for i in range(2, len(lines), 2):
        lines[i] = " " * len(lines[i])
    return "".join(lines)
