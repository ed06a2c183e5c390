"""Placeholder: well-formedness check (being written)."""
def well_formed(expr_or_module):
    raise NotImplementedError
