"""The project model: what a module's top-level names are, seen from the modules that import it.

Layers, top-down (each imports only those below it):

- ``model.ProjectView``: one checked file's questions (what does this name
  or this call give?), answered from its own summary and, through its
  imports, the summaries of the modules it imports;
- ``model.Project``: every module of a checked tree, found on disk and
  summarized at most once per content (``store.SummaryStore``);
- ``layout``: where a module of a given dotted name lives;
- ``summary`` (with ``returns``): one pass over one module's ``ast``
  gives its ``ModuleSummary``; it reads no other file.

Facts are small strings (``facts.py``), so a summary is JSON, cached and
compared by digest: a file's cached findings are reused while the digests
of the summaries it asked about are unchanged.
"""
