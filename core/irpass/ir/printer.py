"""Placeholder: the text-format printer (being written)."""
def print_expr(expr, show_meta_data=True):
    return repr(expr)
def print_module(mod, show_meta_data=True):
    return repr(mod)
