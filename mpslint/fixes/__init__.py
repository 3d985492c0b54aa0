"""What fixes are made of and written with.

- ``edits``: a fix as edits anchored on nodes (``FixSpec``, ``NodeEdit``,
  ``replace``...), which the engine turns into text edits;
- ``context``: ``FixContext``, the file in LibCST for the fixes that rewrite
  code structurally, built only for files whose fixes ask for it;
- ``ranges`` and ``walk``: LibCST's source ranges and visiting order, without
  its metadata and visitor machinery.

Importing this package does not import LibCST: a run with nothing to fix never does.
"""
