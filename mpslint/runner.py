"""Check or fix many files: cache, process pool, stable order, atomic writes.

Each file is read as bytes, decoded like Python does (``SourceText``), checked
or fixed, and, when a fix changed it, written back atomically in its own
encoding, BOM and line endings. A file whose fixes changed nothing is never
rewritten. A file that cannot be read or decoded is an ``MPS001`` finding
(rules/MPS001.md), like any other, so every report format shows it.

The cache is looked up here, in the parent, before any worker starts: a run
served from the cache never pays for workers. A file is looked up once: on a
miss checked in this process its bytes are checked as read; a worker re-reads
the file (shipping every file's bytes to the pool would hold the whole tree in
this process) and looks it up again only if its content changed meanwhile.

Parallelism: a pool of ``spawn`` workers (fork is unsafe with threads and
not the default on macOS), each importing the rules once and receiving the
run's settings table once. Starting a worker costs a fresh interpreter plus
LibCST and the rules, and most files are ruled out before LibCST parses them,
so the pool pays off only from some dozens of files (docs/performance.md):
below ``POOL_THRESHOLD`` files to check (after cache hits) everything runs in
this process, so pre-commit's handful of staged files never pays for
workers. Results come back in task order, so output never depends on
scheduling. A pool that breaks (a worker killed by the OOM killer, say) is
not fatal: the remaining files run in this process.

A fix run over several files runs in waves (``fix_order.py``): a module is
fixed before the run's files that import it, so they can reuse the device
helper it gets. ``--diff`` writes nothing, so each wave's tasks carry the
fixed texts of the earlier waves' modules that may define one.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from mpslint.config import Settings
from mpslint.diagnostic import IO_ERROR, io_error
from mpslint.results import FileResult, Mode
from mpslint.writing import read_file, unified_diff, write_atomic, write_fixed  # noqa: F401 (write_atomic: API)

# Files left to check (after cache hits) below which no worker is spawned: see the module docstring.
POOL_THRESHOLD = 60


@dataclass(frozen=True)
class Task:
    path: str
    display: str
    settings: int  # index into the run's settings table (sent to each worker once)
    missed: Optional[str] = None  # the cache key this run already looked up and missed
    indexed: bool = False  # the stat index holds ``missed`` for the file: it records a result with no finding
    fixed: Tuple[Tuple[str, str], ...] = ()  # --diff: (path, text) of the files this run fixed before this one
    home: bool = False  # gets pick_device() for the run's files that import it (helper_home.py)


def usable_cpus() -> int:
    """The CPUs this process may run on: a container or ``taskset`` can allow fewer than the machine has."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):  # Linux
        try:
            return len(os.sched_getaffinity(0)) or 1
        except OSError:
            pass
    return os.cpu_count() or 1


def run(
    files: Sequence[Tuple[str, str, Settings]],
    mode: Mode,
    *,
    jobs: Optional[int] = None,
    cache_dir: Optional[Path] = None,
) -> List[FileResult]:
    """Process ``(path, display path, settings)`` triples; results in the same order."""
    table: List[Settings] = []
    index: Dict[Settings, int] = {}
    tasks = []
    for path, display, settings in files:
        if settings not in index:
            index[settings] = len(table)
            table.append(settings)
        tasks.append(Task(str(path), display, index[settings]))

    cache = None
    if cache_dir is not None and not mode.fixing:
        from mpslint.cache import Cache

        cache = Cache(cache_dir)
    _share_summaries(cache)
    started = time.time_ns()
    results: List[Optional[FileResult]] = [None] * len(tasks)
    pending: List[int] = []
    read: Dict[int, bytes] = {}  # the bytes of missed files, kept while they may be checked in this process
    may_pool = (jobs or usable_cpus()) > 1
    for i, task in enumerate(tasks):
        looked = _look_up(task, table[task.settings], cache) if cache is not None else None
        if looked is None:
            pending.append(i)
        elif isinstance(looked, FileResult):
            results[i] = looked
        else:
            data, key, indexed = looked
            tasks[i] = replace(task, missed=key, indexed=indexed)
            pending.append(i)
            if may_pool and len(pending) >= POOL_THRESHOLD:
                read.clear()  # workers will read for themselves
            else:
                read[i] = data

    groups = [pending]
    if mode.fixing and len(pending) > 1:
        from mpslint.fix_order import waves
        from mpslint.helper_home import plan

        paths = [tasks[i].path for i in pending]
        homes = plan(paths, [table[tasks[i].settings] for i in pending])
        for k in homes:
            tasks[pending[k]] = replace(tasks[pending[k]], home=True)
        groups = [[pending[k] for k in wave] for wave in waves(paths, homes)]
    fixed_texts: Dict[str, str] = {}  # --diff: what the run's earlier waves would write (package_helper reads it)
    with _sigterm_unwinds(mode.fix):
        for group in groups:
            if fixed_texts:
                group_tasks = {i: replace(tasks[i], fixed=tuple(fixed_texts.items())) for i in group}
            else:
                group_tasks = {i: tasks[i] for i in group}
            for i, result in zip(group, _process(group, group_tasks, read, table, mode, cache_dir, cache, jobs)):
                results[i] = result
                task = tasks[i]
                if cache is not None and task.missed and result.error is None and not result.cached \
                        and result.checked_key == task.missed:
                    cache.remember_result(task.path, task.display, table[task.settings], task.missed,
                                          result.diagnostics, result.depends)
                    _vouch(result.depends, started)
                if mode.diff and result.diff is not None and result.text is not None and _may_define_helper(
                        tasks[i].path, result.text):
                    fixed_texts[tasks[i].path] = result.text
    if fixed_texts:
        from mpslint.analysis.package_helper import use_fixed_sources

        use_fixed_sources({})  # a later check in this process reads the files as they are
    if cache is not None:
        cache.save_index()
        _save_digests()
    return results  # type: ignore[return-value]


