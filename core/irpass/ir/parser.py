"""Placeholder: the text-format parser (being written)."""
def parse(text, filename=None, metadata=None):
    raise NotImplementedError
