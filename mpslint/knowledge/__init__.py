"""Data mpslint knows about torch: the MPS op table, version gates, API mappings."""