def _may_define_helper(path: str, text: str) -> bool:
    """Worth handing to the later waves: a module whose fixed text may define a device helper."""
    return path.endswith(".py") and "def " in text and "device(" in text


def _process(pending: List[int], tasks: Dict[int, Task], read: Dict[int, bytes], table: List[Settings], mode: Mode,
             cache_dir: Optional[Path], cache, jobs: Optional[int]) -> List[FileResult]:
    workers = min(jobs or usable_cpus(), len(pending))
    pooled: Dict[int, FileResult] = {}
    if workers > 1 and len(pending) >= POOL_THRESHOLD:
        # A check hands out the largest files first: the last files handed out are then small, and no worker
        # is left with a large one while the other waits (path order left up to half a second of it on
        # transformers). A fix keeps path order: a file checked while a module it reads is being fixed sees
        # that module as it is at that moment, so the order of a wave's files can change what remains.
        order = pending if mode.fixing else sorted(pending, key=lambda i: -_size(tasks[i].path))
        pooled = dict(zip(order, _run_pool([tasks[i] for i in order], table, mode, cache_dir, workers)))
    state = None
    done = []
    for i in pending:
        result = pooled.get(i)
        if result is None:  # no pool, or it broke: finish in this process
            if state is None:
                state = _State(table, mode, cache_dir, cache)
            result = state.process(tasks[i], read.pop(i, None))
        done.append(result)
    return done


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # reported when its worker reads it


def _look_up(task: Task, settings: Settings, cache):
    """A cached result, or (bytes, key, whether the stat index holds the key) of a miss, or None when the file
    cannot be read (processing reports it).

    A file whose stat the cache's index vouches for is not read (``cache.py`` says when it does)."""
    try:
        st = os.stat(task.path)
    except OSError:
        st = None
    tried = None
    if st is not None:
        tried = cache.known_key(task.path, task.display, settings, st)
        if tried is not None:
            diagnostics = cache.get(tried, _current_digest)
            if diagnostics is not None:
                return FileResult(task.display, diagnostics, cached=True)
    try:
        data = read_file(task.path)
    except OSError:
        return None
    key = cache.key(data, task.display, settings)
    # The stat is taken before the read: an edit after it changes the stat, so the index cannot vouch for old bytes.
    indexed = st is not None and cache.remember(task.path, task.display, settings, st, key, time.time_ns())
    diagnostics = cache.get(key, _current_digest) if key != tried else None
    if diagnostics is None:
        return data, key, indexed
    return FileResult(task.display, diagnostics, cached=True)


