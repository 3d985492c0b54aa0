"""HotLoops: which loops run a step, which code runs every step, which branches every N steps."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import ast

import pytest

from mpslint.analysis.loops import HotLoops
from mpslint.analysis.tree import Tree
from mpslint.checks.base import Context
from mpslint.config import Settings


def analyse(source: str, **options):
    source = textwrap.dedent(source)
    module = ast.parse(source)
    ctx = Context(Tree(module, source), "example.py", replace(Settings(), **options))
    return ctx.analysis(HotLoops), module


def probes(source: str, **options):
    """For each ``probe(...)`` call, keyed by its first argument: its StepPosition (or None)."""
    loops, module = analyse(source, **options)
    found = {}
    for node in loops.tree.of_type(ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "probe":
            found[node.args[0].value] = loops.position(node)
    return found, loops


def test_epoch_loop_is_not_hot_only_the_batch_loop():
    found, loops = probes(
        """
        for epoch in range(3):
            probe("epoch")
            for x, y in train_loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                probe("step")
            probe("after")
        """
    )
    assert found["epoch"] is None
    assert found["after"] is None
    assert found["step"] is not None and found["step"].loop.kind == "training loop"
    assert len(loops.hot) == 1


@pytest.mark.parametrize(
    "header",
    [
        "for batch in loader:",
        "for i, batch in enumerate(train_dataloader):",
        "for batch in tqdm(val_loader, desc='eval'):",
        "for (a, b) in zip(loader_a, loader_b):",
        "for batch in DataLoader(ds, batch_size=4):",
        "for step, batch in enumerate(tqdm(self.train_dl)):",
    ],
)
def test_loops_over_loaders_are_hot(header):
    found, _ = probes(f"{header}\n    probe('body')\n")
    assert found["body"] is not None


@pytest.mark.parametrize(
    "body",
    [
        "loss.backward()",
        "optimizer.step()",
        "self.optimizer.step()",
        "opt_d.step()",
        "scaler.step(optimizer)",
        "accelerator.backward(loss)",
    ],
)
def test_step_calls_make_a_while_or_range_loop_hot(body):
    found, _ = probes(f"while step < max_steps:\n    batch = next(it)\n    {body}\n    probe('body')\n")
    assert found["body"] is not None


def test_plain_loops_are_not_hot():
    found, loops = probes(
        """
        for name, param in model.named_parameters():
            probe("params")
        for i in range(10):
            scheduler.step()
            probe("sched")
        """
    )
    assert found == {"params": None, "sched": None}
    assert not loops.hot


def test_forward_of_a_placed_model_makes_a_loop_hot():
    found, _ = probes(
        """
        model = Net().to(device)
        for sample in samples:
            model(sample)
            probe("infer")
        """
    )
    assert found["infer"].loop.kind == "evaluation loop"


@pytest.mark.parametrize(
    "test",
    [
        "step % 10 == 0",
        "(step + 1) % args.gradient_accumulation_steps == 0",
        "i % args.log_interval == 0 or last",
        "global_step % args.logging_steps == 0 and global_step > 0",
        "not step % 100",
        "step == 0",
        "i == len(loader) - 1",
        "should_log",
    ],
)
def test_interval_guarded_branches(test):
    source = f"""
    for step, batch in enumerate(loader):
        should_log = step % 50 == 0
        last = step == len(loader) - 1
        if {test}:
            probe("guarded")
        else:
            probe("else")
    """
    found, _ = probes(source)
    assert found["guarded"].guarded
    assert not found["else"].guarded


@pytest.mark.parametrize("test", ["step % 10 != 0", "loss > 5", "verbose", "step % 10 == 0 or check()"])
def test_branches_that_run_most_steps_are_not_guarded(test):
    found, _ = probes(f"for step, batch in enumerate(loader):\n    if {test}:\n        probe('b')\n")
    assert not found["b"].guarded


@pytest.mark.parametrize(
    "test",
    [
        "args.rank == 0",  # the process's rank: the same on every pass
        "args.nr == 0 and not args.quiet",
        "net.n_classes == 1",  # a property of the model, not of the pass
        "epoch == 0",  # the outer loop's counter: every step of the first epoch
        "world_size == 1",
    ],
)
def test_a_comparison_that_holds_on_every_pass_is_not_a_guard(test):
    source = f"""
    def train(args, net, loader, epoch, world_size):
        for step, batch in enumerate(loader):
            if {test}:
                probe("b")
    """
    found, _ = probes(source)
    assert not found["b"].guarded


@pytest.mark.parametrize(
    "test",
    [
        "step == 0",
        "args.rank == 0 and step % 50 == 0",  # the rank test narrows an interval guard: still one
        "seen == 1",  # a counter the loop advances
        "self.global_step == 0",  # advanced where the loop cannot see it (a method it calls)
        "state.iteration == 1",
        "args.done == 0",  # assigned in the loop
    ],
)
def test_a_comparison_with_a_counter_the_loop_advances_stays_a_guard(test):
    source = f"""
    def train(self, args, loader, state):
        seen = 0
        for step, batch in enumerate(loader):
            seen += 1
            if {test}:
                probe("b")
            args.done = 1
    """
    found, _ = probes(source)
    assert found["b"].guarded


def test_per_step_honours_the_setting():
    source = "for step, batch in enumerate(loader):\n    if step % 10 == 0:\n        x = 1\n"
    for flag, expected in ((False, None), (True, "loop over batches")):
        loops, module = analyse(source, report_interval_guarded=flag)
        assign = next(iter(loops.tree.of_type(ast.Assign)))
        got = loops.per_step(assign)
        assert (got.kind if got else None) == expected


def test_functions_called_every_step_run_every_step():
    found, _ = probes(
        """
        def log_metrics(out):
            probe("helper")

        def train_step(batch):
            loss = model(batch).sum()
            loss.backward()
            log_metrics(loss)

        def rarely():
            probe("rare")

        def main():
            for epoch in range(2):
                for step, batch in enumerate(loader):
                    train_step(batch)
                    if step % 100 == 0:
                        rarely()
        """
    )
    assert found["helper"] is not None and not found["helper"].guarded
    assert found["rare"].guarded


def test_a_function_that_runs_a_step_makes_the_calling_loop_hot():
    found, loops = probes(
        """
        def train_step(batch):
            loss = compute(batch)
            loss.backward()
            optimizer.step()

        def main():
            for epoch in range(2):
                probe("epoch")
            while True:
                batch = next(it)
                train_step(batch)
                probe("step")
        """
    )
    assert found["epoch"] is None
    assert found["step"].loop.kind == "training loop"


def test_except_handlers_and_loop_else_do_not_run_every_step():
    found, _ = probes(
        """
        for batch in loader:
            try:
                run(batch)
            except RuntimeError:
                probe("except")
        else:
            probe("else")
        """
    )
    assert found == {"except": None, "else": None}


def test_nested_plain_loop_inside_a_hot_loop_runs_every_step():
    found, _ = probes(
        """
        for batch in loader:
            for key, value in metrics.items():
                probe("inner")
        """
    )
    assert found["inner"] is not None


def test_lambdas_and_classes_stop_the_search():
    found, _ = probes(
        """
        for batch in loader:
            callback = lambda: probe("lambda")
            class Local:
                probe("class")
        """
    )
    assert found == {"lambda": None, "class": None}


def test_names_that_only_mention_a_loader_are_not_loaders():
    # Found in accelerate's tests: `for dl_results in dataloader_batch_results:` is a list of results.
    found, _ = probes("for r in dataloader_batch_results:\n    probe('r')\nfor b in dl_batches:\n    probe('b')\n")
    assert found == {"r": None, "b": None}


def test_a_loop_that_moves_each_batch_to_the_device_and_runs_a_model_on_it_is_hot():
    found, _ = probes(
        """
        def test(g_model, prefetcher, device):
            with torch.no_grad():
                batch = prefetcher.next()
                while batch is not None:
                    lr = batch["lr"].to(device)
                    sr = g_model(lr)
                    probe("pass")
                    batch = prefetcher.next()
        """
    )
    assert found["pass"].loop.kind == "evaluation loop"


@pytest.mark.parametrize(
    "body",
    [
        # moves each value, runs no model: a loop inside a step that places a batch's fields
        "for k, v in batch.items():\n        batch[k] = v.to(device)\n        probe('pass')",
        # runs a module on what it has, moves nothing: the layers of a forward
        "for layer in layers:\n        x = layer(x)\n        probe('pass')",
        # moves the same tensor again and again: a constant, not a batch
        "for name in names:\n        z = noise.to(device)\n        out = generator(z)\n        probe('pass')",
    ],
)
def test_loops_that_do_not_move_fresh_data_into_a_model_are_not_hot(body):
    source = "def f(batch, layers, x, names, noise, generator, device):\n    x = x.to(device)\n    " + body + "\n"
    found, loops = probes(source)
    assert found["pass"] is None and not loops.hot


def test_the_outer_loop_of_gradient_accumulation_steps_the_optimizer_every_pass():
    found, loops = probes(
        """
        model = Net().to(device)
        while step < max_steps:
            for micro in range(accum):
                x, y = next(it)
                loss = model(x.to(device)).mean()
                loss.backward()
                probe("micro")
            optimizer.step()
            probe("step")
        """
    )
    assert found["micro"] is not None
    assert found["step"] is not None and found["step"].loop.kind == "training loop"


@pytest.mark.parametrize(
    "ending",
    [
        "return out",
        "break",
        "with torch.no_grad():\n        probe('inner')\n        return out",
        "if verbose:\n        return out\n    else:\n        raise StopIteration",
    ],
)
def test_a_loop_that_leaves_on_its_first_pass_is_not_hot(ending):
    source = "def peek(model, loader, verbose):\n    for x in loader:\n        out = model(x)\n        probe('pass')\n        "
    source += ending.replace("\n", "\n    ") + "\n"
    found, loops = probes(source)
    assert found["pass"] is None and not loops.hot


@pytest.mark.parametrize(
    "ending",
    [
        "if out is None:\n        return None",  # leaves on some passes only
        "if verbose:\n        break",
        "with torch.no_grad():\n        probe('inner')",
    ],
)
def test_a_loop_that_leaves_on_some_passes_stays_hot(ending):
    source = "def peek(model, loader, verbose):\n    for x in loader:\n        out = model(x)\n        probe('pass')\n        "
    source += ending.replace("\n", "\n    ") + "\n"
    found, _ = probes(source)
    assert found["pass"] is not None


def test_a_method_of_a_class_of_this_file_called_on_an_object_runs_its_steps():
    found, loops = probes(
        """
        import torch

        class Agent:
            def __init__(self, net, opt):
                self.net, self.opt = net, opt

            def act(self, obs):
                probe("act")
                return self.net(obs)

            def learn(self, batch):
                loss = self.net(batch).sum()
                loss.backward()
                self.opt.step()
                probe("learn")

        class Meter:
            def update(self, value):
                probe("meter update")

        class A:
            def run(self):
                probe("run of A")

        class B:
            def run(self):
                probe("run of B")

        def train(env, agent, stats, a, steps):
            obs = env.reset()
            for t in range(steps):
                action = agent.act(obs)
                obs, reward, done, info = env.step(action)
                agent.learn(obs)
                stats.update({"reward": reward})
                a.run()
        """
    )
    assert found["act"] is not None and found["learn"] is not None
    assert found["act"].loop.kind == "training loop"
    # Traps: `update` is a container's method too, and `run` is defined by two classes: which one runs?
    assert found["meter update"] is None
    assert found["run of A"] is None and found["run of B"] is None


def test_a_branch_on_a_parameter_every_call_passes_an_interval_test_runs_every_n_steps():
    found, loops = probes(
        """
        class Model:
            def train_step(self, x, log_loss=False, log_grads=True):
                loss = self.net(x).sum()
                loss.backward()
                self.opt.step()
                if log_loss:
                    probe("log loss")
                if log_grads:
                    probe("log grads")

        def interval(model, data):
            j = 0
            for x in data:
                model.train_step(x, j % 50 == 0)
                j += 1

        def quiet(model, data):
            for x in data:
                model.train_step(x)
        """
    )
    assert found["log loss"] is not None and found["log loss"].guarded
    # Trap: `log_grads` defaults to True and no call passes it: every step.
    assert found["log grads"] is not None and not found["log grads"].guarded


def test_a_parameter_that_some_call_passes_a_plain_flag_is_not_an_interval_guard():
    found, loops = probes(
        """
        def step(model, opt, x, verbose):
            model(x).sum().backward()
            opt.step()
            if verbose:
                probe("verbose")

        def train(model, opt, data, args):
            for i, x in enumerate(data):
                step(model, opt, x, i % 10 == 0)
            for x in data:
                step(model, opt, x, args.verbose)
        """
    )
    assert found["verbose"] is not None and not found["verbose"].guarded


# ------------------------------------------------------------------ which frame runs a call

def _owner_by_parents(tree: Tree, node: ast.AST):
    """The definition `HotLoops._owners` implements, walked parent by parent: the loop whose body (or `while`
    test) holds the node, else the function around it; None at module level or in a lambda or class body."""
    child, parent = node, tree.parent(node)
    while parent is not None:
        cls = type(parent)
        if cls in (ast.For, ast.AsyncFor, ast.While):
            owner = tree.block_owner(child)
            if (owner is not None and owner[0] is parent and owner[1] == "body") or \
                    (cls is ast.While and child is parent.test):
                return parent
        elif cls in (ast.FunctionDef, ast.AsyncFunctionDef):
            return parent
        elif cls in (ast.Lambda, ast.ClassDef):
            return None
        child, parent = parent, tree.parent(parent)
    return None


FRAMES = '''\
f(0)
@deco(f(1))
def outer(a=f(2), *, b=lambda: f(3)) -> f(4):
    f(5)
    for x in f(6):
        f(7)
        while f(8):
            f(9)
            if f(10):
                break
        else:
            f(11)
        g = lambda y: f(12)
        class K(f(13)):
            f(14)
            def m(self):
                f(15)
        [f(16) for z in f(17)]
    else:
        f(18)
    async def inner():
        async for q in f(19):
            f(20)
    while f(21): pass
    for w in f(22): f(23)
    return f(24)
for x in f(25):
    for y in f(26):
        f(27)
    f(28)
'''


def _texts_with_frames():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    yield "frames", FRAMES
    for path in sorted((root / "fixtures").rglob("*.py")):
        yield str(path.relative_to(root)), path.read_text(encoding="utf-8")
    for path in sorted((root / "rules").glob("*.md")):
        for i, block in enumerate(path.read_text(encoding="utf-8").split("```python\n")[1:]):
            yield f"{path.name}#{i}", block.split("```", 1)[0]


def test_the_frame_that_runs_each_call_is_found_by_one_sweep():
    checked = 0
    for name, text in _texts_with_frames():
        try:
            module = ast.parse(text)
        except SyntaxError:
            continue
        loops = Context(Tree(module, text), "example.py", Settings()).analysis(HotLoops)
        calls = loops.tree.of_type(ast.Call)
        expected = [_owner_by_parents(loops.tree, call) for call in calls]
        found = loops._owners(calls)
        assert len(found) == len(expected) and all(a is b for a, b in zip(found, expected)), name
        checked += len(calls)
    assert checked > 2500


def test_frames_of_the_tricky_forms():
    module = ast.parse(FRAMES)
    loops = Context(Tree(module, FRAMES), "example.py", Settings()).analysis(HotLoops)
    calls = [c for c in loops.tree.of_type(ast.Call) if isinstance(c.func, ast.Name) and c.func.id == "f"]
    owners = dict(zip((c.args[0].value for c in calls), loops._owners(calls)))
    outer = module.body[1]
    loop = outer.body[1]
    inner_while = loop.body[1]
    def_inner = outer.body[2]
    assert owners[0] is None  # module level
    # Decorators, defaults and annotations count as inside the function, as everywhere in the tree.
    assert all(owners[k] is outer for k in (1, 2, 4, 5, 6, 18, 24))
    # A class statement, bases included, and a lambda are run by neither the loop nor the function.
    assert owners[3] is None and owners[12] is None and owners[13] is None and owners[14] is None
    assert owners[7] is loop and owners[11] is loop and owners[16] is loop and owners[17] is loop
    assert owners[8] is inner_while and owners[9] is inner_while and owners[10] is inner_while
    assert owners[15] is loop.body[3].body[1]
    assert owners[19] is def_inner and owners[20] is def_inner.body[0]
    assert owners[21] is outer.body[3] and owners[22] is outer and owners[23] is outer.body[4]
    assert owners[25] is None and owners[26] is module.body[2] and owners[27] is module.body[2].body[0]
    assert owners[28] is module.body[2]
