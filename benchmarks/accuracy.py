"""Recall benchmark: mpslint against hand-labelled real code.

    python benchmarks/accuracy.py            # table: precision / recall, overall and per family
    python benchmarks/accuracy.py --details  # also every false negative, false positive and trap hit
    python benchmarks/accuracy.py --json     # the same numbers as JSON

The files under ``benchmarks/accuracy/files/<owner>__<repo>/`` are copies of public code
(``benchmarks/accuracy/SOURCES.md`` names each repository, commit and license). Each has a
label file at ``benchmarks/accuracy/labels/<owner>__<repo>/<path>.toml``, written by reading the
file in full before mpslint ran on it (``benchmarks/accuracy/GUIDE.md`` gives the conventions):

    must = [ {line = 12, family = "MPS1", code = "MPS102", note = "..."} ]   # must be reported
    trap = [ {line = 30, note = "..."} ]                                      # must not be reported
    either = [ {line = 40, family = "MPS2", note = "..."} ]                   # both answers fine

A label may give ``end`` (inclusive) when the statement spans lines: a finding anywhere in
``line..end`` matches it. ``family`` is the hundred group (``MPS1`` .. ``MPS5``); it is optional
on ``trap`` and ``either`` (then any family).

Scoring, per file, on the set of (line, family) that mpslint reports (two findings of one family
on one line count once):

* a finding that matches a ``must`` label of its family is a true positive (a label counts once);
* a finding that matches an ``either`` label is not counted;
* any other finding is a false positive; it is also a *trap hit* where a ``trap`` label covers it;
* a ``must`` label that no finding matches is a false negative.

Each repository directory is checked as one project (copied to a temporary directory so that
no configuration of the enclosing checkout applies), in a subprocess of this checkout's mpslint.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # the project supports Python 3.9; mpslint itself depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "accuracy"
FILES = DATA / "files"
LABELS = DATA / "labels"
FAMILIES = ("MPS1", "MPS2", "MPS3", "MPS4", "MPS5")
KINDS = ("must", "trap", "either")


@dataclass(frozen=True)
class Label:
    kind: str  # must | trap | either
    line: int
    end: int
    family: str | None  # MPS1..MPS5, or None (trap / either: any family)
    code: str | None = None
    note: str = ""

    def covers(self, line: int, family: str) -> bool:
        return self.line <= line <= self.end and (self.family is None or self.family == family)


@dataclass(frozen=True)
class Finding:
    path: str  # relative to FILES, with forward slashes
    line: int
    code: str

    @property
    def family(self) -> str:
        return self.code[:4]


@dataclass
class Score:
    tp: dict[str, int] = field(default_factory=lambda: {f: 0 for f in FAMILIES})
    fp: dict[str, int] = field(default_factory=lambda: {f: 0 for f in FAMILIES})
    fn: dict[str, int] = field(default_factory=lambda: {f: 0 for f in FAMILIES})
    traps_hit: int = 0
    either_hit: int = 0
    false_negatives: list[tuple[str, Label]] = field(default_factory=list)
    false_positives: list[tuple[str, int, str, bool]] = field(default_factory=list)  # path, line, code, trap
    either_findings: list[tuple[str, int, str]] = field(default_factory=list)  # path, line, code

    def total(self, kind: str) -> int:
        return sum(getattr(self, kind).values())


def family_of(text: str) -> str:
    text = text.upper()
    if len(text) < 4 or text[:4] not in FAMILIES:
        raise ValueError(f"not a family or code: {text!r}")
    return text[:4]


def parse_labels(text: str, source: str = "<labels>") -> list[Label]:
    """The labels of one file, from its TOML text; raises ValueError on anything malformed."""
    data = tomllib.loads(text)
    unknown = set(data) - set(KINDS)
    if unknown:
        raise ValueError(f"{source}: unknown keys {sorted(unknown)}")
    labels = []
    for kind in KINDS:
        for entry in data.get(kind, []):
            extra = set(entry) - {"line", "end", "family", "code", "note"}
            if extra:
                raise ValueError(f"{source}: unknown label fields {sorted(extra)}")
            line = entry["line"]
            end = entry.get("end", line)
            if not (isinstance(line, int) and isinstance(end, int) and 1 <= line <= end):
                raise ValueError(f"{source}: bad line range {line}..{end}")
            code = entry.get("code")
            family = entry.get("family") or (code[:4] if code else None)
            if family is not None:
                family = family_of(family)
            if code is not None and family_of(code) != family:
                raise ValueError(f"{source}: code {code} is not in family {family}")
            if kind == "must" and family is None:
                raise ValueError(f"{source}: a must label needs a family (line {line})")
            labels.append(Label(kind, line, end, family, code, entry.get("note", "")))
    return labels


def load_labels(labels_dir: Path = LABELS) -> dict[str, list[Label]]:
    """Every label file, keyed by the labelled file's path relative to FILES."""
    out = {}
    for path in sorted(labels_dir.rglob("*.toml")):
        rel = path.relative_to(labels_dir).as_posix()[: -len(".toml")]
        out[rel] = parse_labels(path.read_text(encoding="utf-8"), str(path))
    return out


