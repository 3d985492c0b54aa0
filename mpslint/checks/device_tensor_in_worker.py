"""A Dataset or collate function that puts tensors on the accelerator, run in DataLoader workers (see ``rules/MPS404.md``).

Worker code is a Dataset's ``__getitem__``/``__getitems__``/``__iter__``/
``__next__`` and a DataLoader's ``collate_fn``, with the functions of this
file they call (``self.load(i)``, ``to_tensor(x)``). It runs in the worker
processes when the DataLoader that gets it may have ``num_workers > 0``: a
``num_workers`` that is not the literal 0 (nor chosen per platform).
"Gets it" is followed through names, ``self.x`` attributes assigned in this
file, wrappers (``Subset(ds, idx)``, ``random_split(ds, ...)``,
``ConcatDataset([a, b])``) and ``functools.partial``.

Code given to no DataLoader of this file counts when it is exported: a
public top-level Dataset subclass or collate function of a module that is
neither a script (no ``__main__`` guard) nor a test, which any caller may use
with workers. Code given only to DataLoaders without workers is not
reported: the file shows how it is used.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from mpslint.analysis.device_flow import DEVICE_EVIDENCE, FACTORIES, DeviceFlow, Kind
from mpslint.analysis.syntax import dotted_name, integer_value, is_main_guard, keyword, positional_at
from mpslint.checks.base import Rule, short
from mpslint.checks.workers import DATALOADERS, PLATFORM_WORDS, mentions

WORKER_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__")
DATASET_BASES = frozenset({
    "torch.utils.data.Dataset", "torch.utils.data.IterableDataset", "torch.utils.data.dataset.Dataset",
    "torch.utils.data.dataset.IterableDataset", "torch.utils.data.TensorDataset",
})
PARTIAL = frozenset({"functools.partial"})
TEST_FILE = re.compile(r"(^|[\\/])(test_[^\\/]*|[^\\/]*_test|conftest)\.py$")
MAX_DEPTH = 6

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class WorkerCode:
    """A Dataset class or a collate function, and how this file uses it."""

    node: ast.AST  # the ClassDef, FunctionDef or Lambda
    label: str  # how messages name it: `Pairs.__getitem__`, `collate`
    bodies: List[ast.AST] = field(default_factory=list)  # the functions that run in the workers
    with_workers: Optional[ast.Call] = None  # a DataLoader of this file that may start workers
    loaded: bool = False  # given to some DataLoader of this file


class Workers:
    """Per file: the worker code of each Dataset and collate function, and the functions run in workers."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        tree = ctx.tree
        self.tree = tree
        self.flow: DeviceFlow = ctx.analysis(DeviceFlow)
        self.classes: Dict[str, List[ast.ClassDef]] = {}
        self.functions: Dict[str, List[ast.AST]] = {}
        self.methods: Dict[str, List[ast.AST]] = {}
        for node in tree.of_type(ast.ClassDef):
            self.classes.setdefault(node.name, []).append(node)  # type: ignore[attr-defined]
        for node in tree.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            owner = self.methods if type(tree.parent(node)) is ast.ClassDef else self.functions
            owner.setdefault(node.name, []).append(node)  # type: ignore[attr-defined]
        self._attributes: Optional[Dict[str, List[ast.AST]]] = None
        self._call_indices: Optional[List[int]] = None
        self._methods_of: Dict[ast.AST, List[ast.AST]] = {}
        self._resolved: Dict[Tuple[str, ast.AST], List[ast.AST]] = {}  # memo of _classes_of / _functions_of
        self.code: Dict[ast.AST, WorkerCode] = {}
        for call in tree.of_type(ast.Call):
            if ctx.qualify(call.func) in DATALOADERS:  # type: ignore[attr-defined]
                self._loader(call)  # type: ignore[arg-type]
        for cls in tree.of_type(ast.ClassDef):
            if cls not in self.code and self._subclasses_dataset(cls):  # type: ignore[arg-type]
                self._dataset(cls)  # type: ignore[arg-type]
        for function in tree.module.body:  # a library's collate functions, by name
            if type(function) in _FUNCTIONS and "collate" in function.name and function not in self.code:  # type: ignore[attr-defined]
                self._collate(function)
        self.exported = self._exported_names()
        # function -> the worker code it runs for (the first found), helpers included
        self.runs_in: Dict[ast.AST, Tuple[WorkerCode, ast.AST]] = {}
        for code in self.code.values():
            if code.with_workers is None and (code.loaded or not self._is_exported(code.node)):
                continue
            for body in code.bodies:
                self._reach(body, code, body)

    # ---------------------------------------------------------------- queries

    def worker_of(self, node: ast.AST) -> Optional[Tuple[WorkerCode, ast.AST]]:
        """The worker code whose workers run ``node``, and the worker function that reaches it."""
        function = self.tree.scope_of(node)
        return self.runs_in.get(function)

    # ------------------------------------------------------------- DataLoaders

    def _loader(self, call: ast.Call) -> None:
        workers = keyword(call, "num_workers") or positional_at(call, 5)
        may_have_workers = workers is not None and integer_value(workers) != 0 and not mentions(
            self.ctx, workers, PLATFORM_WORDS)
        dataset = keyword(call, "dataset") or positional_at(call, 0)
        collate = keyword(call, "collate_fn") or positional_at(call, 6)
        found: List[WorkerCode] = []
        if dataset is not None:
            found += [self._dataset(cls) for cls in self._classes_of(dataset, 0)]
        if collate is not None:
            found += [self._collate(function) for function in self._functions_of(collate, 0)]
        for code in found:
            code.loaded = True
            if may_have_workers and code.with_workers is None:
                code.with_workers = call

    def _dataset(self, cls: ast.ClassDef) -> WorkerCode:
        code = self.code.get(cls)
        if code is None:
            code = self.code[cls] = WorkerCode(cls, cls.name, self._worker_methods(cls))
        return code

    def _collate(self, function: ast.AST) -> WorkerCode:
        code = self.code.get(function)
        if code is None:
            if type(function) is ast.ClassDef:  # a collator object: its __call__ runs
                bodies = [s for s in function.body if type(s) in _FUNCTIONS and s.name == "__call__"]  # type: ignore[attr-defined]
                label = function.name  # type: ignore[attr-defined]
            else:
                bodies = [function]
                label = getattr(function, "name", "the collate_fn lambda")
            code = self.code[function] = WorkerCode(function, label, bodies)
        return code

    def _classes_of(self, expr: ast.AST, depth: int) -> List[ast.ClassDef]:
        """The Dataset classes of this file whose instances ``expr`` may be (or wrap)."""
        return self._memo("classes", expr, depth, self._find_classes)  # type: ignore[return-value]

    def _functions_of(self, expr: ast.AST, depth: int) -> List[ast.AST]:
        """The functions of this file (or lambdas, or collator classes) that ``expr`` may be."""
        return self._memo("functions", expr, depth, self._find_functions)

    def _memo(self, what: str, expr: ast.AST, depth: int, find) -> List[ast.AST]:
        """Each expression resolved once (a cycle of names resolves to nothing)."""
        key = (what, expr)
        known = self._resolved.get(key)
        if known is not None:
            return known
        if depth > MAX_DEPTH:
            return []
        self._resolved[key] = []
        found = list(dict.fromkeys(find(expr, depth)))
        self._resolved[key] = found
        return found

    def _find_classes(self, expr: ast.AST, depth: int) -> List[ast.ClassDef]:
        cls = type(expr)
        if cls is ast.Call:
            name = dotted_name(expr.func) or ""  # type: ignore[attr-defined]
            local = [c for c in self.classes.get(name.rsplit(".", 1)[-1], []) if self._has_worker_methods(c)]
            if local:
                return local
            # a wrapper: Subset(ds, idx), ConcatDataset([a, b]), random_split(ds, [n, m])
            return [c for value in _argument_values(expr) for c in self._classes_of(value, depth + 1)]  # type: ignore[arg-type]
        if cls in (ast.List, ast.Tuple, ast.Set):
            return [c for element in expr.elts for c in self._classes_of(element, depth + 1)]  # type: ignore[attr-defined]
        if cls is ast.Subscript or cls is ast.Starred:
            return self._classes_of(expr.value, depth + 1)  # type: ignore[attr-defined]
        return [c for value in self._values_of(expr) for c in self._classes_of(value, depth + 1)]

    def _find_functions(self, expr: ast.AST, depth: int) -> List[ast.AST]:
        cls = type(expr)
        if cls is ast.Lambda:
            return [expr]
        if cls is ast.Call:
            if self.ctx.qualify(expr.func) in PARTIAL and expr.args:  # type: ignore[attr-defined]
                return self._functions_of(expr.args[0], depth + 1)  # type: ignore[attr-defined]
            name = (dotted_name(expr.func) or "").rsplit(".", 1)[-1]  # type: ignore[attr-defined]
            return [c for c in self.classes.get(name, []) if any(
                type(s) in _FUNCTIONS and s.name == "__call__" for s in c.body)]  # type: ignore[attr-defined]
        if cls is ast.Name:
            bound = self.flow.visible(expr.id, expr)  # type: ignore[attr-defined]
            if all(b.how == "other" for b in bound):
                return list(self.functions.get(expr.id, []))  # type: ignore[attr-defined]
        if cls is ast.Attribute:
            owner = expr.value  # type: ignore[attr-defined]
            if type(owner) is ast.Name and owner.id in ("self", "cls"):
                methods = self.methods.get(expr.attr, [])  # type: ignore[attr-defined]
                if methods:
                    return list(methods)
            else:  # dataset.collate_fn: a method of the Dataset class
                found = [m for c in self._classes_of(owner, depth + 1) for m in c.body
                         if type(m) in _FUNCTIONS and m.name == expr.attr]  # type: ignore[attr-defined]
                if found:
                    return found
        return [f for value in self._values_of(expr) for f in self._functions_of(value, depth + 1)]

    def _values_of(self, expr: ast.AST) -> List[ast.AST]:
        """What a name (its visible assignments) or a ``self.x`` attribute (its assignments in this file) holds."""
        if type(expr) is ast.Name:
            values = []
            for binding in self.flow.visible(expr.id, expr):  # type: ignore[attr-defined]
                if binding.how in ("assign", "for") and binding.value is not None:
                    value = binding.value
                    for step in binding.path:  # a, b = X(...), Y(...): the element; a, b = split(...): the call
                        if type(value) in (ast.Tuple, ast.List) and isinstance(step, int) and step < len(value.elts):  # type: ignore[attr-defined]
                            value = value.elts[step]  # type: ignore[attr-defined]
                    values.append(value)
            return values
        if type(expr) is ast.Attribute:
            name = dotted_name(expr)
            if name is not None:
                return self._attribute_values().get(name, [])
        return []

    def _attribute_values(self) -> Dict[str, List[ast.AST]]:
        if self._attributes is None:
            found: Dict[str, List[ast.AST]] = {}
            for node in self.tree.of_type(ast.Assign):
                for target in node.targets:  # type: ignore[attr-defined]
                    name = dotted_name(target) if type(target) is ast.Attribute else None
                    if name is not None:
                        found.setdefault(name, []).append(node.value)  # type: ignore[attr-defined]
            self._attributes = found
        return self._attributes

    # ---------------------------------------------------------------- classes

    def _has_worker_methods(self, cls: ast.ClassDef) -> bool:
        return bool(self._worker_methods(cls))

    def _worker_methods(self, cls: ast.ClassDef, depth: int = 0) -> List[ast.AST]:
        """``cls``'s worker methods, its own or inherited from a base class of this file."""
        known = self._methods_of.get(cls)
        if known is not None:
            return known
        self._methods_of[cls] = []  # a cycle of bases
        found = {s.name: s for s in cls.body if type(s) in _FUNCTIONS and s.name in WORKER_METHODS}  # type: ignore[attr-defined]
        if depth < 4:
            for base in cls.bases:
                for parent in self.classes.get((dotted_name(base) or "").rsplit(".", 1)[-1], []):
                    if parent is not cls:
                        for method in self._worker_methods(parent, depth + 1):
                            found.setdefault(method.name, method)  # type: ignore[attr-defined]
        methods = self._methods_of[cls] = list(found.values())
        return methods

    def _subclasses_dataset(self, cls: ast.ClassDef) -> bool:
        if not self._has_worker_methods(cls):
            return False
        for base in cls.bases:
            qualified = self.ctx.qualify(base)
            if qualified in DATASET_BASES:
                return True
            name = dotted_name(base) or ""
            if qualified is None and name.rsplit(".", 1)[-1].endswith("Dataset") and name.split(".", 1)[0] in self.classes:
                return True  # a Dataset base class of this file
        return False

    # --------------------------------------------------------------- exports

    def _exported_names(self) -> Optional[Set[str]]:
        """Public top-level names of a library module (``__all__`` when it lists them); None for a script or test."""
        module = self.tree.module
        if TEST_FILE.search(self.ctx.path) or any(is_main_guard(s) for s in module.body):
            return None
        names: Optional[Set[str]] = None
        for statement in module.body:
            if type(statement) is ast.Assign and any(type(t) is ast.Name and t.id == "__all__" for t in statement.targets):
                value = statement.value
                if type(value) in (ast.List, ast.Tuple):
                    names = {e.value for e in value.elts if type(e) is ast.Constant and isinstance(e.value, str)}  # type: ignore[attr-defined]
        if names is None:
            names = {s.name for s in module.body if type(s) in (*_FUNCTIONS, ast.ClassDef) and not s.name.startswith("_")}  # type: ignore[attr-defined]
        return names

    def _is_exported(self, node: ast.AST) -> bool:
        exported = self.exported
        return (
            exported is not None
            and type(self.tree.parent(node)) is ast.Module
            and getattr(node, "name", "") in exported
            and (type(node) is not ast.ClassDef or self._subclasses_dataset(node))  # type: ignore[arg-type]
        )

    # --------------------------------------------------------------- helpers

    def _reach(self, function: ast.AST, code: WorkerCode, entry: ast.AST) -> None:
        """``function`` runs in ``code``'s workers, and so do the functions of this file it calls."""
        pending = [function]
        while pending:
            current = pending.pop()
            if current in self.runs_in:
                continue
            self.runs_in[current] = (code, entry)
            for node in self._calls_in(current):
                func = node.func
                if type(func) is ast.Name:
                    pending += [f for f in self.functions.get(func.id, []) if f not in self.runs_in]
                elif type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
                    cls = self._class_of(current)
                    methods = [m for m in (cls.body if cls is not None else ())
                               if type(m) in _FUNCTIONS and m.name == func.attr]  # type: ignore[attr-defined]
                    pending += [m for m in methods if m not in self.runs_in]

    def _calls_in(self, function: ast.AST) -> List[ast.Call]:
        tree = self.tree
        calls = tree.of_type(ast.Call)  # in source order: the calls inside a function are one run
        if self._call_indices is None:
            self._call_indices = [tree.index(c) for c in calls]
        low = bisect.bisect_left(self._call_indices, tree.index(function))
        high = bisect.bisect_right(self._call_indices, tree.end(function))
        return [c for c in calls[low:high] if tree.scope_of(c) is function]  # type: ignore[misc]

    def _class_of(self, function: ast.AST) -> Optional[ast.ClassDef]:
        parent = self.tree.parent(function)
        return parent if type(parent) is ast.ClassDef else None  # type: ignore[return-value]


