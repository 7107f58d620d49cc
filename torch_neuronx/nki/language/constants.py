"""``nki.language.constants`` (both front ends): ``sizeinbytes(dtype)`` and the tile limits."""
from ..limits import sizeinbytes, tile_size

__all__ = ["sizeinbytes", "tile_size"]