def _run_pool(todo: List[Task], table: List[Settings], mode: Mode, cache_dir: Optional[Path], workers: int) -> List[FileResult]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from mpslint import registry
    from mpslint.isolation import isolate_multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    done: List[FileResult] = []
    # Small chunks keep both workers busy when a few files are much larger than the rest.
    chunksize = max(1, min(16, len(todo) // (workers * 8)))
    isolate_multiprocessing()
    context = multiprocessing.get_context("spawn")
    try:
        stop = context.Event()  # set when this run is interrupted: workers skip the files they have not started
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(registry.FAMILIES, table, mode, cache_dir, stop),
        )
    except OSError:
        return done
    try:
        with _sigint_blocked():
            # Each submit starts a worker while none is idle yet. Workers inherit the blocked
            # Ctrl-C through spawn's exec, so one arriving while a worker still imports is not
            # a traceback there: the worker ignores it before unblocking; this process gets it.
            for _ in range(workers):
                pool.submit(_ready)
        for result in pool.map(_work, todo, chunksize=chunksize):
            done.append(result)
    except (BrokenProcessPool, OSError):
        pass  # a worker died (or none could start): the caller redoes the rest in-process
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM): drop the queued files, let each worker finish the file it is
        # writing (every write is atomic), and leave no orphaned worker behind.
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
    return done


class _State:
    """What one process needs for every file: the settings table, the mode, the cache."""

    def __init__(self, table: List[Settings], mode: Mode, cache_dir: Optional[Path], cache=None) -> None:
        self.table = table
        self.mode = mode
        self.cache = cache
        if cache is None and cache_dir is not None and not mode.fixing:
            from mpslint.cache import Cache

            self.cache = Cache(cache_dir)
            _share_summaries(self.cache)

    def process(self, task: Task, data: Optional[bytes] = None) -> FileResult:
        settings = self.table[task.settings]
        if self.mode.diff:
            from mpslint.analysis.package_helper import use_fixed_sources

            use_fixed_sources(dict(task.fixed))
        return process_file(task.path, task.display, settings, self.mode, cache=self.cache, data=data, missed=task.missed,
                            indexed=task.indexed, home=task.home)


_WORKER: Optional[_State] = None


def _init_worker(families: Tuple[str, ...], table: List[Settings], mode: Mode, cache_dir: Optional[Path], stop=None) -> None:
    global _WORKER, _STOP
    import signal

    from mpslint.parent_watch import die_with_parent

    die_with_parent()  # a parent killed with SIGKILL must not leave this worker holding its stdout

    # Ctrl-C reaches the whole process group: the parent alone decides how to stop (see _run_pool).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _STOP = stop
    from mpslint import registry

    if families != registry.FAMILIES:
        # Workers check with exactly the parent's rule families (spawned workers start from defaults).
        registry.FAMILIES = families
        for cached in (registry.rule_classes, registry.rule_codes, registry.codes_by_name, registry.name_of):
            cached.cache_clear()
    registry.rule_classes()  # import every rule once per worker, not per file
    _WORKER = _State(table, mode, cache_dir)
    if mode.fix:
        signal.signal(signal.SIGTERM, _worker_terminated)


def _ready() -> None:
    """A no-op task: submitting it starts a worker (see _run_pool)."""


class _sigint_blocked:
    """Blocks SIGINT in this thread (it stays pending, it is not lost) while workers are started."""

    def __enter__(self) -> None:
        import signal

        self.blocked = hasattr(signal, "pthread_sigmask")
        if self.blocked:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    def __exit__(self, *exc) -> None:
        import signal

        if self.blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _worker_terminated(signum, frame) -> None:
    global _TERMINATED
    _TERMINATED = True
    raise SystemExit(128 + signum)


def _raise_system_exit(signum, frame) -> None:
    raise SystemExit(128 + signum)


