"""The runtime verifier: run a script and report what really happens on ``mps``.

``launcher`` runs the script in a child process (``child``), where ``probe``
records fallbacks, host syncs and errors, optionally on the emulated device of
``simulate``; ``report`` turns what the child recorded into a verdict.
Nothing here is imported by the static linter: torch is imported only in the
child process.
"""
