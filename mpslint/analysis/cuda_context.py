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
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

import libcst as cst

from mpslint.analysis.names import dotted_name

DEVICE = "device"  # a test on a chosen device
AVAILABILITY = "availability"  # a test on the machine or a user flag

_CUDA_LITERAL = re.compile(r"^cuda(:\d+)?$")
_CUDA_WORD = re.compile(r"(^|_)(cuda|gpu|gpus|cuda_available)($|_)|^(on|use|has|with)_?(cuda|gpu)", re.IGNORECASE)


def string_value(node: cst.CSTNode) -> Optional[str]:
    """The value of a plain string literal (no f-strings, no concatenation)."""
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    return None


def is_cuda_literal(node: cst.CSTNode) -> bool:
    value = string_value(node)
    return value is not None and bool(_CUDA_LITERAL.match(value))


_MPS_TEXT = re.compile(r"mps", re.IGNORECASE)


def mentions_mps(node: cst.CSTNode) -> bool:
    """Whether an expression or statement refers to MPS at all."""
    if not _MPS_TEXT.search(cst.Module(body=()).code_for_node(node)):
        return False  # the common case, without a (costly) tree walk
    finder = _MpsFinder()
    node.visit(finder)
    return finder.found


class _MpsFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found:
            return False
        if isinstance(node, cst.SimpleString):
            value = string_value(node)
            if value is not None and (value == "mps" or value.startswith("mps:")):
                self.found = True
        elif isinstance(node, cst.Name):
            if re.search(r"(^|_)mps($|_)", node.value, re.IGNORECASE):
                self.found = True
        elif isinstance(node, cst.Attribute):
            if re.search(r"(^|_)mps($|_)", node.attr.value, re.IGNORECASE):
                self.found = True
        return not self.found


def _qualified(ctx, node: cst.CSTNode) -> Optional[str]:
    return ctx.qualify(node) if ctx is not None else dotted_name(node)


def _is_cuda_string_test(node: cst.CSTNode) -> bool:
    return string_value(node) in ("cuda",) or (string_value(node) or "").startswith("cuda:")


def test_kind(ctx, test: cst.BaseExpression) -> Optional[str]:
    """DEVICE, AVAILABILITY or None for a condition that holds only on CUDA."""
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And):
            kinds = [test_kind(ctx, test.left), test_kind(ctx, test.right)]
            if DEVICE in kinds:
                return DEVICE
            if AVAILABILITY in kinds:
                return AVAILABILITY
        return None
    if isinstance(test, cst.Comparison):
        parts = [test.left] + [c.comparator for c in test.comparisons]
        operators = [c.operator for c in test.comparisons]
        if all(isinstance(op, (cst.Equal, cst.Is, cst.In)) for op in operators):
            if any(_is_cuda_string_test(p) for p in parts):
                return DEVICE
            # `state.distributed_type == DistributedType.MULTI_GPU`, `rng_type == RNGType.CUDA`
            if any(isinstance(p, cst.Attribute) and _CUDA_WORD.search(p.attr.value) for p in parts):
                return AVAILABILITY
        # `n_gpu > 1`, `args.num_gpus > 0`
        if isinstance(test.left, (cst.Name, cst.Attribute)):
            word = test.left.value if isinstance(test.left, cst.Name) else test.left.attr.value
            if _CUDA_WORD.search(word):
                return AVAILABILITY
        # torch.cuda.device_count() > 1, len(torch.cuda.default_generators) > 0
        if _reads_torch_cuda(ctx, test):
            return AVAILABILITY
        return None
    if isinstance(test, cst.Call):
        name = _qualified(ctx, test.func) or dotted_name(test.func) or ""
        if name in ("torch.cuda.is_available", "torch.cuda.is_initialized"):
            return AVAILABILITY
        if name.endswith("is_torch_cuda_available") or name.endswith("is_cuda_available"):
            return AVAILABILITY
        # str(device).startswith("cuda")
        if isinstance(test.func, cst.Attribute) and test.func.attr.value == "startswith":
            if test.args and _is_cuda_string_test(test.args[0].value):
                return DEVICE
        if name.startswith("torch.cuda."):
            return AVAILABILITY  # torch.cuda.is_bf16_supported(), ...
        return None
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return DEVICE
    if isinstance(test, (cst.Name, cst.Attribute)):
        word = test.value if isinstance(test, cst.Name) else test.attr.value
        if _CUDA_WORD.search(word):
            return AVAILABILITY
    return None


