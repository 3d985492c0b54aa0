"""Which loops run a step, and which code runs on every step.

A loop is *hot* when its own body (not a nested loop's) runs a training or
inference step: ``.backward()``, ``optimizer.step()``, the forward call of a
placed module (or ``self(x)`` on a device tensor in a model's own method,
``device_flow/model_calls.py``), or a call to a function of this module that does one of these
outside its own loops; or when it iterates a data loader (``loader``,
``enumerate(loader)``, ``tqdm(loader)``, ``zip(loader, ...)``). An epoch loop
whose body only contains the batch loop is not hot: its own statements run
once per epoch.

Code runs *per step* when it is in a hot loop's body (or in a plain loop
nested in it), or in a function called per step from a hot loop in this file.
A branch guarded by ``step % N == 0`` (and the like: ``(step + 1) % N == 0``,
``i % args.log_interval == 0 or last``, ``step == 0``, a name assigned such
a test) is *interval-guarded*: it runs every N steps, not every step.
``except`` handlers and a loop's ``else`` do not run per step.

Every question here is answered from values each node inherits from its
parent (``Tree.inherited``), computed once per node.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple, Union

from mpslint.analysis.device_flow import MODULE_LIKE, DeviceFlow, Kind
from mpslint.analysis.syntax import bool_sides, dotted_name, integer_value, positional
from mpslint.analysis.tree import Tree

LoopNode = Union[ast.For, ast.AsyncFor, ast.While]
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]

LOADER = re.compile(r"(loader|_dl|^dl)s?$|^loader_|_loader_", re.IGNORECASE)
WRAPPERS = frozenset("enumerate tqdm zip iter islice trange progress track chain".split())
# A counter compared with a constant may be advanced where the loop cannot see it (a method, a callback).
STEP_COUNTER = re.compile(r"step|iter|count|idx|index|batch|global|^i$|^it$|^n$", re.IGNORECASE)
OPTIMIZER = re.compile(r"optim|^opt$|^opt_|_opt$|^opt[A-Z_]|scaler", re.IGNORECASE)

# Prefilter groups (Rule.REQUIRES) for rules that need a hot loop, each a necessary condition
# read off this analysis: a `for`/`while` whose body runs `.backward()`, `<optimizer>.step()`,
# a placed module's forward (placed only by `.to(`/`.cuda(`/`.to_empty(`/`prepare(`), or
# that iterates a loader (LOADER matches "loader"/"dl" in any case, hence every casing;
# "DataLoader" contains "oader").
LOOP_KEYWORDS = ("for", "while")
STEP_EVIDENCE = ("backward", "step", "to(", "to_empty", "cuda", "prepare") + tuple(
    "".join(c.upper() if mask >> i & 1 else c for i, c in enumerate(word)) for word in ("oader", "dl")
    for mask in range(2 ** len(word))
)

_FOR = (ast.For, ast.AsyncFor)
_SELF_CALLS = frozenset(("self", "self.forward", "self.__call__"))
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_FRAMES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class Loop:
    node: LoopNode = field(repr=False)
    kind: str  # "training loop" | "evaluation loop" | "loop over batches"


@dataclass(frozen=True)
class StepPosition:
    """Where a node runs relative to the hot loop around it."""

    loop: Loop
    guarded: bool  # inside an interval-guarded branch: every N steps, not every step


class HotLoops:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree: Tree = ctx.tree
        self.flow: DeviceFlow = ctx.analysis(DeviceFlow)
        self.defs: Dict[str, List[FunctionNode]] = {}
        for function in self.tree.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            self.defs.setdefault(function.name, []).append(function)  # type: ignore[attr-defined]
        self.hot: Dict[ast.AST, Loop] = {}
        self.callers: Dict[ast.AST, StepPosition] = {}
        self._guards: Dict[Tuple[ast.AST, Optional[ast.AST]], bool] = {}
        self._stored: Dict[ast.AST, Set[str]] = {}  # loop -> the names and attribute chains it assigns
        self._sites: Optional[Dict[ast.AST, List[ast.Call]]] = None  # local function -> the calls of it here
        if self.tree.of_type(ast.For, ast.AsyncFor, ast.While):
            self._find_hot_loops()
        if self.hot:
            self._find_per_step_functions()

    # ---------------------------------------------------------------- queries

    def position(self, node: ast.AST) -> Optional[StepPosition]:
        """The hot loop that runs ``node`` on every step (or every N steps, ``guarded``); None if none."""
        if not self.hot:
            return None  # most files: no question to ask of any node
        local = self.tree.inherited(("hot", id(self)), node, self._local_step, None)
        if local is None:
            return None
        where, guarded = local
        if isinstance(where, Loop):
            return StepPosition(where, guarded)
        caller = self.callers.get(where)
        if caller is None:
            return None
        return StepPosition(caller.loop, guarded or caller.guarded)

    def per_step(self, node: ast.AST) -> Optional[Loop]:
        """The hot loop that runs ``node`` every step, honouring ``report_interval_guarded``."""
        position = self.position(node)
        if position is None:
            return None
        if position.guarded and not self.ctx.settings.report_interval_guarded:
            return None
        return position.loop

    def is_guard(self, test: ast.AST, depth: int = 0, loop: Optional[ast.AST] = None) -> bool:
        """``step % N == 0``-like tests: the branch runs every N steps or once.

        ``loop`` is the loop whose passes the test is asked about: a comparison with a constant
        (``step == 0``) runs once only if its other side can change from one pass to the next;
        ``args.rank == 0`` or ``net.n_classes == 1``, never assigned in the loop, holds on every
        pass or on none.
        """
        if depth > 4:
            return False
        cls = type(test)
        if cls is ast.Compare:
            if len(test.ops) != 1 or type(test.ops[0]) is not ast.Eq:  # type: ignore[attr-defined]
                return False
            sides = (test.left, test.comparators[0])  # type: ignore[attr-defined]
            if any(_is_modulo(side) for side in sides):
                return True
            # `step == 0`, `i == len(loader) - 1`, `step == args.max_steps`: once per loop.
            for bound, counter in (sides, sides[::-1]):
                if (integer_value(bound) is not None or _mentions_len(bound)) and not self._invariant(counter, loop):
                    return True
            return False
        if cls is ast.UnaryOp and type(test.op) is ast.Not:  # type: ignore[attr-defined]
            return _is_modulo(test.operand)  # type: ignore[attr-defined]
        if cls is ast.BoolOp:
            left, right = bool_sides(test)  # type: ignore[arg-type]
            if type(test.op) is ast.And:  # type: ignore[attr-defined]
                return self.is_guard(left, depth + 1, loop) or self.is_guard(right, depth + 1, loop)
            sides = (left, right)
            guards = [self.is_guard(s, depth + 1, loop) for s in sides]
            # `i % log_interval == 0 or last`: the other side is a plain flag.
            return any(guards) and all(g or _is_flag(s) for g, s in zip(guards, sides))
        if cls is ast.Name:
            scope = self.tree.scope_of(test)
            bindings = self.flow.bindings.get(scope, {}).get(test.id, [])  # type: ignore[attr-defined]
            if len(bindings) == 1 and bindings[0].how == "param" and type(scope) in _FUNCTIONS:
                return self._guard_passed(scope, test.id, depth)  # type: ignore[arg-type]
            values = [b.value for b in bindings if b.how == "assign" and not b.path]
            return bool(values) and len(values) == len(bindings) and all(
                self.is_guard(v, depth + 1, loop) for v in values)
        return False

    def _guard_passed(self, function: FunctionNode, name: str, depth: int) -> bool:
        """``if log_loss:`` in ``train_step(x, y, log_loss)``, which every call in this file passes an
        interval test (``j % 50 == 0``) or leaves at a false default: the branch runs every N steps."""
        if self._sites is None:
            self._sites = {}
            for call in self.tree.of_type(ast.Call):
                for callee in self.local_callees(call):  # type: ignore[arg-type]
                    self._sites.setdefault(callee, []).append(call)  # type: ignore[arg-type]
        sites = self._sites.get(function)
        if not sites:
            return False
        args = function.args
        positional = [*args.posonlyargs, *args.args]
        names = [a.arg for a in positional]
        if name not in names and name not in [a.arg for a in args.kwonlyargs]:
            return False
        defaults = dict(zip(names[len(names) - len(args.defaults):], args.defaults))
        defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
        for call in sites:
            bound = type(call.func) is ast.Attribute and type(self.tree.parent(function)) is ast.ClassDef \
                and not any(dotted_name(d) == "staticmethod" for d in function.decorator_list)
            value = next((k.value for k in call.keywords if k.arg == name), None)
            if value is None and name in names:
                index = names.index(name) - (1 if bound else 0)
                if any(type(a) is ast.Starred for a in call.args[: index + 1]):
                    return False
                if 0 <= index < len(call.args):
                    value = call.args[index]
            if value is None:
                value = defaults.get(name)
                if not (type(value) is ast.Constant and not value.value):  # type: ignore[union-attr]
                    return False  # no argument, and a default that may be true
                continue  # `log_loss=False` left as it is: the branch does not run at this call
            if not self.is_guard(value, depth + 1):
                return False
        return True

    def _invariant(self, counter: ast.AST, loop: Optional[ast.AST]) -> bool:
        """``counter`` holds the same value on every pass of ``loop``: a name or attribute the loop never
        assigns (nor its target), and whose name does not say it counts steps (``self.global_step`` may be
        advanced by a method the loop calls). False when not known."""
        if loop is None or type(loop) not in (*_FOR, ast.While):
            return False
        name = dotted_name(counter)
        if name is None or STEP_COUNTER.search(name.rsplit(".", 1)[-1]):
            return False
        stored = self._stored.get(loop)
        if stored is None:
            stored = self._stored[loop] = _stored_in(loop)
        parts = name.split(".")
        return not any(".".join(parts[:i]) in stored for i in range(1, len(parts) + 1))

    # -------------------------------------------------------------- detection

    def _local_step(self, parent: ast.AST, child: ast.AST, above):
        """(the hot loop or function that decides, interval-guarded since) for ``child``; None outside any."""
        cls = type(parent)
        if cls in _FOR or cls is ast.While:
            if _in_field(self.tree, child, parent, "body") or (cls is ast.While and child is parent.test):  # type: ignore[attr-defined]
                loop = self.hot.get(parent)
                if loop is not None:
                    return loop, False
            return above
        if cls is ast.If:
            if above is not None and _in_field(self.tree, child, parent, "body") and (
                    self._is_guard(parent.test, above[0]) or _counter_limited(parent)):  # type: ignore[attr-defined]
                return above[0], True
            return above
        if cls is ast.ExceptHandler or cls is ast.Lambda or cls is ast.ClassDef:
            return None
        if cls in _FUNCTIONS:
            return parent, False
        return above

    def _is_guard(self, test: ast.AST, where) -> bool:
        """Whether ``test`` guards its branch on the passes of ``where`` (a Loop, or the function called per step)."""
        loop = where.node if isinstance(where, Loop) else None
        key = (test, loop)
        known = self._guards.get(key)
        if known is None:
            known = self._guards[key] = self.is_guard(test, loop=loop)
        return known

    def _owners(self, calls: List[ast.AST]) -> List[Optional[ast.AST]]:
        """For each of ``calls`` (in source order): the loop whose iteration runs it directly, or the function
        it is in; None at module level or in a lambda or class body.

        One sweep over the calls and the index ranges of the code each frame runs (a loop's body, and a
        ``while``'s test; a function's, lambda's or class's whole inside), which nest: the innermost range
        open at a call is its owner. No other node of the file is visited.
        """
        tree = self.tree
        ranges: List[Tuple[int, int, Optional[ast.AST]]] = []
        for frame in tree.of_type(*_LOOPS, *_FRAMES):
            cls = type(frame)
            if cls in _LOOPS:
                body = frame.body  # type: ignore[attr-defined]
                first = frame.test if cls is ast.While else body[0]  # type: ignore[attr-defined]
                ranges.append((tree.index(first), tree.end(body[-1]), frame))
            else:
                index = tree.index(frame)
                ranges.append((index + 1, tree.end(frame), frame if cls in _FUNCTIONS else None))
        ranges.sort(key=lambda r: (r[0], -r[1]))
        owners: List[Optional[ast.AST]] = []
        open_ranges: List[Tuple[int, int, Optional[ast.AST]]] = []
        following = 0
        for call in calls:
            position = tree.index(call)
            while following < len(ranges) and ranges[following][0] <= position:
                entered = ranges[following]
                following += 1
                while open_ranges and open_ranges[-1][1] < entered[0]:
                    open_ranges.pop()
                open_ranges.append(entered)
            while open_ranges and open_ranges[-1][1] < position:
                open_ranges.pop()
            owners.append(open_ranges[-1][2] if open_ranges else None)
        return owners

    def _step_kind(self, call: ast.Call) -> Optional[str]:
        """"train" for backward/optimizer steps, "forward" for a placed module's forward."""
        func = call.func
        if type(func) is ast.Attribute:
            method = func.attr
            if method == "backward":
                return "train"
            if method == "step":
                owner = dotted_name(func.value) or ""
                if OPTIMIZER.search(owner.rsplit(".", 1)[-1]):
                    return "train"
            if method in ("forward", "generate") and self.flow.is_placed_name(dotted_name(func.value) or "", call):
                return "forward"
        name = dotted_name(func)
        if name is not None and self.flow.is_placed_name(name, call):
            return "forward"
        if name in _SELF_CALLS and self.flow.model_call_kind(call) is Kind.DEVICE:
            return "forward"  # `out = self(img.cuda())` in a model's `predict`: its own forward on the device
        values = positional(call)
        if any(type(v) is ast.Name and OPTIMIZER.search(v.id) for v in values) and any(  # type: ignore[attr-defined]
                type(v) is ast.Name and "loss" in v.id.lower() and self.flow.is_device(v) for v in values):  # type: ignore[attr-defined]
            return "train"  # `loss_scaler(loss, optimizer, ...)`: a helper that steps the optimizer on the loss
        return None

    def _passes_data(self, loop: ast.AST, calls: List[ast.Call]) -> bool:
        """Each pass of ``loop`` moves a value it binds anew to the device (``x.to(device)``, ``x.cuda()``:
        a batch, not a constant moved again and again) and applies a module-like callable to a device
        tensor (``g_model(lr)``, ``psnr_model(sr, gt)``). Asked only of loops nothing else makes hot, and
        the device questions only where the syntax already fits (``for layer in layers: x = layer(x)``
        in every model's forward asks none)."""
        moves = [c for c in calls if type(c.func) is ast.Attribute and c.func.attr in ("to", "cuda")
                 and self._binds_each_pass(c.func.value, loop)]
        feeds = [c for c in calls if not (type(c.func) is ast.Attribute and c.func.attr in ("to", "cuda"))]
        if not moves or not feeds:
            return False
        flow = self.flow
        if not any(flow.kind(c) is Kind.DEVICE and flow.kind(c.func.value) is not Kind.MODULE for c in moves):  # type: ignore[attr-defined]
            return False
        return any(any(flow.is_device(value) for value in positional(c)) for c in feeds)

    def _binds_each_pass(self, value: ast.AST, loop: ast.AST) -> bool:
        """``value`` (``batch["x"]``, ``x``) is read from a name that ``loop`` binds anew on each pass (its
        target, a name it assigns): a batch, not a constant moved again and again."""
        root = value
        while type(root) in (ast.Attribute, ast.Subscript, ast.Call):
            root = root.func if type(root) is ast.Call else root.value  # type: ignore[attr-defined]
        if type(root) is not ast.Name:
            return False
        stored = self._stored.get(loop)
        if stored is None:
            stored = self._stored[loop] = _stored_in(loop)
        return root.id in stored  # type: ignore[attr-defined]

    def local_callees(self, call: ast.Call) -> List[FunctionNode]:
        """The functions of this file ``call`` may run: ``f(x)``, ``self.f(x)``, and ``agent.learn(batch)``
        where ``learn`` is a method of exactly one class here (an object of that class, passed around)."""
        func = call.func
        if type(func) is ast.Name:
            return self.defs.get(func.id, [])
        if type(func) is ast.Attribute and type(func.value) is ast.Name:
            if func.value.id in ("self", "cls"):
                return self.defs.get(func.attr, [])
            if func.attr in _LIBRARY_METHODS:
                return []  # `x.to(device)`, `stats.update(d)`: a tensor's, module's or container's own method
            found = self.defs.get(func.attr, ())
            if len(found) == 1 and type(self.tree.parent(found[0])) is ast.ClassDef:
                return list(found)
        return []

    def _find_hot_loops(self) -> None:
        tree = self.tree
        steps: Dict[ast.AST, Set[str]] = {}  # loop or function -> step kinds run directly in it
        local_calls: List[Tuple[ast.AST, List[FunctionNode]]] = []
        candidates: Dict[ast.AST, List[ast.Call]] = {}  # loop -> its calls that may move or feed data
        placed: List[Tuple[ast.Call, ast.AST, List[FunctionNode]]] = []
        called: Set[ast.AST] = set()
        calls = tree.of_type(ast.Call)
        for call, owner in zip(calls, self._owners(calls)):
            if owner is None:
                continue
            callees = self.local_callees(call)  # type: ignore[arg-type]
            placed.append((call, owner, callees))  # type: ignore[arg-type]
            called.update(callees)
        for call, owner, callees in placed:
            # A function's own steps count only where this file calls it (they pass to the caller's loop):
            # the step questions, which ask the device flow, are not asked of calls in other functions.
            if type(owner) not in _LOOPS and owner not in called:
                continue
            kind = self._step_kind(call)
            if kind is None and type(owner) in _LOOPS and _may_pass_data(call):  # type: ignore[arg-type]
                candidates.setdefault(owner, []).append(call)  # type: ignore[arg-type]
            if kind is None and not callees:
                continue
            if kind is not None:
                steps.setdefault(owner, set()).add(kind)
            if callees:
                local_calls.append((owner, callees))
        direct = {owner: set(kinds) for owner, kinds in steps.items()}
        # A call to a function that runs a step (outside its own loops) runs that step.
        changed = True
        rounds = 0
        while changed and rounds < 8:
            changed = False
            rounds += 1
            for owner, callees in local_calls:
                for callee in callees:
                    inherited = steps.get(callee, set()) - steps.get(owner, set())
                    if inherited and callee is not owner:
                        steps.setdefault(owner, set()).update(inherited)
                        changed = True
        for node in tree.of_type(ast.For, ast.AsyncFor, ast.While):
            kinds = steps.get(node, set())
            loader = type(node) in _FOR and self._iterates_loader(node.iter)  # type: ignore[attr-defined]
            if not kinds and not loader and node in candidates and self._passes_data(node, candidates[node]):  # type: ignore[arg-type]
                kinds = {"forward"}  # each pass moves fresh data to the device and runs a model on it
            if not kinds and not loader:
                continue
            if _first_pass_only(node):
                continue  # `for batch in loader: ...; return out`: one batch, not every step
            if "train" in kinds:
                label = "training loop"
            elif "forward" in kinds or self.flow.under_no_grad(node):
                label = "evaluation loop"
            else:
                label = "loop over batches"
            self.hot[node] = Loop(node, label)  # type: ignore[arg-type]
        self._find_generator_loops()
        # An epoch loop runs the batch loop; its own forward calls (a sample
        # generated per epoch) run once per epoch, not per step.
        outer: Set[ast.AST] = set()
        for node in self.hot:
            for enclosing in self.tree.inherited("frame_loops", node, _frame_loops_step, ()):
                outer.add(enclosing)
        for node in list(self.hot):
            if type(node) in _FOR and self._iterates_loader(node.iter):  # type: ignore[attr-defined]
                continue
            if "train" in direct.get(node, ()):
                continue  # `optimizer.step()` after a gradient-accumulation loop: each pass is a step
            if node in outer:
                del self.hot[node]

    def _find_generator_loops(self) -> None:
        """``for out in predictions(loader):`` where ``predictions`` is a generator of this file whose loop is
        hot: each pass of the consumer runs one pass of it (a step)."""
        if not self.hot:
            return
        for node in self.tree.of_type(ast.For, ast.AsyncFor):
            if node in self.hot or type(node.iter) is not ast.Call or _first_pass_only(node):  # type: ignore[attr-defined]
                continue
            generator = self.flow.generator_called(node.iter)  # type: ignore[attr-defined]
            if generator is None:
                continue
            inner = [loop for loop in self.hot.values() if self.tree.contains(generator, loop.node)]
            if inner:
                self.hot[node] = Loop(node, inner[0].kind)  # type: ignore[arg-type]

    def _iterates_loader(self, iterable: ast.AST, depth: int = 0) -> bool:
        if depth > 4:
            return False
        if type(iterable) is ast.Call:
            name = dotted_name(iterable.func) or ""  # type: ignore[attr-defined]
            last = name.rsplit(".", 1)[-1]
            if last == "DataLoader":
                return True
            values = positional(iterable)  # type: ignore[arg-type]
            if last in WRAPPERS:
                return any(self._iterates_loader(value, depth + 1) for value in values)
            # `metric_logger.log_every(loader, 20, header)`, `progress(loader)`: a wrapper by any other name.
            return bool(values) and type(values[0]) is not ast.Call and self._iterates_loader(values[0], depth + 1)
        name = dotted_name(iterable)
        if name is None:
            return False
        return bool(LOADER.search(name.rsplit(".", 1)[-1]))

    def _find_per_step_functions(self) -> None:
        calls = [n for n in self.tree.of_type(ast.Call) if self.local_callees(n)]  # type: ignore[arg-type]
        for _ in range(6):
            changed = False
            for call in calls:
                position = self.position(call)
                if position is None:
                    continue
                for callee in self.local_callees(call):  # type: ignore[arg-type]
                    known = self.callers.get(callee)
                    if self.tree.contains(callee, call):
                        continue  # recursion
                    if known is None or (known.guarded and not position.guarded):
                        self.callers[callee] = position
                        changed = True
            if not changed:
                break


