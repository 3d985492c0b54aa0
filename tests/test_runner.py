"""The runner: writing fixed files faithfully, the process pool, and the cache."""

from __future__ import annotations

import codecs
import json
import os
import stat
from pathlib import Path

import pytest

from mpslint import runner
from mpslint.cache import STAT_CHANGE_TIME, diagnostic_from_json, diagnostic_to_json
from mpslint.config import Settings
from mpslint.diagnostic import Location
from mpslint.runner import Mode, process_file, run, write_atomic

from clitools import fake_rules  # noqa: F401  (fixture)

CUDA = "import torch\n\nx = torch.zeros(1)\ny = x.cuda()\n"
FIXED = CUDA.replace("x.cuda()", "x.to(DEVICE)")
FIX = Mode(fix=True)


@pytest.fixture(autouse=True)
def rules(fake_rules):
    return fake_rules


def fix_file(path: Path, mode: Mode = FIX):
    return process_file(str(path), path.name, Settings(), mode)


# --- writing fixed files ---------------------------------------------------------------------


def test_fix_keeps_permissions(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    os.chmod(path, 0o750)
    result = fix_file(path)
    assert result.fixed == {"MPS990": 1}
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]  # no temp file left behind


def test_fix_keeps_crlf(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(CUDA.replace("\n", "\r\n").encode())
    fix_file(path)
    assert path.read_bytes() == FIXED.replace("\n", "\r\n").encode()


def test_fix_keeps_bom(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(codecs.BOM_UTF8 + ("# café\n" + CUDA).encode())
    fix_file(path)
    assert path.read_bytes() == codecs.BOM_UTF8 + ("# café\n" + FIXED).encode()


def test_fix_keeps_a_declared_encoding(tmp_path):
    path = tmp_path / "a.py"
    source = "# -*- coding: latin-1 -*-\n# café\n" + CUDA
    path.write_bytes(source.encode("latin-1"))
    fix_file(path)
    assert path.read_bytes() == ("# -*- coding: latin-1 -*-\n# café\n" + FIXED).encode("latin-1")


def test_files_without_applied_fixes_are_not_rewritten(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("import torch\nx = x.double()\n")  # only an unsafe fix
    before = os.stat(path)
    result = fix_file(path)
    assert result.fixed == {} and [d.code for d in result.diagnostics] == ["MPS991"]
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_fix_through_a_symlink_rewrites_the_target(tmp_path):
    real = tmp_path / "real.py"
    real.write_text(CUDA)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    fix_file(link)
    assert link.is_symlink()
    assert real.read_text() == FIXED


def test_failed_write_leaves_the_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text(CUDA)

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner.os, "replace", broken_replace)
    result = fix_file(path)
    assert result.error == "cannot write the fixed file: No space left on device"
    assert path.read_text() == CUDA
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]


def test_write_atomic_replaces_content(tmp_path):
    path = tmp_path / "f.py"
    path.write_bytes(b"old")
    write_atomic(str(path), b"new")
    assert path.read_bytes() == b"new"


def test_diff_mode_writes_nothing(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    result = fix_file(path, Mode(diff=True))
    assert path.read_text() == CUDA
    assert "+y = x.to(DEVICE)\n" in result.diff


def test_unreadable_and_undecodable_files_are_mps001_findings(tmp_path):
    missing = process_file(str(tmp_path / "gone.py"), "gone.py", Settings(), Mode())
    assert missing.error is None
    assert [(d.code, d.filename, d.location, d.message) for d in missing.diagnostics] == [
        ("MPS001", "gone.py", Location(1, 1), "cannot read: No such file or directory")
    ]
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"# coding: utf-8\nx = '\xff'\n")
    for mode in (Mode(), Mode(fix=True), Mode(diff=True)):
        result = process_file(str(bad), "bad.py", Settings(), mode)
        assert result.error is None and result.diff is None and not result.fixed
        assert [d.code for d in result.diagnostics] == ["MPS001"]
        assert result.diagnostics[0].message.startswith("cannot decode")
    assert bad.read_bytes() == b"# coding: utf-8\nx = '\xff'\n"


# --- the pool --------------------------------------------------------------------------------


def _many(tmp_path: Path, n: int):
    files = []
    for i in range(n):
        path = tmp_path / f"m{i:02}.py"
        path.write_text(CUDA + "z = x.double()\n" * (i % 3) + ("def broken(:\n" if i == 5 else ""))
        files.append((str(path), path.name, Settings()))
    return files


def _summary(results):
    return [(r.display, [(d.code, d.location, d.fix) for d in r.diagnostics], r.error) for r in results]


def test_pool_gives_the_same_results_in_the_same_order(tmp_path, monkeypatch):
    files = _many(tmp_path, 12)
    serial = run(files, Mode(), jobs=1)
    monkeypatch.setattr(runner, "POOL_THRESHOLD", 2)
    pooled = run(files, Mode(), jobs=2)
    assert _summary(pooled) == _summary(serial)
    assert any(d.code == "MPS000" for r in pooled for d in r.diagnostics)


def test_pool_fixes_files(tmp_path, monkeypatch):
    files = [f for f in _many(tmp_path, 6) if not f[1].startswith("m05")]
    monkeypatch.setattr(runner, "POOL_THRESHOLD", 2)
    results = run(files, FIX, jobs=2)
    assert all(r.fixed["MPS990"] == 1 for r in results)
    assert all("x.to(DEVICE)" in Path(path).read_text() for path, _, _ in files)


def test_small_runs_do_not_spawn_workers(tmp_path, monkeypatch):
    def no_pool(*args, **kwargs):
        raise AssertionError("a handful of files must run in-process")

    monkeypatch.setattr(runner, "_run_pool", no_pool)
    results = run(_many(tmp_path, runner.POOL_THRESHOLD - 1), Mode(), jobs=8)
    assert len(results) == runner.POOL_THRESHOLD - 1


def test_a_broken_pool_falls_back_to_this_process(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "POOL_THRESHOLD", 2)
    monkeypatch.setattr(runner, "_run_pool", lambda todo, *a: [])
    files = _many(tmp_path, 4)
    assert _summary(run(files, Mode(), jobs=2)) == _summary(run(files, Mode(), jobs=1))


def test_the_pool_gets_the_largest_files_first_and_a_pool_that_breaks_midway_loses_nothing(tmp_path, monkeypatch):
    files = _many(tmp_path, 8)
    for k, (path, _, _) in enumerate(files):  # sizes unrelated to the path order
        Path(path).write_text(Path(path).read_text() + "#" * (((k * 5) % 8) * 100) + "\n")
    handed = []

    def half_a_pool(todo, table, mode, cache_dir, workers):
        handed.extend(task.path for task in todo)
        state = runner._State(table, mode, cache_dir)
        return [state.process(task) for task in todo[:3]]  # then it breaks

    monkeypatch.setattr(runner, "POOL_THRESHOLD", 2)
    monkeypatch.setattr(runner, "_run_pool", half_a_pool)
    results = run(files, Mode(), jobs=2)
    sizes = [Path(path).stat().st_size for path in handed]
    assert sizes == sorted(sizes, reverse=True) and sorted(handed) == sorted(path for path, _, _ in files)
    assert [r.display for r in results] == [display for _, display, _ in files]
    assert _summary(results) == _summary(run(files, Mode(), jobs=1))


# --- the cache -------------------------------------------------------------------------------


def test_cache_hit_and_invalidation(tmp_path):
    cache_dir = tmp_path / "cache"
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    files = [(str(path), "a.py", Settings())]
    first = run(files, Mode(), cache_dir=cache_dir)
    assert not first[0].cached
    assert (cache_dir / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache_dir / ".gitignore").read_text().splitlines()[-1] == "*"
    second = run(files, Mode(), cache_dir=cache_dir)
    assert second[0].cached
    assert _summary(second) == _summary(first)
    # Content changes: a miss. Settings change: a miss.
    path.write_text(CUDA + "w = x.cuda()\n")
    assert not run(files, Mode(), cache_dir=cache_dir)[0].cached
    other = [(str(path), "a.py", Settings().with_codes({"MPS991"}))]
    assert not run(other, Mode(), cache_dir=cache_dir)[0].cached


class _Counting:
    """Counts what the runner does to the files and the cache during one run."""

    def __init__(self, monkeypatch):
        from mpslint import cache as cache_module

        self.reads, self.keys, self.gets = [], [], []
        real_read, real_key, real_get = runner.read_file, cache_module.Cache.key, cache_module.Cache.get
        monkeypatch.setattr(runner, "read_file", lambda path: self.reads.append(path) or real_read(path))
        monkeypatch.setattr(cache_module.Cache, "key", lambda c, data, *a: self.keys.append(data) or real_key(c, data, *a))
        monkeypatch.setattr(cache_module.Cache, "get", lambda c, key, *a: self.gets.append(key) or real_get(c, key, *a))


def test_a_cold_run_reads_hashes_and_looks_up_each_file_once(tmp_path, monkeypatch):
    files = _many(tmp_path, 5)
    counting = _Counting(monkeypatch)
    results = run(files, Mode(), cache_dir=tmp_path / "cache", jobs=1)
    assert not any(r.cached for r in results)
    assert len(counting.reads) == len(counting.keys) == len(counting.gets) == 5
    assert all(r.cached for r in run(files, Mode(), cache_dir=tmp_path / "cache", jobs=1))  # and the misses were stored


def test_a_worker_does_not_look_up_a_miss_again(tmp_path, monkeypatch):
    # What a pool worker gets: a task carrying the key the parent missed; it re-reads the file itself.
    from mpslint.cache import Cache

    (path, display, settings), = _many(tmp_path, 1)
    cache_dir = tmp_path / "cache"
    key = Cache(cache_dir).key(Path(path).read_bytes(), display, settings)
    state = runner._State([settings], Mode(), cache_dir)
    counting = _Counting(monkeypatch)
    result = state.process(runner.Task(path, display, 0, missed=key))
    assert not result.cached and counting.gets == []
    assert Cache(cache_dir).get(key) is not None  # stored under the key the parent computed


def test_a_file_changed_since_the_parent_looked_is_looked_up_again(tmp_path, monkeypatch):
    from mpslint.cache import Cache

    (path, display, settings), = _many(tmp_path, 1)
    cache_dir = tmp_path / "cache"
    stale = Cache(cache_dir).key(b"what the file held before", display, settings)
    counting = _Counting(monkeypatch)
    runner._State([settings], Mode(), cache_dir).process(runner.Task(path, display, 0, missed=stale))
    assert len(counting.gets) == 1 and counting.gets[0] != stale
    assert Cache(cache_dir).get(stale) is None  # nothing stored under a key the content no longer has


_stat_index_used = pytest.mark.skipif(not STAT_CHANGE_TIME, reason="Windows: ctime is the creation time, no stat index")


def _hashed_later(monkeypatch, seconds: float = 10) -> None:
    """The runner's clock, when it records that it hashed a file, runs ``seconds`` ahead: the files
    written by the test look older than the racy window of the stat index (cache.py)."""
    import time
    from types import SimpleNamespace

    monkeypatch.setattr(runner, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + int(seconds * 1e9)))