def _reads_torch_cuda(ctx, node: cst.CSTNode) -> bool:
    """Whether an expression reads ``torch.cuda`` state (outside a ``not``)."""
    if isinstance(node, (cst.Attribute, cst.Name)):
        return (_qualified(ctx, node) or "").startswith("torch.cuda.")
    if isinstance(node, cst.UnaryOperation):
        return False
    if isinstance(node, cst.Call):
        return _reads_torch_cuda(ctx, node.func) or any(_reads_torch_cuda(ctx, a.value) for a in node.args)
    if isinstance(node, cst.Comparison):
        return _reads_torch_cuda(ctx, node.left) or any(_reads_torch_cuda(ctx, c.comparator) for c in node.comparisons)
    if isinstance(node, cst.Subscript):
        return _reads_torch_cuda(ctx, node.value)
    return False


_CUDA_FUNCTION = re.compile(r"(^|_)(cuda|gpu|gpus|nvidia|nccl)(_|$)", re.IGNORECASE)


def in_cuda_named_function(ctx, node: cst.CSTNode) -> bool:
    """Inside a function whose name says it is about CUDA (``get_gpu_count``, ``_as_cuda_device``)."""
    for parent in ctx.ancestors(node):
        if isinstance(parent, cst.FunctionDef) and _CUDA_FUNCTION.search(parent.name.value):
            return True
    return False


def _negated(test: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    return None


def guards(ctx, node: cst.CSTNode) -> Iterable[str]:
    """The kinds of CUDA guards that hold wherever ``node`` runs."""
    child = node
    for parent in ctx.ancestors(node):
        if isinstance(parent, cst.If):
            if child is parent.body:
                kind = test_kind(ctx, parent.test)
                if kind:
                    yield kind
            elif child is parent.orelse:
                inner = _negated(parent.test)
                if inner is not None:
                    kind = test_kind(ctx, inner)
                    if kind:
                        yield kind
        elif isinstance(parent, cst.IfExp):
            if child is parent.body:
                kind = test_kind(ctx, parent.test)
                if kind:
                    yield kind
        elif isinstance(parent, cst.BooleanOperation) and child is parent.right:
            if isinstance(parent.operator, cst.And):
                kind = test_kind(ctx, parent.left)
            else:  # `dev.type != "cuda" or <only evaluated on CUDA>`
                kind = _negated_kind(ctx, parent.left)
            if kind:
                yield kind
        elif isinstance(parent, (cst.IndentedBlock, cst.Module)) and child in parent.body:
            # `if not torch.cuda.is_available(): return` guards the rest of the block.
            for stmt in parent.body:
                if stmt is child:
                    break
                kind = _early_exit_guard(ctx, stmt)
                if kind:
                    yield kind
        elif isinstance(parent, cst.FunctionDef):
            yield from _decorator_guards(ctx, parent)
            if _CUDA_FUNCTION.search(parent.name.value):
                yield AVAILABILITY
        elif isinstance(parent, cst.ExceptHandler) and child is parent.body and _compat_handler(parent):
            # `try: torch.amp.GradScaler(device) / except AttributeError: torch.cuda.amp.GradScaler()`
            yield AVAILABILITY
        elif isinstance(parent, cst.Call) and child is not parent.func:
            # unittest.skipUnless(torch.cuda.device_count() > 1, "needs 2 GPUs")
            last = (dotted_name(parent.func) or "").rsplit(".", 1)[-1]
            if last in ("skipUnless", "skipIf", "skipif"):
                yield AVAILABILITY
        child = parent


_COMPAT_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "TypeError"})


def _compat_handler(handler: cst.ExceptHandler) -> bool:
    """An ``except`` that catches a missing or changed API: a fallback for older torch."""
    if handler.type is None:
        return False
    kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    names = [dotted_name(k.value if isinstance(k, cst.Element) else k) for k in kinds]
    return bool(names) and all(n in _COMPAT_ERRORS for n in names)


def _negated_kind(ctx, test: cst.BaseExpression) -> Optional[str]:
    """The guard kind that holds when ``test`` is false."""
    inner = _negated(test)
    if inner is not None:
        return test_kind(ctx, inner)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        if isinstance(comparison.operator, (cst.NotEqual, cst.IsNot)):
            if _is_cuda_string_test(test.left) or _is_cuda_string_test(comparison.comparator):
                return DEVICE
    return None


def _early_exit_guard(ctx, stmt: cst.CSTNode) -> Optional[str]:
    if not isinstance(stmt, cst.If) or stmt.orelse is not None:
        return None
    body = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else [stmt.body]
    last = body[-1] if body else None
    small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and last.body else last
    if not isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
        return None
    test = stmt.test
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        # `if not torch.cuda.is_available() or other: return`, `if device.type != "cuda" or ...: return`
        return _negated_kind(ctx, test.left) or _negated_kind(ctx, test.right)
    return _negated_kind(ctx, test)


