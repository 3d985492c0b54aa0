"""Where values live: on the accelerator, on the host, or unknown.

Per function (and the module body), a name holds what its most recent
assignment before the use gave it; with no assignment before the use (a
loop-carried name) it holds the join of all its assignments. Expressions are
evaluated structurally:

- device: ``.to(device)``, ``.cuda()``, factories with a non-CPU ``device=``,
  outputs of placed modules, tensors passed to ``.backward()`` (a loss lives
  where the model does) and what is computed from any of these, through
  ``.detach()``, arithmetic, indexing and ``torch.*`` functions;
- host tensor: ``torch.from_numpy``, factories without ``device=``, ``.cpu()``,
  ``.to("cpu")``;
- host value: ``.item()``, ``.tolist()``, ``.numpy()``, numpy, Python numbers,
  tensor metadata (``.shape``, ``.dtype``, ``.size()``);
- placed module: a name moved with ``model.to(device)`` /
  ``model = Net().to(device)`` / ``accelerator.prepare(model, ...)`` anywhere
  in the file. A script's names are the same in ``main()`` and in the
  ``train(model, ...)`` it calls, so placement is tracked by name, file-wide.

Anything else is unknown, and rules treat unknown as "do not report".

Cost: every expression is evaluated at most once (memoized), a name's
bindings are kept in source order and the one reaching a use is found by
bisection, and evaluation depth is bounded, so a file of any shape costs
time linear in its size (a chain of 10,000 rebindings of one name is
resolved one binding at a time, not 10,000 frames deep).
"""

from mpslint.analysis.device_flow.kinds import ACCELERATOR_TYPES, DEVICE_EVIDENCE, DEVICE_NAME, DTYPES, FACTORIES, FACT_KINDS, HOST_BUILTINS, HOST_METHODS, HOST_MODULES, JOIN_BUILTINS, Kind, MAX_DEPTH, META_ATTRS, MODULE_LIKE, MODULE_METHODS, MOVES, NO_GRAD, OBJECT_OWNERS, SIZED_FACTORIES, arithmetic, builds_module, join, join_all, names_a_dtype, string_kind  # noqa: F401
from mpslint.analysis.device_flow.bindings import Binding, enclosing_loops  # noqa: F401
from mpslint.analysis.device_flow.placement import moves_to_cpu  # noqa: F401
from mpslint.analysis.device_flow.flow import DeviceFlow  # noqa: F401
