"""Where a CUDA idiom sits: under a CUDA guard, or inside a cuda→mps→cpu choice.

The CUDA rules (MPS1xx) must stay silent on code that already handles other
devices. Three shapes matter:

- **CUDA guards**: an ``if``/conditional expression/``and`` whose test says
  "we are on CUDA". Two kinds: *device* tests look at a device the program
  chose (``device.type == "cuda"``, ``"cuda" in str(dev)``, ``x.is_cuda``);
  *availability* tests look at the machine or at a user flag
  (``torch.cuda.is_available()``, ``args.cuda``, ``use_gpu``). CUDA tuning
  under either is silent; placement (``.cuda()``) is silent only under a device
  test, because under ``if args.cuda:`` the model never reaches MPS.
- **device choices that know MPS**: an ``if``/``elif`` chain or a chained
  conditional expression that mentions ``mps`` anywhere, or sequential
  ``if``s in one block where a sibling tests for MPS (the early-return
  ``get_device()`` helper).
- **device comparisons** (``device.type == "cuda"``) never place anything,
  so they are never findings: rules only look at placement contexts.

``CudaContext`` answers each question from values every node inherits from
its parent, so asking about every call of a 300,000-line module is linear.
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Dict, FrozenSet, List, Optional, Tuple

from mpslint.analysis.project import facts
from mpslint.analysis.launchers import CudaLaunchers
from mpslint.analysis.syntax import argument_values, bool_sides, dotted_name, first_argument, string_value
from mpslint.analysis.tree import Tree

DEVICE = "device"  # a test on a chosen device
AVAILABILITY = "availability"  # a test on the machine or a user flag

_CUDA_LITERAL = re.compile(r"^cuda(:\d+)?$")
_CUDA_WORD = re.compile(r"(^|_)(cuda|gpu|gpus|cuda_available)($|_)|^(on|use|has|with)_?(cuda|gpu)", re.IGNORECASE)
_CUDA_FUNCTION = re.compile(r"(^|_)(cuda|gpu|gpus|nvidia|nccl)(_|$)", re.IGNORECASE)
_MPS_WORD = re.compile(r"(^|_)mps($|_)", re.IGNORECASE)
_OTHER_ACCELERATOR = re.compile(r"(^|[^a-z])(xpu|hpu|npu|mlu|musa|neuron|xla|tpu|sdaa|hip|rocm)([^a-z]|$)", re.IGNORECASE)
_COMPAT_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "TypeError"})
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ()) + (
                 (ast.Match,) if hasattr(ast, "Match") else ())

# Libraries that only run on NVIDIA GPUs: a module built on one of them is
# CUDA code by design, and its torch.cuda calls are not migration work.
CUDA_ONLY_LIBRARIES = (
    "megatron", "apex", "deep_gemm", "flash_attn", "cutlass", "cupy", "pycuda", "tensorrt",
    "transformer_engine", "nvidia",
)

Kinds = FrozenSet[str]
_NONE: Kinds = frozenset()


def is_cuda_literal(node: Optional[ast.AST]) -> bool:
    value = string_value(node)
    return value is not None and bool(_CUDA_LITERAL.match(value))


def _is_cuda_string_test(node: ast.AST) -> bool:
    value = string_value(node)
    return value == "cuda" or (value or "").startswith("cuda:")


def is_compound(statement: ast.AST) -> bool:
    return isinstance(statement, _COMPOUND)


class CudaContext:
    """Per file: ``ctx.analysis(CudaContext)``."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree: Tree = ctx.tree
        self.cuda_only_module = ctx.imports.imports_any(CUDA_ONLY_LIBRARIES)
        self._kinds: Dict[ast.AST, Optional[str]] = {}
        self._prefix: Dict[Tuple[int, str], List[Kinds]] = {}  # block -> early-exit guards before each statement
        self._mps_ifs: Dict[Tuple[int, str], int] = {}  # block -> how many of its `if`s test for MPS
        self._chains: Dict[ast.AST, bool] = {}
        self._tops: Dict[ast.AST, ast.AST] = {}
        self._mentions: Optional[List[int]] = None

    # ---------------------------------------------------------------- tests

    def test_kind(self, test: ast.AST) -> Optional[str]:
        """DEVICE, AVAILABILITY or None for a condition that holds only on CUDA."""
        if test in self._kinds:
            return self._kinds[test]
        kind = self._kinds[test] = self._test_kind(test)
        return kind

    def _test_kind(self, test: ast.AST) -> Optional[str]:
        cls = type(test)
        if cls is ast.BoolOp:
            if type(test.op) is ast.And:  # type: ignore[attr-defined]
                kinds = [self.test_kind(v) for v in test.values]  # type: ignore[attr-defined]
                if DEVICE in kinds:
                    return DEVICE
                if AVAILABILITY in kinds:
                    return AVAILABILITY
            return None
        if cls is ast.Compare:
            parts = [test.left, *test.comparators]  # type: ignore[attr-defined]
            if all(type(op) in (ast.Eq, ast.Is, ast.In) for op in test.ops):  # type: ignore[attr-defined]
                if any(_is_cuda_string_test(p) for p in parts):
                    return DEVICE
                # `state.distributed_type == DistributedType.MULTI_GPU`, `rng_type == RNGType.CUDA`
                if any(type(p) is ast.Attribute and _CUDA_WORD.search(p.attr) for p in parts):  # type: ignore[attr-defined]
                    return AVAILABILITY
            # `n_gpu > 1`, `args.num_gpus > 0`
            left = test.left  # type: ignore[attr-defined]
            word = left.id if type(left) is ast.Name else left.attr if type(left) is ast.Attribute else None
            if word is not None and _CUDA_WORD.search(word):
                return AVAILABILITY
            # torch.cuda.device_count() > 1, len(torch.cuda.default_generators) > 0
            if self._reads_torch_cuda(test):
                return AVAILABILITY
            return None
        if cls is ast.Call:
            func = test.func  # type: ignore[attr-defined]
            name = self.ctx.qualify(func) or dotted_name(func) or ""
            if name in ("torch.cuda.is_available", "torch.cuda.is_initialized"):
                return AVAILABILITY
            if name.endswith("is_torch_cuda_available") or name.endswith("is_cuda_available"):
                return AVAILABILITY
            # str(device).startswith("cuda")
            if type(func) is ast.Attribute and func.attr == "startswith":
                first = first_argument(test)  # type: ignore[arg-type]
                if first is not None and _is_cuda_string_test(first):
                    return DEVICE
            if name.startswith("torch.cuda."):
                return AVAILABILITY  # torch.cuda.is_bf16_supported(), ...
            if type(func) is ast.Name and self.ctx.project.function(func.id) == facts.CUDA_FLAG:  # type: ignore[attr-defined]
                return AVAILABILITY  # a helper (here or imported) that returns torch.cuda.is_available()
            return None
        if cls is ast.Attribute and test.attr == "is_cuda":  # type: ignore[attr-defined]
            return DEVICE
        if cls is ast.Name or cls is ast.Attribute:
            word = test.id if cls is ast.Name else test.attr  # type: ignore[attr-defined]
            if _CUDA_WORD.search(word):
                return AVAILABILITY
        return None

    def _reads_torch_cuda(self, node: ast.AST) -> bool:
        """Whether an expression reads ``torch.cuda`` state (outside a ``not``)."""
        cls = type(node)
        if cls is ast.Attribute or cls is ast.Name:
            return (self.ctx.qualify(node) or "").startswith("torch.cuda.")
        if cls is ast.Call:
            return self._reads_torch_cuda(node.func) or any(  # type: ignore[attr-defined]
                self._reads_torch_cuda(v) for v in argument_values(node))  # type: ignore[arg-type]
        if cls is ast.Compare:
            return self._reads_torch_cuda(node.left) or any(self._reads_torch_cuda(c) for c in node.comparators)  # type: ignore[attr-defined]
        if cls is ast.Subscript:
            return self._reads_torch_cuda(node.value)  # type: ignore[attr-defined]
        return False

    def negated_kind(self, test: ast.AST) -> Optional[str]:
        """The guard kind that holds when ``test`` is false."""
        if type(test) is ast.UnaryOp and type(test.op) is ast.Not:  # type: ignore[attr-defined]
            return self.test_kind(test.operand)  # type: ignore[attr-defined]
        if type(test) is ast.Compare and len(test.ops) == 1:  # type: ignore[attr-defined]
            if type(test.ops[0]) in (ast.NotEq, ast.IsNot):  # type: ignore[attr-defined]
                if _is_cuda_string_test(test.left) or _is_cuda_string_test(test.comparators[0]):  # type: ignore[attr-defined]
                    return DEVICE
        return None

    # --------------------------------------------------------------- guards

    def guards(self, node: ast.AST) -> Kinds:
        """The kinds of CUDA guards that hold wherever ``node`` runs."""
        return self.tree.inherited(("guards", id(self)), node, self._guard_step, _NONE)

    def unguarded(self, node: ast.AST) -> bool:
        """Not under any CUDA guard, not in a device choice that knows MPS, not in a module built on a CUDA-only library."""
        return not self.cuda_only_module and not self.guards(node) and not self.in_mps_aware_choice(node)

    def _guard_step(self, parent: ast.AST, child: ast.AST, above: Kinds) -> Kinds:
        found = self._edge_guards(parent, child)
        return above | found if found else above

    def _edge_guards(self, parent: ast.AST, child: ast.AST) -> Kinds:
        cls = type(parent)
        tree = self.tree
        if cls is ast.If or cls is ast.IfExp:
            if cls is ast.If:
                owner = tree.block_owner(child)
                field = owner[1] if owner is not None and owner[0] is parent else None
            else:
                field = "body" if child is parent.body else None  # type: ignore[attr-defined]
            if field == "body":
                kind = self.test_kind(parent.test)  # type: ignore[attr-defined]
                return frozenset((kind,)) if kind else _NONE
            if field == "orelse":
                test = parent.test  # type: ignore[attr-defined]
                if type(test) is ast.UnaryOp and type(test.op) is ast.Not:
                    kind = self.test_kind(test.operand)
                    return frozenset((kind,)) if kind else _NONE
            return _NONE
        if cls is ast.BoolOp:
            values = parent.values  # type: ignore[attr-defined]
            position = next((i for i, v in enumerate(values) if v is child), 0)
            if position == 0:
                return _NONE
            if type(parent.op) is ast.And:  # type: ignore[attr-defined]
                kinds = [self.test_kind(v) for v in values[:position]]
                kind = DEVICE if DEVICE in kinds else AVAILABILITY if AVAILABILITY in kinds else None
            else:  # `dev.type != "cuda" or <only evaluated on CUDA>`
                kind = self.negated_kind(values[0]) if position == 1 else None
            return frozenset((kind,)) if kind else _NONE
        found: Kinds = _NONE
        place = tree.block_owner(child)
        if place is not None and place[0] is parent and place[1] != "handlers" and isinstance(child, ast.stmt):
            # `if not torch.cuda.is_available(): return` guards the rest of the block.
            found = self._early_exits_before(parent, place[1], child)
        if cls is ast.FunctionDef or cls is ast.AsyncFunctionDef:
            kinds = set(self._decorator_guards(parent))
            if _CUDA_FUNCTION.search(parent.name):  # type: ignore[attr-defined]
                kinds.add(AVAILABILITY)
            return found | frozenset(kinds)
        if cls is ast.ExceptHandler and place is not None and place[0] is parent and _compat_handler(parent):
            # `try: torch.amp.GradScaler(device) / except AttributeError: torch.cuda.amp.GradScaler()`
            return found | frozenset((AVAILABILITY,))
        if cls is ast.Call and child is not parent.func:  # type: ignore[attr-defined]
            # unittest.skipUnless(torch.cuda.device_count() > 1, "needs 2 GPUs")
            last = (dotted_name(parent.func) or "").rsplit(".", 1)[-1]  # type: ignore[attr-defined]
            if last in ("skipUnless", "skipIf", "skipif"):
                return found | frozenset((AVAILABILITY,))
        return found

    def _early_exits_before(self, owner: ast.AST, field: str, statement: ast.AST) -> Kinds:
        key = (id(owner), field)
        prefix = self._prefix.get(key)
        if prefix is None:
            prefix = []
            running: Kinds = _NONE
            for stmt in getattr(owner, field):
                prefix.append(running)
                kind = self._early_exit_guard(stmt)
                if kind:
                    running = running | frozenset((kind,))
            self._prefix[key] = prefix
        place = self.tree.block_of(statement)
        return prefix[place[1]] if place is not None else _NONE

    def _early_exit_guard(self, stmt: ast.AST) -> Optional[str]:
        if type(stmt) is not ast.If or stmt.orelse:  # type: ignore[attr-defined]
            return None
        last = stmt.body[-1] if stmt.body else None  # type: ignore[attr-defined]
        if type(last) not in (ast.Return, ast.Raise, ast.Continue, ast.Break):
            return None
        if type(last) is ast.Raise and self.ctx.analysis(CudaLaunchers).migratable(stmt):
            return None  # CUDA or exit, and nothing else needs CUDA: MPS103 lets MPS in, so what follows runs on a Mac
        test = stmt.test  # type: ignore[attr-defined]
        if type(test) is ast.BoolOp and type(test.op) is ast.Or:
            # `if not torch.cuda.is_available() or other: return`, `if device.type != "cuda" or ...: return`
            left, right = bool_sides(test)
            return self.negated_kind(left) or self.negated_kind(right)
        return self.negated_kind(test)

    def _decorator_guards(self, function) -> List[str]:
        """``@unittest.skipUnless(torch.cuda.is_available(), ...)``, ``@require_torch_gpu``."""
        found = []
        for expr in function.decorator_list:
            name = dotted_name(expr.func if type(expr) is ast.Call else expr) or ""
            last = name.rsplit(".", 1)[-1]
            if re.search(r"require.*(cuda|gpu|accelerator)", last, re.IGNORECASE):
                found.append(AVAILABILITY)
            elif type(expr) is ast.Call and last in ("skipUnless", "skipif", "skipIf"):
                test = first_argument(expr)
                if test is None:
                    continue
                if last == "skipUnless":
                    kind = self.test_kind(test)
                else:
                    inner = test.operand if type(test) is ast.UnaryOp and type(test.op) is ast.Not else test
                    kind = self.test_kind(inner)
                if kind:
                    found.append(kind)
        return found

    # ------------------------------------------------------ MPS-aware choices

    def in_mps_aware_choice(self, node: ast.AST, *, siblings: bool = True) -> bool:
        """Inside a device choice that already considers MPS.

        ``siblings`` also accepts sequential ``if``s of one block where another
        statement tests for MPS (``if cuda: return "cuda"`` / ``if mps: return "mps"``).
        """
        key = ("mps-choice", siblings, id(self))
        step = self._choice_step_siblings if siblings else self._choice_step
        if self.tree.parent(node) is None:
            return False  # the module (or a node outside the tree)
        return self.tree.inherited(key, node, step, False)

    def _choice_step(self, parent: ast.AST, child: ast.AST, above: bool) -> bool:
        return self._choice(child, above, siblings=False)

    def _choice_step_siblings(self, parent: ast.AST, child: ast.AST, above: bool) -> bool:
        return self._choice(child, above, siblings=True)

    def _choice(self, node: ast.AST, above: bool, *, siblings: bool) -> bool:
        """The value for ``node`` given its parent's: the search stops at a function or class."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        return above or self._own_choice(node, siblings)

    def _own_choice(self, node: ast.AST, siblings: bool) -> bool:
        cls = type(node)
        if cls is ast.If:
            top = self.chain_top(node)
            if self.chain_mentions_mps(top):
                return True
            return siblings and self.test_kind(top.test) is not None and self._sibling_tests_mps(top)  # type: ignore[attr-defined]
        if cls is ast.IfExp:
            top = node
            parent = self.tree.parent(top)
            while type(parent) is ast.IfExp:
                top = parent
                parent = self.tree.parent(top)
            return self.mentions_mps(top)
        if siblings and isinstance(node, ast.stmt) and not is_compound(node):
            return self._sibling_tests_mps(node)
        return False

    def _sibling_tests_mps(self, statement: ast.AST) -> bool:
        place = self.tree.block_owner(statement)
        if place is None:
            return False
        key = (id(place[0]), place[1])
        count = self._mps_ifs.get(key)
        if count is None:
            count = sum(1 for s in getattr(place[0], place[1]) if type(s) is ast.If and self.mentions_mps(s.test))
            self._mps_ifs[key] = count
        if type(statement) is ast.If and self.mentions_mps(statement.test):  # type: ignore[attr-defined]
            count -= 1
        return count > 0

    def chain_top(self, node: ast.If) -> ast.If:
        """The first ``if`` of an ``if``/``elif`` chain."""
        top = self._tops.get(node)
        if top is not None:
            return top  # type: ignore[return-value]
        chain = [node]
        current = node
        while True:
            parent = self.tree.parent(current)
            if type(parent) is ast.If and self.is_elif(current):
                if parent in self._tops:
                    current = self._tops[parent]  # type: ignore[assignment]
                    break
                chain.append(parent)  # type: ignore[arg-type]
                current = parent  # type: ignore[assignment]
            else:
                break
        for member in chain:
            self._tops[member] = current
        return current

    def is_elif(self, node: ast.If) -> bool:
        """An ``elif`` (not an ``if`` nested in an ``else:``)."""
        parent = self.tree.parent(node)
        if type(parent) is not ast.If or len(parent.orelse) != 1 or parent.orelse[0] is not node:  # type: ignore[attr-defined]
            return False
        return self.tree.text_at(node, 4) == "elif"

    def chain_mentions_mps(self, top: ast.If) -> bool:
        """The tests of an ``if``/``elif`` chain and the simple statements directly in its branches.

        Nested blocks are not searched: a training loop under ``if cuda:`` that
        happens to mention MPS somewhere deep inside is not a device choice. A
        chain that tests other accelerators (``elif is_torch_xpu_available():``)
        is a deliberate per-device dispatch, and its CUDA branch is one of many.
        """
        found = self._chains.get(top)
        if found is None:
            found = self._chains[top] = self._chain_mentions_mps(top)
        return found

    def _chain_mentions_mps(self, top: ast.If) -> bool:
        branch: Optional[ast.If] = top
        while branch is not None:
            if self.mentions_mps(branch.test) or _OTHER_ACCELERATOR.search(self.tree.text(branch.test)):
                return True
            suites = [branch.body]
            orelse = branch.orelse
            if len(orelse) == 1 and type(orelse[0]) is ast.If and self.is_elif(orelse[0]):  # type: ignore[arg-type]
                branch = orelse[0]  # type: ignore[assignment]
            else:
                if orelse:
                    suites.append(orelse)
                branch = None
            for suite in suites:
                for stmt in suite:
                    if not is_compound(stmt) and self.mentions_mps(stmt):
                        return True
        return False

    def mentions_mps(self, node: ast.AST) -> bool:
        """Whether an expression or statement refers to MPS at all (a ``"mps"`` string or an ``mps`` name)."""
        mentions = self._mentions
        if mentions is None:
            mentions = self._mentions = self._find_mentions()
        if not mentions:
            return False
        tree = self.tree
        first = tree.index(node)
        position = bisect.bisect_left(mentions, first)
        return position < len(mentions) and mentions[position] <= tree.end(node)

    def _find_mentions(self) -> List[int]:
        if not re.search("mps", self.tree.source, re.IGNORECASE):
            return []  # the common case, without looking at a node
        tree = self.tree
        found = []
        for node in tree.nodes:
            cls = type(node)
            if cls is ast.Constant:
                value = node.value  # type: ignore[attr-defined]
                hit = isinstance(value, str) and (value == "mps" or value.startswith("mps:"))
                hit = hit and type(tree.parent(node)) is not ast.JoinedStr  # a part of an f-string is not a literal
            elif cls is ast.Name:
                hit = bool(_MPS_WORD.search(node.id))  # type: ignore[attr-defined]
            elif cls is ast.Attribute:
                hit = bool(_MPS_WORD.search(node.attr))  # type: ignore[attr-defined]
            elif cls is ast.keyword:
                hit = node.arg is not None and bool(_MPS_WORD.search(node.arg))  # type: ignore[attr-defined]
            elif cls is ast.alias:
                hit = any(_MPS_WORD.search(part) for part in (node.name or "").split(".") + [node.asname or ""])  # type: ignore[attr-defined]
            elif cls is ast.arg:
                hit = bool(_MPS_WORD.search(node.arg))  # type: ignore[attr-defined]
            elif cls is ast.Global or cls is ast.Nonlocal:
                hit = any(_MPS_WORD.search(name) for name in node.names)  # type: ignore[attr-defined]
            else:
                continue
            if hit:
                found.append(tree.index(node))
        return found

    # ------------------------------------------------------ enclosing functions

    def in_cuda_named_function(self, node: ast.AST) -> bool:
        """Inside a function whose name says it is about CUDA (``get_gpu_count``, ``_as_cuda_device``)."""
        return self.tree.inherited("cuda-named", node, _cuda_named_step, False)

    def in_cuda_method(self, node: ast.AST) -> bool:
        """Inside ``def cuda(self, ...)``: implementing ``.cuda()`` is not using it."""
        function = self.tree.inherited("function", node, _function_step, None)
        return function is not None and function.name == "cuda"


def _cuda_named_step(parent: ast.AST, child: ast.AST, above: bool) -> bool:
    if above:
        return True
    return type(parent) in (ast.FunctionDef, ast.AsyncFunctionDef) and bool(_CUDA_FUNCTION.search(parent.name))  # type: ignore[attr-defined]


def _function_step(parent: ast.AST, child: ast.AST, above):
    return parent if type(parent) in (ast.FunctionDef, ast.AsyncFunctionDef) else above


def _compat_handler(handler: ast.ExceptHandler) -> bool:
    """An ``except`` that catches a missing or changed API: a fallback for older torch."""
    if handler.type is None:
        return False
    kinds = handler.type.elts if type(handler.type) is ast.Tuple else [handler.type]  # type: ignore[attr-defined]
    names = [dotted_name(k) for k in kinds]
    return bool(names) and all(n in _COMPAT_ERRORS for n in names)
