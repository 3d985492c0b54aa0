"""Jupyter notebooks (``.ipynb``): checked, fixed and verified like scripts, reported by cell.

One idea per module:

- ``document``: the notebook's JSON text, where each cell's source is in it, writing sources back;
- ``ipython``: which cells are Python, and same-length Python stand-ins for IPython's escapes;
- ``program``: the Python cells as one program, and positions and edits mapped to and from cells;
- ``lint``: checking, fixing and writing one notebook (the runner's entry point for ``.ipynb``);
- ``script``: a notebook as a script for ``mpslint verify``, with the line map back to cells.

This module stays import-free: a run of ``.py`` files asks ``is_notebook`` and
never imports the rest.
"""

SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)