# Methods that tensors, modules, optimizers and Python containers have: `x.<name>()` is rarely the one method
# of that name a class of the file defines.
_LIBRARY_METHODS = frozenset("""
    to cuda cpu item numpy tolist detach clone view reshape size sum mean float half double type forward
    backward step zero_grad train eval parameters named_parameters state_dict load_state_dict apply modules
    children register_buffer update append extend insert pop get items keys values add remove clear copy
    format join split strip replace write read close save load log info debug warning error
""".split())


def _first_pass_only(loop: ast.AST) -> bool:
    """The loop's body ends every pass with ``return``, ``break`` or ``raise``: it runs at most once."""
    return _always_exits(loop.body)  # type: ignore[attr-defined]


def _always_exits(block: List[ast.stmt], depth: int = 0) -> bool:
    """Every way through ``block`` leaves the loop: a ``return``/``break``/``raise``, also inside a ``with``
    or in both branches of an ``if`` (``with torch.no_grad(): ...; return out.item()``)."""
    if depth > 6:
        return False
    for statement in block:
        cls = type(statement)
        if cls in (ast.Return, ast.Break, ast.Raise):
            return True
        if cls in (ast.With, ast.AsyncWith) and _always_exits(statement.body, depth + 1):  # type: ignore[attr-defined]
            return True
        if cls is ast.If and statement.orelse and _always_exits(statement.body, depth + 1) \
                and _always_exits(statement.orelse, depth + 1):  # type: ignore[attr-defined]
            return True
    return False


