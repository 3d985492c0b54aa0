"""MPS403 across modules: a class or function of the project that starts worker processes, called when a
script is imported (``analysis/processes.py``, ``ModuleSummary.starts``)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from helpers import fresh_project, settings, write_tree  # noqa: F401 (a fixture)
from mpslint.analysis.project import model
from mpslint.analysis.project.summary import summarize
from mpslint.engine import check_text


@pytest.fixture(autouse=True)
def _fresh(fresh_project):
    yield


def starts(source: str):
    return summarize(ast.parse(textwrap.dedent(source))).starts


def findings(path: Path):
    result = check_text(path.read_text(), str(path), settings(["MPS403"]))
    return [(d.location.row, d.code) for d in result.diagnostics], result


# A copy of the vectorised environments many RL repositories keep next to their scripts.
VEC_ENV = """
    from multiprocessing import Pipe, Process

    def worker(remote, env_fn):
        env = env_fn()
        while True:
            remote.send(env.step(remote.recv()))

    class VecEnv:
        def __init__(self, n):
            self.n = n

    class ParallelEnvs(VecEnv):
        def __init__(self, env_fns):
            self.remotes, self.work_remotes = zip(*[Pipe() for _ in env_fns])
            self.ps = [Process(target=worker, args=(w, fn)) for w, fn in zip(self.work_remotes, env_fns)]
            for p in self.ps:
                p.daemon = True
                p.start()
            VecEnv.__init__(self, len(env_fns))

    class LaterEnvs:
        # keeps its processes and starts them only when asked
        def __init__(self, env_fns):
            self.ps = [Process(target=worker, args=(None, fn)) for fn in env_fns]

        def launch(self):
            for p in self.ps:
                p.start()

    class Actor(Process):
        # a Process subclass: making one starts nothing
        def __init__(self, queue):
            super().__init__()
            self.queue = queue

    class SelfStarting(Process):
        def __init__(self, queue):
            super().__init__()
            self.start()

    class Subclass(ParallelEnvs):
        pass
"""


def test_what_a_module_summary_says_starts_processes():
    assert starts(VEC_ENV) == ["ParallelEnvs", "SelfStarting", "Subclass"]
    assert starts("""
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        def pool_map(f, items):
            with mp.Pool(4) as pool:
                return pool.map(f, items)

        def through_helper(f, items):
            return pool_map(f, items)

        def only_made():
            return ProcessPoolExecutor(4)

        def submitted(f):
            executor = ProcessPoolExecutor(4)
            return executor.submit(f)

        class Runner:
            def __init__(self):
                self._boot()

            def _boot(self):
                self.pool = mp.Pool(2)

        def nested():
            def later():
                return mp.Pool(2)
            return later

        def context_pool(f, items):
            return mp.get_context("spawn").Pool(2).map(f, items)

        class ContextWorkers:
            def __init__(self, n):
                ctx = mp.get_context("forkserver")
                self.workers = [ctx.Process(target=work) for _ in range(n)]
                for w in self.workers:
                    w.start()

        def context_made_only():
            ctx = mp.get_context("spawn")
            return ctx.Process(target=work)

        def other_context(f):
            ctx = decimal.getcontext()
            return ctx.Pool(2)
    """) == ["ContextWorkers", "Runner", "context_pool", "pool_map", "submitted", "through_helper"]


def test_a_module_that_imports_no_multiprocessing_starts_nothing():
    assert starts("""
        class Pool:
            def __init__(self):
                self.start()
    """) == []


SCRIPT = """
    import gym
    import torch
    from multiprocessing_env import {name}

    envs = {name}([lambda: gym.make("CartPole-v1") for _ in range(8)])
"""


@pytest.mark.parametrize("name, expected", [
    ("ParallelEnvs", [(6, "MPS403")]),
    ("Subclass", [(6, "MPS403")]),
    ("SelfStarting", [(6, "MPS403")]),
    ("LaterEnvs", []),  # made, not started: the Process objects wait for launch()
    ("Actor", []),  # a Process subclass whose __init__ starts nothing
    ("VecEnv", []),
])
def test_a_class_of_another_module_made_at_the_top_level(tmp_path, name, expected):
    write_tree(tmp_path, {"multiprocessing_env.py": VEC_ENV, "a2c.py": SCRIPT.format(name=name)})
    found, result = findings(tmp_path / "a2c.py")
    assert found == expected
    assert result.depends[str(tmp_path / "multiprocessing_env.py")] != model.ABSENT
    if expected:
        assert f"`{name}`, which starts worker processes," in result.diagnostics[0].message


def test_the_prefilter_sees_a_start_the_file_does_not_spell(tmp_path):
    # No "Pool", "DataLoader" or "multiprocessing" in the script: the project says what `make_envs` does.
    write_tree(tmp_path, {
        "common/__init__.py": "",
        "common/envs.py": """
            import torch.multiprocessing as mp

            def make_envs(n):
                procs = [mp.Process(target=print) for _ in range(n)]
                [p.start() for p in procs]
                return procs
        """,
        "train.py": """
            import torch
            from common.envs import make_envs

            procs = make_envs(4)
            model = torch.nn.Linear(4, 2)
        """,
    })
    assert findings(tmp_path / "train.py")[0] == [(5, "MPS403")]


def test_traps_guarded_later_or_outside_the_project(tmp_path):
    write_tree(tmp_path, {
        "multiprocessing_env.py": VEC_ENV,
        "guarded.py": """
            import torch
            from multiprocessing_env import ParallelEnvs

            if __name__ == "__main__":
                envs = ParallelEnvs([print] * 4)
        """,
        "library.py": """
            import torch
            from multiprocessing_env import ParallelEnvs

            def make(n):  # never called here: whoever calls it decides when
                return ParallelEnvs([print] * n)

            def factory():
                return lambda: ParallelEnvs([print])
        """,
        "outside.py": """
            import torch
            import multiprocessing
            from stable_baselines3.common.vec_env import SubprocVecEnv

            envs = SubprocVecEnv([print] * 4)  # not in the project: nothing is known of it
        """,
        "shadowed.py": """
            import torch
            from multiprocessing_env import ParallelEnvs

            class ParallelEnvs:
                def __init__(self, fns):
                    self.fns = fns

            envs = ParallelEnvs([print] * 4)
        """,
    })
    for name in ("guarded.py", "library.py", "outside.py", "shadowed.py"):
        assert findings(tmp_path / name)[0] == [], name


def test_a_function_called_at_the_top_level_reaches_the_class(tmp_path):
    write_tree(tmp_path, {
        "multiprocessing_env.py": VEC_ENV,
        "train.py": """
            import torch
            from multiprocessing_env import ParallelEnvs

            def main():
                envs = ParallelEnvs([print] * 4)
                return envs

            main()
        """,
    })
    found, result = findings(tmp_path / "train.py")
    assert found == [(6, "MPS403")]
    assert "in `main()`, called at the top level" in result.diagnostics[0].message


def test_a_class_of_the_same_file(tmp_path):
    source = textwrap.dedent(VEC_ENV) + textwrap.dedent("""
        import torch

        envs = ParallelEnvs([print] * 4)
        later = LaterEnvs([print] * 4)
    """)
    write_tree(tmp_path, {"single.py": source})
    rows = [row for row, _ in findings(tmp_path / "single.py")[0]]
    assert rows == [source.splitlines().index("envs = ParallelEnvs([print] * 4)") + 1]