def score(labels: dict[str, list[Label]], findings: list[Finding]) -> Score:
    result = Score()
    codes: dict[tuple[str, int, str], set[str]] = {}
    for f in findings:
        if f.family in FAMILIES:
            codes.setdefault((f.path, f.line, f.family), set()).add(f.code)
    seen = set(codes)
    matched: set[tuple[str, int]] = set()  # (path, index of the must label)
    for path, line, family in sorted(seen):
        file_labels = labels.get(path, [])
        musts = [i for i, lab in enumerate(file_labels) if lab.kind == "must" and lab.covers(line, family)]
        if musts:
            for i in musts:
                if (path, i) not in matched:
                    matched.add((path, i))
                    result.tp[family] += 1
            continue
        if any(lab.kind == "either" and lab.covers(line, family) for lab in file_labels):
            result.either_hit += 1
            result.either_findings.append((path, line, ",".join(sorted(codes[path, line, family]))))
            continue
        trap = any(lab.kind == "trap" and lab.covers(line, family) for lab in file_labels)
        result.traps_hit += trap
        result.fp[family] += 1
        result.false_positives.append((path, line, ",".join(sorted(codes[path, line, family])), trap))
    for path, file_labels in sorted(labels.items()):
        for i, lab in enumerate(file_labels):
            if lab.kind == "must" and (path, i) not in matched:
                result.fn[lab.family] += 1
                result.false_negatives.append((path, lab))
    return result


def run_mpslint(files_dir: Path = FILES, source: Path = ROOT) -> list[Finding]:
    """Check every repository directory under files_dir as its own project with the mpslint of the
    checkout at ``source``; return the findings."""
    findings = []
    env = dict(os.environ, PYTHONPATH=str(source) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for repo in sorted(p for p in files_dir.iterdir() if p.is_dir()):
        with tempfile.TemporaryDirectory(prefix="mpslint-accuracy-") as tmp:
            project = Path(tmp) / repo.name
            shutil.copytree(repo, project)
            proc = subprocess.run(
                [sys.executable, "-m", "mpslint", "check", "--output-format", "json", "--no-cache",
                 "--exit-zero", "-q", "-j", "1", "."],
                check=False, cwd=project, env=env, capture_output=True, text=True,
            )
            if proc.returncode != 0:
                raise SystemExit(f"mpslint failed on {repo.name} (exit {proc.returncode}):\n{proc.stderr}")
            for item in json.loads(proc.stdout or "[]"):
                rel = Path(item["filename"])
                rel = rel.relative_to(project) if rel.is_absolute() else rel
                path = f"{repo.name}/{rel.as_posix()}"
                findings.append(Finding(path, item["location"]["row"], item["code"]))
    return findings


def ratio(num: int, den: int) -> str:
    return f"{num / den:.2f}" if den else "  - "


def table(result: Score) -> str:
    rows = [f"{'family':<8} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>9} {'recall':>7}"]
    for fam in FAMILIES:
        tp, fp, fn = result.tp[fam], result.fp[fam], result.fn[fam]
        rows.append(f"{fam:<8} {tp:>4} {fp:>4} {fn:>4} {ratio(tp, tp + fp):>9} {ratio(tp, tp + fn):>7}")
    tp, fp, fn = result.total("tp"), result.total("fp"), result.total("fn")
    rows.append(f"{'overall':<8} {tp:>4} {fp:>4} {fn:>4} {ratio(tp, tp + fp):>9} {ratio(tp, tp + fn):>7}")
    rows.append(f"traps hit: {result.traps_hit}; findings on 'either' lines (not counted): {result.either_hit}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--details", action="store_true", help="list false negatives, false positives, trap hits")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--source", type=Path, default=ROOT, metavar="DIR",
                        help="the checkout whose mpslint runs (default: this one), e.g. an export of main "
                             "(`git archive main mpslint rules | tar -x -C DIR`) for a before/after comparison")
    args = parser.parse_args(argv)

    labels = load_labels()
    missing = sorted(
        p.relative_to(FILES).as_posix() for p in FILES.rglob("*.py")
        if p.relative_to(FILES).as_posix() not in labels
    )
    if missing:
        raise SystemExit(f"files without a label file: {missing}")
    source = args.source.resolve()
    if not (source / "mpslint").is_dir() or not (source / "rules").is_dir():
        # The rules are found through rules/*.md: without them mpslint runs no rule and finds nothing.
        raise SystemExit(f"--source {source}: needs both mpslint/ and rules/")
    result = score(labels, run_mpslint(source=source))
    repos = {path.split("/", 1)[0] for path in labels}
    n_must = sum(lab.kind == "must" for labs in labels.values() for lab in labs)
    n_trap = sum(lab.kind == "trap" for labs in labels.values() for lab in labs)
    if args.json:
        print(json.dumps({
            "files": len(labels), "repositories": len(repos), "must": n_must, "traps": n_trap,
            "tp": result.tp, "fp": result.fp, "fn": result.fn, "traps_hit": result.traps_hit,
            "either_hit": result.either_hit,
        }, indent=2))
        return 0
    print(f"{len(labels)} files from {len(repos)} repositories; {n_must} must labels, {n_trap} traps")
    print(table(result))
    if args.details:
        print("\nfalse negatives:")
        for path, lab in result.false_negatives:
            print(f"  {path}:{lab.line} {lab.code or lab.family}  {lab.note}")
        print("\nfalse positives:")
        for path, line, code, trap in result.false_positives:
            print(f"  {path}:{line} {code}{'  (trap)' if trap else ''}")
        print("\nfindings on 'either' lines (not counted):")
        for path, line, code in result.either_findings:
            print(f"  {path}:{line} {code}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