def _may_pass_data(call: ast.Call) -> bool:
    """``x.to(...)``, ``x.cuda()`` or a call of a module-like name: what ``HotLoops._passes_data`` looks at."""
    func = call.func
    if type(func) is ast.Attribute and func.attr in ("to", "cuda"):
        return True
    name = dotted_name(func)
    return name is not None and bool(MODULE_LIKE.search(name.rsplit(".", 1)[-1]))


def _stored_in(loop: ast.AST) -> Set[str]:
    """The names and attribute chains that a loop's target and body assign (not inside nested functions)."""
    stored: Set[str] = set()
    stack: List[ast.AST] = [loop.target] if type(loop) in _FOR else []  # type: ignore[attr-defined]
    stack.extend(loop.body)  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        cls = type(node)
        if cls in _FRAMES:
            continue
        if (cls is ast.Name or cls is ast.Attribute) and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
            name = dotted_name(node)
            if name is not None:
                stored.add(name)
        stack.extend(ast.iter_child_nodes(node))
    return stored


def _in_field(tree: Tree, child: ast.AST, parent: ast.AST, field: str) -> bool:
    owner = tree.block_owner(child)
    return owner is not None and owner[0] is parent and owner[1] == field


def _frame_loops_step(parent: ast.AST, child: ast.AST, above: Tuple[ast.AST, ...]) -> Tuple[ast.AST, ...]:
    """The loops around a node within its function (or lambda, or class body)."""
    cls = type(parent)
    if cls in _FRAMES:
        return ()
    if cls in _FOR or cls is ast.While:
        return (*above, parent)
    return above