@_stat_index_used
def test_a_warm_run_reads_no_file_whose_stat_is_unchanged(tmp_path, monkeypatch):
    files = _many(tmp_path, 4)
    cache_dir = tmp_path / "cache"
    _hashed_later(monkeypatch)
    first = run(files, Mode(), cache_dir=cache_dir, jobs=1)
    counting = _Counting(monkeypatch)
    second = run(files, Mode(), cache_dir=cache_dir, jobs=1)
    assert all(r.cached for r in second) and _summary(second) == _summary(first)
    assert counting.reads == [] and counting.keys == []  # found by stat, not read nor hashed


def test_the_stat_index_never_serves_a_file_edited_with_the_same_size_and_mtime(tmp_path, monkeypatch):
    import time

    path = tmp_path / "a.py"
    path.write_text("import torch\n\nx = torch.zeros(1)\ny = x.cuda()\n")
    files = [(str(path), "a.py", Settings())]
    cache_dir = tmp_path / "cache"
    _hashed_later(monkeypatch)
    assert run(files, Mode(), cache_dir=cache_dir, jobs=1)[0].diagnostics
    before = os.stat(path)
    time.sleep(0.05)  # a later tick of the kernel's file clock
    path.write_text("import torch\n\nx = torch.zeros(1)\ny = x.cpu()\n\n")  # the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    result = run(files, Mode(), cache_dir=cache_dir, jobs=1)[0]
    assert not result.cached and _summary([result]) == _summary(run(files, Mode(), jobs=1))
    assert result.diagnostics == []


