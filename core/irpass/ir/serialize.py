"""Placeholder: save/load (being written)."""
def save(mod, path):
    raise NotImplementedError
def load(path):
    raise NotImplementedError
