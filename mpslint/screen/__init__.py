"""The prefilter's second stage: structural necessary conditions, from Python's own parser.

The byte prefilter (``engine.rules_for_text``) cannot rule out a model file:
it contains loops, ``.to(``, ``device`` and op names, which are what the
hot-loop, placement and op rules need. Whether they meet the way a rule
needs them is a question of structure: a loop that runs a training step, a
host tensor next to a value that may live on the device, a call of an op
with no kernel in the project's torch. Python's own parser answers such
questions for about an eighth of what LibCST's parse costs (transformers
5.23.0: 7.3 s against 61 s in one process), so a rule may declare a
``screen(facts) -> bool`` that is False only when the rule cannot fire on
the file. A file whose admitted rules all screen out is never parsed by
LibCST, and a rule screened out of a parsed file does not run there.

Screens stand in for the analyses in ``mpslint/analysis`` and must never be
stricter than them: ``screen.device`` over-approximates ``DeviceFlow`` (what
may be on the device, a placed module or a device handle) and
``screen.loops`` over-approximates ``HotLoops``. ``tests/test_screen.py``
checks that on every fixture and a corpus sample, expression by expression,
and ``tests/test_prefilter.py`` that results never change. A file Python's
parser rejects (a syntax error, or syntax newer than the running Python)
is not screened: every admitted rule runs, and LibCST decides.
"""

from __future__ import annotations

from typing import List, Sequence

from mpslint.screen.facts import Facts, Unscreenable

__all__ = ["Facts", "Unscreenable", "screen_rules"]


def screen_rules(text: str, classes: Sequence, settings) -> List:
    """The rules of ``classes`` whose screen (if any) says they may fire on ``text``."""
    if all(cls.screen is None for cls in classes):
        return list(classes)
    facts = Facts(text, settings)
    return [cls for cls in classes if cls.screen is None or _may_fire(cls, facts)]


def _may_fire(cls, facts: Facts) -> bool:
    try:
        return bool(cls.screen(facts))
    except Unscreenable:
        return True
    except Exception:  # noqa: BLE001 - RecursionError on absurd nesting, or a screen's own bug:
        return True  # either way the rule runs, so a failing screen costs time, never a finding
