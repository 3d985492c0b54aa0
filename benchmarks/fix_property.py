"""`--fix` changes a program only where it edits it, in every encoding and line ending: a property, fuzzed.

    python benchmarks/fix_property.py --minutes 5            # generated and mutated programs for 5 minutes
    python benchmarks/fix_property.py --minutes 1 --seed 7   # another sequence of programs

For each program (a fixture or snippet mutated with form feeds, tabs, non-ASCII
comments and CUDA code in any block, or a program hypothesmith generates from
Python's grammar), written in an encoding (UTF-8, UTF-8 with a BOM, latin-1 or
cp1252 with a coding cookie) and with line endings (LF, CRLF, CR or a mix),
the file is fixed through the runner (``process_file``, as ``mpslint --fix``
writes it), and every pass of the fixer is checked:

- each statement the pass did not edit is still there, with the same code and
  in the same block (the same functions, classes and compound statements
  around it): no statement changes scope, no name is lost outside an edit;
- each comment outside the pass's edits is still there;
- the written file decodes with the same encoding and BOM, has no kind of line
  ending the original did not have, parses, and a second fix changes nothing.

A file that does not parse, or cannot be written in the chosen encoding, is
skipped. ``tests/test_fix_property.py`` runs the same property with a fixed seed
and a small budget in CI. Not a test: it prints what it ran and every violation
found, and exits 1 if there was one.
"""

from __future__ import annotations

import argparse
import ast
import codecs
import io
import os
import random
import re
import sys
import tempfile
import time
import tokenize
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mpslint import fixer  # noqa: E402
from mpslint.analysis.tree import Tree  # noqa: E402
from mpslint.config import Settings  # noqa: E402
from mpslint.runner import Mode, process_file  # noqa: E402
from mpslint.source import DecodeError, SourceText  # noqa: E402

SETTINGS = Settings()
ENCODINGS = ("utf-8", "utf-8 with BOM", "utf-8 with cookie", "latin-1", "cp1252")
ENDINGS = ("LF", "CRLF", "CR", "mixed")
_ENDING = re.compile(r"\r\n|\r|\n")
_BYTE_ENDING = re.compile(rb"\r\n|\r|\n")

SNIPPETS = (
    "import torch\n\ndef f():\n    m = Model().cuda()\n    return m\n",
    "import torch\n\nclass A:\n    def f(self):\n        m = Model().cuda()\n        return m\n\n    def g(self):\n"
    "        x = torch.zeros(1).cuda()  # keep\n        return x\n",
    "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nx = torch.zeros(1).cuda()\n",
    "import torch\nuse_cuda = torch.cuda.is_available()\nif use_cuda:\n    model = model.cuda()\n",
    "import torch\n\ndef f(x):\n    y = x.cuda()\n    return y\n\n\ndef g():\n    return Model().cuda()\n",
    "import torch\nfor x, y in loader:\n    x, y = x.cuda(), y.cuda()\n    loss = model(x).sum()\n"
    "    loss.backward()\n    print(loss.item())\n",
)


def corpus() -> List[str]:
    """The snippets above and every fixture script: real CUDA code for the mutations to work on."""
    texts = list(SNIPPETS)
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        texts.append(path.read_text(encoding="utf-8"))
    return texts


# --- programs ----------------------------------------------------------------------------------