def test_a_file_hashed_right_after_it_was_written_is_read_again_next_run(tmp_path, monkeypatch):
    # Its stat may not change for an edit within the same tick of a coarse clock: the index does not vouch for it.
    files = _many(tmp_path, 3)
    cache_dir = tmp_path / "cache"
    run(files, Mode(), cache_dir=cache_dir, jobs=1)
    counting = _Counting(monkeypatch)
    assert all(r.cached for r in run(files, Mode(), cache_dir=cache_dir, jobs=1))
    assert len(counting.reads) == len(counting.keys) == 3


@_stat_index_used
def test_a_stale_stat_index_costs_a_read_never_a_wrong_result(tmp_path, monkeypatch):
    files = _many(tmp_path, 2)
    cache_dir = tmp_path / "cache"
    _hashed_later(monkeypatch)
    run(files, Mode(), cache_dir=cache_dir, jobs=1)
    (index,) = cache_dir.glob("v*/stat-index")
    entries = json.loads(index.read_text())
    index.write_text(json.dumps({name: entry[:6] + ["0" * 40] for name, entry in entries.items()}))  # wrong keys
    results = run(files, Mode(), cache_dir=cache_dir, jobs=1)
    assert all(r.cached for r in results)  # each file was read, hashed, and found under its real key
    index.write_text("{not json")
    assert all(r.cached for r in run(files, Mode(), cache_dir=cache_dir, jobs=1))