def _argument_values(call: ast.Call) -> List[ast.AST]:
    return [a.value if type(a) is ast.Starred else a for a in call.args] + [k.value for k in call.keywords]


class DeviceTensorInWorker(Rule):
    TRIGGERS = ("__getitem__", "__getitems__", "__iter__", "__next__", "collate_fn")
    REQUIRES = (DEVICE_EVIDENCE,)

    def visit_Call(self, node: ast.Call) -> None:
        placement = self._placement(node)
        if placement is None:
            return
        found = self.ctx.analysis(Workers).worker_of(node)
        if found is None:
            return
        code, entry = found
        function = self.ctx.tree.scope_of(node)
        where = f"in {self._label(function)}"
        if function is not entry:
            where += f" (called by {self._label(entry)})"
        if code.with_workers is not None:
            how = (f"the DataLoader at line {code.with_workers.lineno} runs it in worker processes "
                   "(`num_workers` may be above 0)")
        else:
            how = "it is exported, and a DataLoader with `num_workers > 0` runs it in worker processes"
        self.report(
            node,
            f"`{short(self.ctx, node)}` {placement} {where}; {how}: workers must return CPU tensors (on macOS they "
            "are spawned processes that cannot create MPS tensors or send them back); move the batch to the device "
            "in the training loop",
        )

    def _label(self, function: ast.AST) -> str:
        if type(function) is ast.Lambda:
            return "the `collate_fn` lambda"
        parent = self.ctx.tree.parent(function)
        name = function.name  # type: ignore[attr-defined]
        return f"`{parent.name}.{name}`" if type(parent) is ast.ClassDef else f"`{name}`"  # type: ignore[union-attr]

    def _placement(self, call: ast.Call) -> Optional[str]:
        """How ``call`` puts a tensor on the accelerator, or None."""
        ctx = self.ctx
        func = call.func
        qualified = ctx.qualify(func)
        if qualified is None and type(func) is ast.Attribute:
            if func.attr == "cuda":
                return "moves a tensor to CUDA"
            if func.attr == "to":
                flow = ctx.analysis(DeviceFlow)
                target = flow.to_target(call)
                if target is not None and flow.kind(target) is Kind.ACCEL:
                    return "moves a tensor to the accelerator"
            return None
        if qualified is not None and qualified.startswith("torch.") and qualified.count(".") == 1 \
                and qualified[len("torch."):] in FACTORIES:
            device = keyword(call, "device")
            if device is not None and ctx.analysis(DeviceFlow).kind(device) is Kind.ACCEL:
                return "creates a tensor on the accelerator"
        return None
