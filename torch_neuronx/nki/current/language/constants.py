"""``nki.language.constants`` of the current front end: ``sizeinbytes(dtype)`` and the tile limits."""
from ...limits import sizeinbytes, tile_size

__all__ = ["sizeinbytes", "tile_size"]