CLEAN = "import torch\n\nx = torch.zeros(1)\n"


def _entry_files(cache_dir: Path):
    return sorted(cache_dir.glob("v*/??/*.json"))  # module summaries sit in their own directory


def _checks(monkeypatch):
    """The files actually checked (not served by the cache) from here on."""
    checked = []
    real = runner.process_bytes_safely
    monkeypatch.setattr(runner, "process_bytes_safely",
                        lambda data, display, *a, **k: checked.append(display) or real(data, display, *a, **k))
    return checked


@_stat_index_used
def test_a_file_without_findings_gets_no_entry_file_the_stat_index_says_so(tmp_path, monkeypatch):
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "cuda.py").write_text(CUDA)
    files = [(str(tmp_path / name), name, Settings()) for name in ("clean.py", "cuda.py")]
    cache_dir = tmp_path / "cache"
    _hashed_later(monkeypatch)
    first = run(files, Mode(), cache_dir=cache_dir, jobs=1)
    assert not first[0].diagnostics and first[1].diagnostics
    assert len(_entry_files(cache_dir)) == 1  # the file with findings only
    checked = _checks(monkeypatch)
    second = run(files, Mode(), cache_dir=cache_dir, jobs=1)
    assert all(r.cached for r in second) and _summary(second) == _summary(first) and checked == []
    # The same bytes under a new stat (a checkout, `touch`): read and hashed, and still not checked again.
    for name in ("clean.py", "cuda.py"):
        os.utime(tmp_path / name, ns=(1, 1))
    third = run(files, Mode(), cache_dir=cache_dir, jobs=1)
    assert all(r.cached for r in third) and _summary(third) == _summary(first) and checked == []
    # A new text is checked, whatever the index says of the old one.
    (tmp_path / "clean.py").write_text(CUDA + "\n")
    fourth = run(files, Mode(), cache_dir=cache_dir, jobs=1)
    assert checked == ["clean.py"] and fourth[0].diagnostics


