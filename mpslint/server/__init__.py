"""``mpslint server``: mpslint's findings, fixes and rule docs in the editor, over the Language Server Protocol.

Installed with the ``server`` extra (``pip install "mpslint[server]"``), which
brings pygls; nothing else in mpslint imports this package. One module per
concern: ``server`` (the LSP wiring), ``documents`` (buffers and positions),
``targets`` (what one check covers), ``projects`` and ``settings`` (which
settings check a document), ``scheduler`` and ``pool`` (when and where checks
run), ``worker`` (the checking process), ``findings``, ``severity``,
``actions``, ``noqa`` and ``hover`` (what the editor shows).
"""