def mutate(text: str, rng: random.Random) -> str:
    """``text`` with one to three mutations a fixer must survive."""
    lines = text.splitlines(keepends=True)  # the corpus has LF endings only, and no form feed yet
    for _ in range(rng.randint(1, 3)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        line = lines[i]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        kind = rng.choice(("formfeed", "formfeed-line", "tabs", "comment", "cuda", "string", "blank", "helper", "import"))
        if kind == "formfeed":  # Python counts indentation from the last form feed
            lines[i] = "\x0c" + line if rng.random() < 0.7 else indent + "\x0c" + line[len(indent):]
        elif kind == "formfeed-line":
            lines.insert(i, "\x0c\n")
        elif kind == "tabs":  # the whole file, so that indentation stays consistent
            lines = [re.sub(r"^(?:    )+", lambda m: "\t" * (len(m.group()) // 4), ln) for ln in lines]
        elif kind == "comment":
            lines[i] = line.rstrip("\n") + "  # caf\u00e9 \u00b5s\n"
        elif kind == "cuda":  # CUDA code in whatever block line i is in
            lines.insert(i, f"{indent}m_{i} = Model().cuda()\n")
        elif kind == "string":
            lines.insert(i, f"{indent}s_{i} = 'd\u00e9j\u00e0 vu'\n")
        elif kind == "helper":  # a `pick_device` of the module's own, of any signature, anywhere
            signature = rng.choice(("", "idx", "idx=0", "*args", "*, kind"))
            lines.insert(i, f"{indent}def pick_device({signature}):\n{indent}    return torch.device('cpu')\n")
        elif kind == "import":  # an import after code (a notebook's cells each import)
            lines.insert(i, f"{indent}import numpy as np\n")
        else:
            lines.insert(i, "\n")
    return "".join(lines)


def encode(text: str, rng: random.Random) -> Tuple[bytes, str, str]:
    """``text`` as the bytes of a file: (data, encoding label, line-ending label)."""
    ending = rng.choice(ENDINGS)
    if ending != "mixed":
        newline = {"LF": "\n", "CRLF": "\r\n", "CR": "\r"}[ending]
        text = text.replace("\n", newline)
    else:
        text = re.sub("\n", lambda m: rng.choice(("\n", "\r\n", "\r")), text)
    first = _ENDING.search(text)
    newline = first.group() if first else "\n"
    label = rng.choice(ENCODINGS)
    try:
        if label == "utf-8 with BOM":
            return codecs.BOM_UTF8 + text.encode("utf-8"), label, ending
        if label in ("latin-1", "cp1252", "utf-8 with cookie"):
            name = "utf-8" if label == "utf-8 with cookie" else label
            cookie = f"# -*- coding: {name} -*-{newline}"
            return (cookie + text).encode(name), label, ending
    except UnicodeEncodeError:
        label = "utf-8"  # a character the legacy encoding does not have
    return text.encode("utf-8"), "utf-8", ending


def mutated_programs(rng: random.Random) -> Iterator[Tuple[str, bytes, str, str]]:
    texts = corpus()
    while True:
        # The snippets half of the time: they are small, and hold the shapes that broke before.
        text = rng.choice(SNIPPETS) if rng.random() < 0.5 else rng.choice(texts)
        data, encoding, ending = encode(mutate(text, rng), rng)
        yield "mutated", data, encoding, ending


def with_cuda_code(source: str) -> str:
    """A generated program with CUDA code before and after it (in a function), so that fixes happen around it."""
    return "import torch\nx = torch.ones(1).cuda()\n" + source + "\n\ndef _h():\n    return Model().cuda()\n"


def generated_programs(rng: random.Random) -> Iterator[Tuple[str, bytes, str, str]]:
    import hypothesmith
    from hypothesis.errors import NonInteractiveExampleWarning

    strategy = hypothesmith.from_grammar(auto_target=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        while True:
            data, encoding, ending = encode(with_cuda_code(strategy.example()), rng)
            yield "generated", data, encoding, ending


# --- the property --------------------------------------------------------------------------------


@dataclass
class Checked:
    changed: bool = False
    skipped: bool = False
    passes: int = 0
    violations: List[str] = field(default_factory=list)


def check_file(data: bytes, directory: str) -> Checked:
    """Fix ``data`` as a file in ``directory`` through the runner, and check every pass and the bytes written."""
    try:
        before = SourceText.decode(data)
        ast.parse(before.text)
    except (DecodeError, SyntaxError, ValueError):
        return Checked(skipped=True)
    passes: List[Tuple[str, Sequence, str]] = []
    real = fixer.apply_fixes

    def recorded(text, fixes, *, newline="\n"):
        after = real(text, fixes, newline=newline)
        passes.append((text, [e for f in fixes for e in f.edits], after))
        return after

    path = os.path.join(directory, "program.py")
    with open(path, "wb") as handle:
        handle.write(data)
    fixer.apply_fixes = recorded
    try:
        result = process_file(path, "program.py", SETTINGS, Mode(fix=True))
    finally:
        fixer.apply_fixes = real
    with open(path, "rb") as handle:
        written = handle.read()
    checked = Checked(changed=written != data, passes=len(passes))
    if result.error:
        checked.violations.append(f"the fix was not written: {result.error}")
    if result.warning and "does not parse" in result.warning:
        checked.violations.append(f"a pass was reverted: {result.warning}")
    for text, edits, after in passes:
        checked.violations.extend(pass_violations(text, edits, after))
    if checked.changed:
        checked.violations.extend(bytes_violations(data, before, written))
    return checked


def pass_violations(before: str, edits: Sequence, after: str) -> List[str]:
    """What one pass changed outside its edits (nothing, if the fixer is right)."""
    try:
        tree_after = ast.parse(after)
    except SyntaxError:
        return []  # the fixer reverts such a pass (and says so); the file is not written with it
    tree_before = ast.parse(before)
    regions = [((e.start.row, e.start.column - 1), (e.end.row, e.end.column - 1)) for e in edits]
    found: List[str] = []
    untouched = Counter(key for key, span in statements(tree_before, before) if not _touched(span, regions))
    missing = untouched - Counter(key for key, _ in statements(tree_after, after))
    for (scopes, indent, code), _ in sorted(missing.items())[:3]:
        where = " > ".join(scopes) or "module"
        found.append(f"a statement outside the edits moved or changed (was in {where}, indented {indent!r}): {code[:200]}")
    found.extend(scope_violations(tree_before, before, edits, tree_after, after))
    found.extend(import_time_violations(tree_before, tree_after))
    comments_before = _comments(before)
    if comments_before is not None:
        kept = Counter(text for text, span in comments_before if not _touched(span, regions))
        lost = kept - Counter(text for text, _ in _comments(after) or ())
        for text in sorted(lost)[:3]:
            found.append(f"a comment outside the edits was lost: {text!r}")
    return found


def scope_violations(tree_before: ast.Module, before: str, edits: Sequence, tree_after: ast.Module, after: str) -> List[str]:
    """Every statement whose start the pass did not rewrite starts, after it, in the same functions, classes
    and indentation, even where an edit changed its code (``.cuda()`` -> ``.to(device)``)."""
    from mpslint.source import line_starts, offset_of

    starts = line_starts(before)
    spans = sorted({(offset_of(starts, e.start.row, e.start.column), offset_of(starts, e.end.row, e.end.column), e.content)
                    for e in edits})
    # Where each edit's text ended up: the unchanged text between edits is copied as it was, and an edit's
    # text is its content with line breaks written as one of the three endings.
    shifts: List[Tuple[int, int]] = []  # (offset in `before` from which the shift applies, cumulative shift)
    cursor_before = cursor_after = total = 0
    for begin, end, content in spans:
        cursor_after += begin - cursor_before
        for ending in ("\n", "\r\n", "\r"):
            written = content.replace("\n", ending)
            if after.startswith(written, cursor_after):
                break
        else:
            return [f"an edit's text is not in the result where it was applied: {content[:80]!r}"]
        cursor_after += len(written)
        cursor_before = end
        total += len(written) - (end - begin)
        shifts.append((end, total))
    starts_after = line_starts(after)
    where_after = {starts_after[row - 1] + column: (scopes, indent)
                   for (scopes, indent, _), ((row, column), _) in statements(tree_after, after)}
    found: List[str] = []
    for (scopes, indent, code), ((row, column), _) in statements(tree_before, before):
        offset = starts[row - 1] + column
        if any(begin < offset < end or (begin == offset < end) for begin, end, _ in spans):
            continue  # the statement's start was rewritten
        shift = 0
        for end, cumulative in shifts:
            if end <= offset:
                shift = cumulative
        now = where_after.get(offset + shift)
        if now != (scopes, indent):
            found.append(f"a statement moved from {' > '.join(scopes) or 'module'} (indented {indent!r}) to "
                         f"{(' > '.join(now[0]) or 'module') + f' (indented {now[1]!r})' if now else 'nowhere'}: "
                         f"{code[:120]}")
            break
    return found


def import_time_violations(before: ast.Module, after: ast.Module) -> List[str]:
    """Calls a pass adds to the module's own functions must bind their arguments, and names it adds must
    be bound before the module uses them when it is imported (a TypeError or NameError on import)."""
    found: List[str] = []
    functions = {s.name: s for s in after.body if isinstance(s, ast.FunctionDef)}
    new_calls = _calls(after) - _calls(before)
    for name, positional, keywords in sorted(new_calls):
        function = functions.get(name)
        if function is not None and not _binds(function.args, positional, keywords):
            found.append(f"a fix calls {name}() with {positional} positional argument(s) and keywords "
                         f"{sorted(keywords)}, which its def does not accept")
    for name in sorted(_used_before_bound(after) - _used_before_bound(before)):
        found.append(f"a fix uses {name} at import time before the module binds it")
    return found


def _calls(module: ast.Module) -> Counter:
    return Counter(
        (node.func.id, len(node.args), tuple(sorted(k.arg or "**" for k in node.keywords)))
        for node in ast.walk(module)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and not any(isinstance(a, ast.Starred) for a in node.args)
    )


def _binds(args: ast.arguments, positional: int, keywords: Tuple[str, ...]) -> bool:
    slots = [a.arg for a in args.posonlyargs + args.args]
    required = len(slots) - len(args.defaults)
    if positional > len(slots) and args.vararg is None:
        return False
    named = set(keywords) - {"**"}
    filled = set(slots[:positional]) | named
    missing = [a for a in slots[:required] if a not in filled]
    missing += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None and a.arg not in named]
    return not missing or "**" in keywords


def _used_before_bound(module: ast.Module) -> set:
    """Names a module-level statement reads when the module runs, that only a later statement binds."""
    bound_at: dict = {}
    for index, statement in enumerate(module.body):
        for node in _runs_on_import(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound_at.setdefault(node.id, index)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound_at.setdefault(node.name, index)
            elif isinstance(node, ast.alias):
                bound_at.setdefault((node.asname or node.name).split(".")[0], index)
    early = set()
    for index, statement in enumerate(module.body):
        for node in _runs_on_import(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and bound_at.get(node.id, -1) > index:
                early.add(node.id)
    return early


def _runs_on_import(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a module-level statement that run when it runs: not function bodies or lambdas."""
    stack: List[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(node.decorator_list)
            stack.extend(d for d in node.args.defaults + node.args.kw_defaults if d is not None)
            continue
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))


def bytes_violations(data: bytes, before: SourceText, written: bytes) -> List[str]:
    found: List[str] = []
    try:
        after = SourceText.decode(written)
    except DecodeError as exc:
        return [f"the written file does not decode: {exc}"]
    if (after.encoding, after.bom) != (before.encoding, before.bom):
        found.append(f"encoding changed: {before.encoding}/{before.bom} -> {after.encoding}/{after.bom}")
    endings_before = set(_BYTE_ENDING.findall(data)) or {b"\n"}
    new = set(_BYTE_ENDING.findall(written)) - endings_before
    if new:
        found.append(f"new kinds of line ending: {sorted(new)}")
    try:
        ast.parse(after.text)
    except SyntaxError as exc:
        return found + [f"the written file does not parse: {exc}"]
    if fixer.fix_text(after.text, "program.py", SETTINGS, newline=after.newline).changed:
        found.append("a second --fix changed the file again")
    return found


Point = Tuple[int, int]


def statements(module: ast.Module, source: str) -> Iterator[Tuple[Tuple[Tuple[str, ...], str, str], Tuple[Point, Point]]]:
    """((the functions and classes around it, its indentation, its code), its span) for every statement.

    Compound statements count too. Where a statement is is told by the functions and classes
    around it and its indentation (as Python counts it: from the last form feed), not by the
    ``if``s around it: a fix that adds an ``elif`` before an ``else`` moves nothing the reader
    sees, though ``ast`` nests the ``else`` one level deeper.
    """
    tree = Tree(module, source)
    stack: List[Tuple[ast.AST, Tuple[str, ...]]] = [(module, ())]
    while stack:
        node, scopes = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scopes = scopes + (f"{type(node).__name__} {node.name}",)
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, block, None) or ():
                if isinstance(child, ast.stmt):
                    start = tree.start(child)
                    before = tree.line_text(start[0])[: start[1]]
                    # Python's tokenizer starts counting the indentation again after a form feed.
                    indent = before[before.rfind("\f") + 1:] if not before.strip(" \t\f") else "(after code on its line)"
                    yield (scopes, indent, ast.dump(child)), (start, tree.stop(child))
                stack.append((child, scopes))


def _touched(span: Tuple[Point, Point], regions: Sequence[Tuple[Point, Point]]) -> bool:
    """An edit overlaps the span, or inserts strictly inside it (at its edges, it only adds next to it)."""
    start, stop = span
    for begin, end in regions:
        if begin == end:
            if start < begin < stop:
                return True
        elif begin < stop and start < end:
            return True
    return False


def _comments(text: str) -> Optional[List[Tuple[str, Tuple[Point, Point]]]]:
    """(comment, span) of every comment; None if the tokenizer refuses the text."""
    normalized = _ENDING.sub("\n", text)
    try:
        return [(tok.string, (tok.start, tok.end)) for tok in tokenize.generate_tokens(io.StringIO(normalized).readline)
                if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


# --- the run -----------------------------------------------------------------------------------


@dataclass
class Tally:
    programs: Counter = field(default_factory=Counter)
    changed: int = 0
    skipped: int = 0
    passes: int = 0
    violations: List[Tuple[str, bytes]] = field(default_factory=list)


def run(sources: Sequence[Callable[[random.Random], Iterator[Tuple[str, bytes, str, str]]]], *, seed: int,
        seconds: Optional[float] = None, count: Optional[int] = None, on_violation=None) -> Tally:
    """Check programs from ``sources`` in turn until ``seconds`` have passed or ``count`` programs were checked."""
    rng = random.Random(seed)
    streams = [source(random.Random(rng.random())) for source in sources]
    tally = Tally()
    deadline = time.monotonic() + seconds if seconds is not None else None
    checked = 0
    with tempfile.TemporaryDirectory(prefix="mpslint-fix-property-") as directory:
        while (count is None or checked < count) and (deadline is None or time.monotonic() < deadline):
            kind, data, encoding, ending = next(streams[checked % len(streams)])
            checked += 1
            result = check_file(data, directory)
            if result.skipped:
                tally.skipped += 1
                continue
            tally.programs[(kind, encoding, ending)] += 1
            tally.changed += result.changed
            tally.passes += result.passes
            for violation in result.violations:
                tally.violations.append((violation, data))
                if on_violation is not None:
                    on_violation(violation, data)
    return tally


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("mutated", "generated"), help="one source of programs")
    args = parser.parse_args(argv)
    sources = {"mutated": mutated_programs, "generated": generated_programs}
    chosen = [sources[args.only]] if args.only else list(sources.values())

    def report(violation: str, data: bytes) -> None:
        print(f"VIOLATION: {violation}\n  input: {data[:400]!r}", flush=True)

    started = time.monotonic()
    tally = run(chosen, seed=args.seed, seconds=args.minutes * 60, on_violation=report)
    minutes = (time.monotonic() - started) / 60
    total = sum(tally.programs.values())
    print(f"{total:,} programs checked in {minutes:.1f} min (seed {args.seed}; {tally.skipped:,} more did not parse "
          f"or decode and were skipped); {tally.changed:,} were changed by --fix in {tally.passes:,} passes")
    by_kind = Counter()
    by_encoding = Counter()
    by_ending = Counter()
    for (kind, encoding, ending), n in tally.programs.items():
        by_kind[kind] += n
        by_encoding[encoding] += n
        by_ending[ending] += n
    for title, counts in (("source", by_kind), ("encoding", by_encoding), ("line endings", by_ending)):
        print(f"  by {title}: " + ", ".join(f"{name} {n:,}" for name, n in sorted(counts.items())))
    print(f"{len(tally.violations)} violation(s)")
    return 1 if tally.violations else 0


if __name__ == "__main__":
    sys.exit(main())