def _decorator_guards(ctx, func: cst.FunctionDef) -> Iterable[str]:
    """``@unittest.skipUnless(torch.cuda.is_available(), ...)``, ``@require_torch_gpu``."""
    for decorator in func.decorators:
        expr = decorator.decorator
        name = dotted_name(expr.func if isinstance(expr, cst.Call) else expr) or ""
        last = name.rsplit(".", 1)[-1]
        if re.search(r"require.*(cuda|gpu|accelerator)", last, re.IGNORECASE):
            yield AVAILABILITY
        elif isinstance(expr, cst.Call) and last in ("skipUnless", "skipif", "skipIf") and expr.args:
            test = expr.args[0].value
            kind = test_kind(ctx, test) if last == "skipUnless" else test_kind(ctx, _negated(test) or test)
            if kind:
                yield kind


def in_cuda_method(ctx, node: cst.CSTNode) -> bool:
    """Inside ``def cuda(self, ...)``: implementing ``.cuda()`` is not using it."""
    for parent in ctx.ancestors(node):
        if isinstance(parent, cst.FunctionDef):
            return parent.name.value == "cuda"
    return False


def chain_top(ctx, node: cst.If) -> cst.If:
    """The first ``if`` of an ``if``/``elif`` chain."""
    top = node
    while True:
        parent = ctx.parent(top)
        if isinstance(parent, cst.If) and parent.orelse is top:
            top = parent
        else:
            return top


class _ChainCache:
    """Per file: whether an ``if`` chain mentions MPS (chains are asked about repeatedly)."""

    def __init__(self, ctx) -> None:
        self.chains = {}

    def chain_mentions_mps(self, top: cst.If) -> bool:
        found = self.chains.get(top)
        if found is None:
            found = self.chains[top] = _chain_mentions_mps(top)
        return found


def _chain_mentions_mps(top: cst.If) -> bool:
    """The tests of an ``if``/``elif`` chain and the simple statements directly in its branches.

    Nested blocks are not searched: a training loop under ``if cuda:`` that
    happens to mention MPS somewhere deep inside is not a device choice. A
    chain that tests other accelerators (``elif is_torch_xpu_available():``)
    is a deliberate per-device dispatch, and its CUDA branch is one of many.
    """
    branch: Optional[cst.CSTNode] = top
    while branch is not None:
        if isinstance(branch, cst.If):
            if mentions_mps(branch.test) or _OTHER_ACCELERATOR.search(_code(branch.test)):
                return True
            suites, branch = [branch.body], branch.orelse
        else:  # Else
            suites, branch = [branch.body], None
        for suite in suites:
            statements = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
            for stmt in statements:
                if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and mentions_mps(stmt):
                    return True
    return False


_OTHER_ACCELERATOR = re.compile(r"(^|[^a-z])(xpu|hpu|npu|mlu|musa|neuron|xla|tpu|sdaa|hip|rocm)([^a-z]|$)", re.IGNORECASE)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=()).code_for_node(node)


def in_mps_aware_choice(ctx, node: cst.CSTNode, *, siblings: bool = True) -> bool:
    """Inside a device choice that already considers MPS.

    ``siblings`` also accepts sequential ``if``s of one block where another
    statement tests for MPS (``if cuda: return "cuda"`` / ``if mps: return "mps"``).
    """
    for parent in (node, *ctx.ancestors(node)):
        if isinstance(parent, cst.If):
            top = chain_top(ctx, parent)
            if ctx.analysis(_ChainCache).chain_mentions_mps(top):
                return True
            if siblings and test_kind(ctx, top.test) and _sibling_tests_mps(ctx, top):
                return True
        elif isinstance(parent, cst.IfExp):
            top = parent
            while isinstance(ctx.parent(top), cst.IfExp):
                top = ctx.parent(top)
            if mentions_mps(top):
                return True
        elif isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            return False
        elif siblings and isinstance(parent, (cst.SimpleStatementLine,)):
            if _sibling_tests_mps(ctx, parent):
                return True
    return False


def _sibling_tests_mps(ctx, stmt: cst.CSTNode) -> bool:
    block = ctx.parent(stmt)
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return False
    for other in block.body:
        if other is stmt or not isinstance(other, cst.If):
            continue
        if mentions_mps(other.test):
            return True
    return False


# Libraries that only run on NVIDIA GPUs: a module built on one of them is
# CUDA code by design, and its torch.cuda calls are not migration work.
CUDA_ONLY_LIBRARIES = (
    "megatron", "apex", "deep_gemm", "flash_attn", "cutlass", "cupy", "pycuda", "tensorrt",
    "transformer_engine", "nvidia",
)


def cuda_only_module(ctx) -> bool:
    """``ctx.analysis(cuda_only_module)``: the file imports a CUDA-only library."""
    return ctx.imports.imports_any(CUDA_ONLY_LIBRARIES)
