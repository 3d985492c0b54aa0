"""The report's numbers, as plain data: every format renders these and only these.

``collect`` fills them; ``as_json`` dumps them as they are, so dashboards read
exactly what the HTML and Markdown show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple


@dataclass
class Counts:
    """Findings by impact, and how many of them the fixer fixes."""

    findings: int = 0
    fails: int = 0
    slows: int = 0
    other: int = 0
    fixed: int = 0  # by `mpslint --fix`
    fixed_unsafe: int = 0  # by `mpslint --fix --unsafe-fixes`

    def add(self, other: "Counts") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def blocking_key(self) -> Tuple[int, int, int]:
        """Most blocking first: failing findings, then slowing ones, then all."""
        return (-self.fails, -self.slows, -self.findings)


@dataclass
class FixOutcome:
    """What one fix run does to the whole selection, as ``mpslint --fix`` would report it."""

    command: str  # "mpslint --fix" or "mpslint --fix --unsafe-fixes"
    fixed: int = 0
    remaining: int = 0
    remaining_fails: int = 0
    remaining_slows: int = 0
    files_changed: int = 0


@dataclass
class Finding:
    code: str
    row: int
    column: int
    message: str
    impact: str
    fix: Optional[str] = None  # "safe" (`--fix`), "unsafe" (`--unsafe-fixes`) or None
    runtime: Optional[str] = None  # a verify report's status: confirmed / not-observed / not-reached
    cell: Optional[int] = None  # the notebook cell the row and column count in

    @property
    def where(self) -> str:
        """``row:col``, or ``cell N:row:col`` in a notebook (as `mpslint check` prints it)."""
        return f"{f'cell {self.cell}:' if self.cell is not None else ''}{self.row}:{self.column}"


@dataclass
class FileRow:
    path: str
    anchor: str
    counts: Counts = field(default_factory=Counts)
    codes: Dict[str, int] = field(default_factory=dict)
    findings: List[Finding] = field(default_factory=list)  # the first ones, in source order
    omitted: int = 0  # findings not listed (the report lists at most N per file)
    confirmed: int = 0  # findings a verify report saw happen


@dataclass
class DirectoryRow:
    path: str
    counts: Counts = field(default_factory=Counts)
    files: int = 0  # files with findings


@dataclass
class RuleRow:
    code: str
    name: str
    summary: str
    impact: str
    count: int = 0
    files: int = 0
    fixed: int = 0
    fixed_unsafe: int = 0
    mark: str = "[ ]"  # as `mpslint --statistics` shows it: [*] --fix, [-] --unsafe-fixes, [ ] none


@dataclass
class OpRow:
    op: str  # aten overload, e.g. "linalg_eig"
    kind: str  # "no-kernel" (MPS501) or "cpu-fallback" (MPS502)
    floor: str  # the torch version the finding was checked against
    calls: List[str] = field(default_factory=list)  # how the code spells it: `torch.linalg.eig`
    count: int = 0
    files: int = 0
    gains: Optional[str] = None  # the first torch release with an MPS kernel, when known
    latest: Optional[str] = None  # the newest torch mpslint knows, when it has a kernel but the release is unknown
    newest_known: str = ""


@dataclass
class RuntimeRun:
    """One ``mpslint verify --output-format json`` report."""

    source: str  # the report file
    script: str
    verdict: str
    simulated: bool
    torch_version: str
    script_exit_code: Optional[int]
    ops_on_device: Optional[int]
    duration_s: Optional[float]
    file_anchor: Optional[str]  # the checked file it ran, when the report covers it
    fallbacks: List[dict] = field(default_factory=list)
    syncs: List[dict] = field(default_factory=list)
    errors: List[dict] = field(default_factory=list)
    static: List[dict] = field(default_factory=list)
    known_wrong: List[dict] = field(default_factory=list)  # calls matching a known silently wrong result
    memory: Optional[dict] = None  # device memory per step and its growth (a real Mac only)


@dataclass
class EntryBlocker:
    code: str
    path: str  # the file holding the finding: the entry point's own, or a project module it imports
    row: int
    cell: Optional[int]
    message: str
    imported_at: Optional[str] = None  # where the entry point imports that module ("line 3")


@dataclass
class EntryPointRow:
    """One entry point (a script with ``__main__``, a notebook) after ``mpslint --fix`` (``mpslint.entry_points``)."""

    path: str
    reaches: bool  # can reach MPS: nothing blocks it and it, or a module it imports, chooses a device that can be MPS
    status: str  # as the fix run's summary says it
    device_from: Optional[str] = None  # the imported module that chooses its device
    blockers: List[EntryBlocker] = field(default_factory=list)  # the first ones: its own, then the nearest modules'
    blocker_count: int = 0  # all of them


@dataclass
class Step:
    title: str
    command: str
    why: str


@dataclass
class Report:
    paths: List[str]
    files_checked: int = 0
    files_with_findings: int = 0
    counts: Counts = field(default_factory=Counts)
    verdict: str = ""
    verdict_text: str = ""
    fix: Optional[FixOutcome] = None
    fix_unsafe: Optional[FixOutcome] = None
    floors: List[str] = field(default_factory=list)  # torch the op rules (MPS501/MPS502) checked the files against
    # torch the fixes and the version gates (MPS504, MPS112) assume: the declared floors, else "2.0 (assumed)"
    fix_floors: List[str] = field(default_factory=list)
    directories: List[DirectoryRow] = field(default_factory=list)
    files: List[FileRow] = field(default_factory=list)
    rules: List[RuleRow] = field(default_factory=list)
    ops: List[OpRow] = field(default_factory=list)
    runtime: List[RuntimeRun] = field(default_factory=list)
    entry_points: List[EntryPointRow] = field(default_factory=list)  # after `mpslint --fix`, blocked ones first
    errors: List[Tuple[str, str]] = field(default_factory=list)  # files that could not be checked
    next_steps: List[Step] = field(default_factory=list)
    max_findings_per_file: int = 0
