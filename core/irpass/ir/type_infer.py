"""Placeholder: type inference (being written)."""
def infer_type(expr_or_module):
    raise NotImplementedError