@_stat_index_used
def test_a_file_edited_while_the_run_checks_it_is_recorded_under_the_bytes_checked(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text(CUDA)  # looked up with findings
    files = [(str(path), "a.py", Settings())] + _many(tmp_path, 3)
    cache_dir = tmp_path / "cache"
    _hashed_later(monkeypatch)

    def edited_meanwhile(todo, table, mode, cache_dir, workers):
        path.write_text(CLEAN)  # then checked clean by a worker, which reads the file itself
        state = runner._State(table, mode, cache_dir)
        return [state.process(task) for task in todo]

    monkeypatch.setattr(runner, "POOL_THRESHOLD", 2)
    monkeypatch.setattr(runner, "_run_pool", edited_meanwhile)
    assert run(files, Mode(), cache_dir=cache_dir, jobs=2)[0].diagnostics == []
    monkeypatch.undo()
    path.write_text(CUDA)  # the bytes looked up first, under a new stat: their findings, not "none"
    assert run(files[:1], Mode(), cache_dir=cache_dir, jobs=1)[0].diagnostics


def test_another_torch_op_table_is_a_cache_miss(tmp_path, monkeypatch):
    # With no torch-version floor the op rules read the installed torch's yaml: a torch upgrade changes results.
    from mpslint.knowledge import mps_kernels

    yaml = tmp_path / "native_functions.yaml"
    yaml.write_text("- func: old\n")
    monkeypatch.setattr(mps_kernels, "installed_yaml_path", lambda: yaml)
    cache_dir = tmp_path / "cache"
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    files = [(str(path), "a.py", Settings())]
    run(files, Mode(), cache_dir=cache_dir)
    assert run(files, Mode(), cache_dir=cache_dir)[0].cached
    yaml.write_text("- func: old\n- func: new\n")
    assert not run(files, Mode(), cache_dir=cache_dir)[0].cached


def _entries(cache_dir: Path):
    return [p for p in cache_dir.rglob("*.json")]


def test_corrupt_entries_are_ignored_and_rewritten(tmp_path):
    cache_dir = tmp_path / "cache"
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    files = [(str(path), "a.py", Settings())]
    expected = _summary(run(files, Mode(), cache_dir=cache_dir))
    (entry,) = _entries(cache_dir)
    for garbage in (b"", b"{not json", b'{"key": "other", "diagnostics": []}', b'{"diagnostics": [{"code": 1}]}'):
        entry.write_bytes(garbage)
        result = run(files, Mode(), cache_dir=cache_dir)
        assert not result[0].cached and _summary(result) == expected
        assert json.loads(entry.read_bytes())["diagnostics"]  # rewritten


def test_unusable_cache_directory_is_not_fatal(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory should be")
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    results = run([(str(path), "a.py", Settings())], Mode(), cache_dir=blocker)
    assert [d.code for d in results[0].diagnostics] == ["MPS990"]


def test_fix_never_reads_the_cache(tmp_path):
    cache_dir = tmp_path / "cache"
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    files = [(str(path), "a.py", Settings())]
    run(files, Mode(), cache_dir=cache_dir)
    (entry,) = _entries(cache_dir)
    payload = json.loads(entry.read_bytes())
    payload["diagnostics"] = []  # a stale entry claiming the file is clean
    entry.write_text(json.dumps(payload))
    assert run(files, Mode(), cache_dir=cache_dir)[0].diagnostics == []  # the check trusts it...
    fixed = run(files, FIX, cache_dir=cache_dir)  # ...the fix re-checks
    assert fixed[0].fixed == {"MPS990": 1}
    assert path.read_text() == FIXED


def test_cache_key_is_stable_across_processes(tmp_path):
    # Frozensets of strings iterate in hash-seed order; the key must not depend on it.
    import subprocess
    import sys

    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "from mpslint.cache import settings_fingerprint; from mpslint.config import Settings\n"
        "print(settings_fingerprint(Settings(select=frozenset({'MPS101','MPS102','MPS103','MPS104'}))))\n"
    ) % (str(Path(__file__).parent),)
    keys = {
        subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True).stdout
        for seed in ("1", "2", "3")
    }
    assert len(keys) == 1


def test_diagnostics_round_trip_through_json():
    from mpslint.diagnostic import Applicability, Diagnostic, Edit, Fix, Location

    d = Diagnostic(
        "MPS990", "m", "a.py", Location(1, 2), Location(3, 4),
        Fix("t", Applicability.UNSAFE, (Edit(Location(1, 2), Location(1, 2), "x\n"),)), 1, detail="tb",
    )
    back = diagnostic_from_json(json.loads(json.dumps(diagnostic_to_json(d))))
    assert back == d and back.detail == "tb"


def test_entries_of_abandoned_code_versions_are_pruned(tmp_path):
    cache_dir = tmp_path / "cache"
    old = cache_dir / "v0.0.1-0123456789abcdef"
    recent = cache_dir / "v0.0.2-fedcba9876543210"
    for directory in (old, recent):
        (directory / "ab").mkdir(parents=True)
        (directory / "ab" / "entry.json").write_text("{}")
    week_ago = os.stat(old).st_mtime - 8 * 24 * 3600
    os.utime(old, (week_ago, week_ago))
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    run([(str(path), "a.py", Settings())], Mode(), cache_dir=cache_dir)
    assert not old.exists()
    assert recent.exists()  # maybe another installation's, still in use
    assert len(_entries(cache_dir)) == 2


def test_the_default_pool_counts_the_cpus_the_process_may_use(monkeypatch):
    import os

    from mpslint import runner

    monkeypatch.delattr(os, "process_cpu_count", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert runner.usable_cpus() == 1  # `taskset -c 3 mpslint .` on a 64-CPU machine: one worker, not 64
