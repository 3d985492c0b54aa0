"""What helpers and imported names give, from the project model (``analysis/project``)."""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.analysis.project.facts import argument_positions, item, item_facts
from mpslint.analysis.syntax import positional_at
from mpslint.analysis.device_flow.kinds import Kind, _ATTRIBUTE, _NAME, _fact_kind, arithmetic, names_a_dtype
from mpslint.analysis.device_flow.bindings import _class_of


class AcrossModules:
    """What helpers and imported names give (a part of ``DeviceFlow``)."""

    def imported_fact(self, name: str) -> Optional[str]:
        """The fact (``analysis/project/facts``) of a name this file binds only by an import, if a value."""
        resolved = self.ctx.project.imported(name)
        return resolved[1] if resolved is not None and resolved[0] == "value" else None  # type: ignore[return-value]

    def _imported_kind(self, name: str) -> Optional[Kind]:
        """A name this file binds only by an import: what the project model says the module binds it to."""
        fact = self.imported_fact(name)
        if fact is not None:
            return _fact_kind(fact)
        resolved = self.ctx.project.imported(name)
        if resolved is not None and resolved[0] == "alias" and names_a_dtype(resolved[1]):  # type: ignore[arg-type]
            return Kind.HOST
        return None

    def returned_fact(self, call: ast.Call) -> Optional[str]:
        """What a helper's summary says it returns (``arg:K`` included): a function of this file defined at
        the top level, a method of the enclosing class called through ``self``, or a function of an imported
        module."""
        func = call.func
        project = self.ctx.project
        tree = self.tree
        if type(func) is _NAME:
            name = func.id  # type: ignore[attr-defined]
            scope = tree.scope_of(call)
            shadowed = scope is not tree.module and name in self.bindings.get(scope, {})
            top = self.bindings.get(tree.module, {}).get(name, ())
            if not shadowed and all(b.how == "other" for b in top):
                return project.function(name)
        elif type(func) is _ATTRIBUTE and type(func.value) is _NAME:  # type: ignore[attr-defined]
            owner = func.value.id  # type: ignore[attr-defined]
            if owner == "self":
                cls = _class_of(tree, call)
                return project.method(cls.name, func.attr) if cls is not None else None  # type: ignore[attr-defined]
            if not self.bindings.get(tree.module, {}).get(owner) and not self.bindings.get(tree.scope_of(call), {}).get(owner):
                return project.module_function(owner, func.attr)  # type: ignore[attr-defined]
        return None

    def _returned(self, call: ast.Call, func: ast.AST) -> Optional[Kind]:
        """What a helper returns at this call: its summary's fact, ``arg:K`` read as the K-th argument here."""
        return self._kind_at(self.returned_fact(call), call)

    def returned_item(self, call: ast.Call, index: int) -> Optional[Kind]:
        """Item ``index`` of the tuple a helper returns at this call (``pred, true = self.step(batch)``), when
        its summary says what each item is (``facts.ITEMS``); None otherwise."""
        fact = self.returned_fact(call)
        if item_facts(fact) is None:
            return None
        # what the helper returns for that item, or nothing known: not what the call as a whole looks like
        # (`forward_step(model, x, y, device)` places something, but its `y` item is the loader's)
        return self._kind_at(item(fact, index), call) or Kind.UNKNOWN

    def _kind_at(self, fact: Optional[str], call: ast.Call) -> Optional[Kind]:
        """What a return fact is at this call."""
        if fact is None:
            return None
        positions = argument_positions(fact)
        if positions:
            kinds = []
            for position in positions:
                value = positional_at(call, position)
                if value is None:
                    return None
                kinds.append(self.kind(value))
            kind = kinds[0]
            for other in kinds[1:]:
                kind = arithmetic(kind, other)
            return kind if kind in (Kind.DEVICE, Kind.HOST_TENSOR) else None
        return _fact_kind(fact)
