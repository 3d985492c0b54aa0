"""``mpslint report``: a migration plan for a whole repository.

``collect`` checks and fixes in memory and fills the plain data of ``model``;
``impact`` says what each rule's findings mean on MPS; ``ops`` and ``runtime``
add the op coverage and the ``mpslint verify`` evidence; ``verdict`` writes the
first and last words; ``as_html``, ``as_markdown`` and ``as_json`` render the
same numbers (``charts`` draws the HTML's bars); ``command`` is the CLI.
"""
