"""``nki.dtype``: the NKI data types, as a module. nki-library annotates dtype parameters with it
(``compute_dtype: nki.dtype = nl.bfloat16``) and its tests import it for the type names
(``import nki.dtype as nt``; ``nt.float8_e4m3``). The names are the ``nki.language`` dtypes of AWS's
"Supported Data Types" table (``nki/api/nki.api.shared.rst``), the same objects as ``nl.float32`` etc.
"""
from __future__ import annotations

from ..dtypes import (bfloat16, bool_, float4_e2m1fn_x4, float8_e4m3, float8_e4m3fn, float8_e4m3fn_x4,
                      float8_e5m2, float8_e5m2_x4, float8_e8m0fnu, float16, float32, int8, int16, int32,
                      tfloat32, uint8, uint16, uint32)

__all__ = ["float32", "tfloat32", "bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
           "float8_e8m0fnu", "float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4", "int8", "int16", "int32",
           "uint8", "uint16", "uint32", "bool_"]