def _counter_limited(branch: ast.If) -> bool:
    """``if shown < 5: shown += 1; ...``: the branch runs while a counter it advances stays under a bound."""
    test = branch.test
    if type(test) is not ast.Compare or len(test.ops) != 1 or type(test.ops[0]) not in (ast.Lt, ast.LtE, ast.Gt, ast.GtE):
        return False
    counters = {side.id for side in (test.left, test.comparators[0]) if type(side) is ast.Name}
    return any(
        type(stmt) is ast.AugAssign and type(stmt.target) is ast.Name and stmt.target.id in counters
        and type(stmt.op) in (ast.Add, ast.Sub)
        for stmt in branch.body
    )


def _is_modulo(node: ast.AST) -> bool:
    return type(node) is ast.BinOp and type(node.op) is ast.Mod  # type: ignore[attr-defined]


def _mentions_len(node: ast.AST) -> bool:
    if type(node) is ast.Call:
        return dotted_name(node.func) == "len"  # type: ignore[attr-defined]
    if type(node) is ast.BinOp:
        return _mentions_len(node.left) or _mentions_len(node.right)  # type: ignore[attr-defined]
    name = dotted_name(node) or ""
    last = name.rsplit(".", 1)[-1].lower()
    return any(word in last for word in ("last", "total", "max_", "num_", "final"))


def _is_flag(node: ast.AST) -> bool:
    """A plain condition that is not computed by a call: ``last``, ``args.debug``, ``i == n - 1``."""
    if type(node) in (ast.Name, ast.Attribute):
        return True
    if type(node) is ast.Compare:
        return not any(type(n) is ast.Call for n in (node.left, *node.comparators))  # type: ignore[attr-defined]
    return False
