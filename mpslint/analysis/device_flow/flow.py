"""``DeviceFlow``: one file's device flow, its parts (bindings, placement, evaluation) in one object."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from mpslint.analysis.tree import Scope, Tree
from mpslint.analysis.device_flow.kinds import Kind
from mpslint.analysis.device_flow.bindings import Binding, Bindings
from mpslint.analysis.device_flow.evaluation import Evaluation
from mpslint.analysis.device_flow.placement import Placement
from mpslint.analysis.device_flow.across import AcrossModules
from mpslint.analysis.device_flow.reads import HostReads
from mpslint.analysis.device_flow.model_calls import ModelCalls


class DeviceFlow(Evaluation, Placement, Bindings, AcrossModules, HostReads, ModelCalls):
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree: Tree = ctx.tree
        self._bindings: Optional[Dict[Scope, Dict[str, List[Binding]]]] = None
        self._ends: Dict[Tuple[Scope, str], List[int]] = {}  # the bindings' ends, for bisection
        self._graph: Optional[Dict[Scope, Set[str]]] = None
        self._places: Optional[bool] = None
        # (class, attribute) -> the assignments `self.<attribute> = value` in the class's methods
        self._attributes: Dict[Tuple[ast.AST, str], List[Tuple[int, ast.AST, ast.AST]]] = {}
        self.placed: Set[str] = set()  # every name placed somewhere in the file
        self.placed_in: Dict[Scope, Dict[str, List[int]]] = {}  # scope -> name -> where it is placed
        self.to_cpu_in: Dict[Scope, Dict[str, List[int]]] = {}  # scope -> name -> where it moves back to the CPU
        self.prepared: Set[str] = set()  # names returned by accelerator.prepare(...)
        self.nn_objects: Set[str] = set()  # names bound to torch.nn.X(...) instances
        self.no_grad_functions: Set[ast.AST] = set()
        # Calls of functions by simple name (``f(...)``, ``self.f(...)`` -> is_method).
        self.calls: Dict[str, List[Tuple[ast.Call, bool]]] = {}
        # Functions whose parameters the callers in other modules say are on the device: their files.
        self.from_callers: Dict[ast.AST, List[str]] = {}
        self.device_names: List[str] = []
        self._yields: Optional[Dict[str, Tuple[ast.AST, List[ast.AST]]]] = None  # generator name -> (def, yields)
        self._memo: Dict[ast.AST, Kind] = {}
        self._busy: Set[ast.AST] = set()
        self._binding_memo: Dict[Tuple[Binding, str], Kind] = {}
        self._depth = 0
        self._module_classes: Dict[ast.AST, bool] = {}
        self._moving_loops: Dict[ast.AST, bool] = {}
        self._top_level_classes: Optional[Dict[str, List[ast.ClassDef]]] = None
        self._collect()
