"""The instruction layer: every NeuronCore instruction, in destination-passing style.

Each function writes into the destination view ``dst`` passed to it and returns an
:class:`~.common.NkiInstruction` handle. It checks NKI's rules (buffers per API, partition counts,
matmul / PSUM / transpose limits, masks; each failure is the :mod:`..errors` class named after AWS's
error code), computes the result in float32 with NumPy, rounds once into ``dst``'s dtype, and charges
the cost model (:mod:`..cost_model` has the cycle formulas and their AWS sources).

Both front ends sit on this layer: the current ``nki`` API (:mod:`..current`), whose ``nisa`` calls
take ``dst`` and map one-to-one onto these functions, and the legacy ``neuronxcc.nki`` API
(:mod:`..language`, :mod:`..isa`), whose calls allocate a result tile (:func:`.common.fresh_result`)
and call the same functions.

Modules, one concept each: :mod:`.constants` (enums), :mod:`.common` (operand checks), :mod:`.dma`,
:mod:`.tensor_engine`, :mod:`.vector`, :mod:`.scalar`, :mod:`.gpsimd`, :mod:`.sync` (barriers,
sendrecv, registers, collectives) and :mod:`.syntax` (``t[...] = x``, ``t += x``).
"""
from .common import (NkiInstruction, VirtualRegister, check_memory, count, fresh_result, free_size, operand,
                     require_generation, samep)
from .constants import (dge_mode, dma_engine, engine, engine_name, gpsimd_engine, matmul_perf_mode, nc_version,
                        oob_mode, reduce_cmd, scalar_engine, tensor_engine, unknown_engine, vector_engine)
from .dma import dma_compute, dma_copy, dma_transpose, load, load_transpose2d, store
from .gpsimd import (affine_select, affine_select_pattern, gather_flattened, iota, iota_pattern, local_gather,
                     nc_n_gather, nonzero_with_count, sequence_bounds, tensor_partition_reduce, topk)
from .scalar import activate2, activation
from .sync import (ReplicaGroup, collective, core_barrier, rank_id, register_alloc, register_load,
                   register_move, register_store, sendrecv)
from .syntax import accumulate, assign
from .tensor_engine import (check_matmul_operands, check_transpose_shape, mx_scale_rows, nc_matmul, nc_matmul_mx,
                            nc_transpose, quantize_mx)
from .vector import (bn_aggr, bn_stats, broadcast_copy, dropout, exponential, max8, memset, nc_find_index8,
                     nc_match_replace8, nc_stream_shuffle, rand2, rand_get_state, rand_set_state, range_select,
                     reciprocal, reduce_axes, rng, scalar_tensor_tensor, select, select_reduce, set_rng_seed,
                     tensor_copy, tensor_copy_dynamic, tensor_copy_predicated, tensor_reduce, tensor_scalar,
                     tensor_scalar_cumulative, tensor_scalar_reduce, tensor_tensor, tensor_tensor_scan)

__all__ = [
    "NkiInstruction", "VirtualRegister", "check_memory", "count", "fresh_result", "free_size", "operand",
    "require_generation", "samep",
    "dge_mode", "dma_engine", "engine", "engine_name", "gpsimd_engine", "matmul_perf_mode", "nc_version",
    "oob_mode", "reduce_cmd", "scalar_engine", "tensor_engine", "unknown_engine", "vector_engine",
    "dma_compute", "dma_copy", "dma_transpose", "load", "load_transpose2d", "store",
    "affine_select", "affine_select_pattern", "gather_flattened", "iota", "iota_pattern", "local_gather",
    "nc_n_gather", "nonzero_with_count", "sequence_bounds", "tensor_partition_reduce", "topk",
    "activate2", "activation",
    "ReplicaGroup", "collective", "core_barrier", "rank_id", "register_alloc", "register_load", "register_move",
    "register_store", "sendrecv", "accumulate", "assign",
    "check_matmul_operands", "check_transpose_shape", "mx_scale_rows", "nc_matmul", "nc_matmul_mx",
    "nc_transpose", "quantize_mx",
    "bn_aggr", "bn_stats", "broadcast_copy", "dropout", "exponential", "max8", "memset", "nc_find_index8",
    "nc_match_replace8", "nc_stream_shuffle", "rand2", "rand_get_state", "rand_set_state", "range_select",
    "reciprocal", "reduce_axes", "rng", "scalar_tensor_tensor", "select", "select_reduce", "set_rng_seed",
    "tensor_copy", "tensor_copy_dynamic", "tensor_copy_predicated", "tensor_reduce", "tensor_scalar",
    "tensor_scalar_cumulative", "tensor_scalar_reduce", "tensor_tensor", "tensor_tensor_scan",
]