class _sigterm_unwinds:
    """While fixing, SIGTERM unwinds like Ctrl-C does, so a temp file being written is removed, not left behind."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self.previous = None

    def __enter__(self) -> None:
        import signal
        import threading

        if self.active and threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, _raise_system_exit)

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            import signal

            signal.signal(signal.SIGTERM, self.previous)


_STOP = None  # the parent's "interrupted" event
_TERMINATED = False  # this worker got SIGTERM


def _work(task: Task) -> FileResult:
    assert _WORKER is not None
    if _TERMINATED or (_STOP is not None and _STOP.is_set()):
        return FileResult(task.display, error="not checked: the run was interrupted")
    return _WORKER.process(task)


def process_file(
    path: str,
    display: str,
    settings: Settings,
    mode: Mode,
    *,
    cache=None,
    data: Optional[bytes] = None,
    missed: Optional[str] = None,
    indexed: bool = False,
    home: bool = False,
) -> FileResult:
    """Check or fix one file on disk (``home``: give it ``pick_device()`` too, see ``helper_home.py``).

    ``data`` is the file's bytes when the caller already read them; ``missed``
    is a cache key the caller looked up and missed: a file that still has that
    key is not looked up again; ``indexed``: the caller's stat index holds that
    key and will record a result with no finding, so none is written here.
    """
    if data is None:
        try:
            data = read_file(path)
        except OSError as exc:
            return FileResult(display, [io_error(display, f"cannot read: {exc.strerror or exc}")])
        known = None
    else:
        known = missed
    key = None
    if cache is not None and not mode.fixing:
        key = known or cache.key(data, display, settings)
        hit = cache.get(key, _current_digest) if key != missed else None
        if hit is not None:
            return FileResult(display, hit, cached=True)
    result = process_bytes_safely(data, display, settings, mode, target=path, home=home)
    if key is not None and result.error is None and not _unreadable(result):
        cache.put(key, result.diagnostics, result.depends, indexed=indexed and key == missed)
        result.checked_key = key
    return result


def _share_summaries(cache) -> None:
    """A fresh project model for this run; with a cache, module summaries live beside its entries, so
    workers and later runs read them instead of parsing."""
    from mpslint.analysis.project import model

    model.use_cache_dir(cache.summaries if cache is not None else None)


def _vouch(depends: Dict[str, str], started: int) -> None:
    from mpslint.analysis.project import model

    model.shared().vouch(depends, started)


def _save_digests() -> None:
    from mpslint.analysis.project import model

    model.shared().memo.save()


def _current_digest(path: str) -> str:
    """What the summary of a module file a cached result depends on is now (``analysis/project``)."""
    from mpslint.analysis.project import model

    return model.shared().digest_at(path)


def _unreadable(result: FileResult) -> bool:
    return any(d.code == IO_ERROR for d in result.diagnostics)


def process_bytes_safely(data: bytes, display: str, settings: Settings, mode: Mode, *, target: Optional[str] = None,
                         home: bool = False) -> FileResult:
    """``process_bytes``, but a crash outside the rules (which the engine contains itself) fails this file only."""
    try:
        return process_bytes(data, display, settings, mode, target=target, home=home)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # RecursionError, MemoryError, a bug in the engine or fixer
        import traceback

        return FileResult(
            display,
            error=f"internal error: {type(exc).__name__}: {exc}. Please report this at https://github.com/mpslint/mpslint/issues",
            detail=traceback.format_exc(),
        )


def process_bytes(data: bytes, display: str, settings: Settings, mode: Mode, *, target: Optional[str] = None,
                  home: bool = False) -> FileResult:
    """Check or fix one file's bytes; with ``mode.fix`` and a ``target``, write the fixed file there."""
    from mpslint.notebook import is_notebook

    if is_notebook(display):
        from mpslint.notebook.lint import process_notebook

        return process_notebook(data, display, settings, mode, target=target)
    from mpslint.source import DecodeError, SourceText

    try:
        source = SourceText.decode(data)
    except DecodeError as exc:
        return FileResult(display, [io_error(display, f"cannot decode: {exc}")])
    if not mode.fixing:
        from mpslint.engine import check_text

        checked = check_text(source.text, display, settings, origin=target)
        return FileResult(display, checked.diagnostics, depends=checked.depends)

    from mpslint.fixer import fix_text

    text = source.text
    if home:
        from mpslint.helper_home import with_helper

        text = with_helper(text, settings, source.newline) or text
    outcome = fix_text(text, display, settings, unsafe=mode.unsafe, newline=source.newline)
    result = FileResult(display, outcome.diagnostics, fixed=outcome.fixed, warning=outcome.error, text=outcome.text)
    if not outcome.changed and outcome.text == source.text:
        return result
    if mode.diff:
        result.diff = unified_diff(source.text, outcome.text, display)
    elif target is not None:
        try:
            encoded = source.encode(outcome.text)
        except UnicodeEncodeError as exc:
            return FileResult(display, outcome.found, error=f"cannot write the fixed file: {exc}")
        return write_fixed(target, encoded, data, result, outcome.found, settings, mode)
    return result
