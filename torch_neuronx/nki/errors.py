"""Simulator errors, one class per AWS NKI error code.

Every check of the simulator raises a subclass of :class:`NKIError`. Classes are named exactly like
AWS's documented error codes (``nki.errors`` page, "NKI API Errors",
awsdocs-neuron.readthedocs-hosted.com/en/latest/general/nki/api/nki.errors.html) so a user can search
the AWS documentation for the name printed in the message. A few rules of the simulator have no
published AWS code; their classes carry ``aws_documented = False`` and a name in the same style.

Message format (stable, tests match on it)::

    [err_num_partition_exceed_arch_limit] rule: number of partitions <= 128 ... | detail: tile 'x' [256, 512] in sbuf
"""
from __future__ import annotations

__all__ = ["NKIError", "raise_error", "ALL_ERRORS"]


class NKIError(Exception):
    """Base class of every simulator check failure.

    Attributes:
        code: the AWS error-code name (also the class name).
        rule: one-line statement of the rule that was broken.
        detail: the offending shape / buffer / API, as text.
        aws_documented: False when AWS publishes no code for this rule (name chosen by us).
    """

    code = "err_nki"
    rule = "NKI rule"
    aws_documented = True

    def __init__(self, detail: str = ""):
        self.detail = detail
        origin = "" if self.aws_documented else " (simulator rule; no published AWS code)"
        super().__init__(f"[{self.code}] rule: {self.rule}{origin} | detail: {detail}")


def _make(code: str, rule: str, documented: bool = True) -> type:
    cls = type(code, (NKIError,), {"code": code, "rule": rule, "aws_documented": documented,
                                    "__doc__": f"{rule}\n\nAWS error code: ``{code}``."})
    cls.__module__ = __name__
    return cls


# --- codes documented on the AWS "NKI API Errors" page -------------------------------------------
err_num_partition_exceed_arch_limit = _make(
    "err_num_partition_exceed_arch_limit",
    "number of partitions (dimension 0 of an SBUF/PSUM tile) must not exceed the architecture limit of 128")
err_num_partition_mismatch = _make(
    "err_num_partition_mismatch",
    "all operands of an instruction must have the same number of partitions")
err_unsupported_memory = _make(
    "err_unsupported_memory",
    "API operand is in the wrong memory (load reads HBM, store writes HBM from SBUF, compute uses "
    "SBUF/PSUM, nc_matmul reads SBUF and writes PSUM, tensor_tensor takes at most one PSUM input, "
    "GpSimd never touches PSUM)")
err_size_of_dimension_exceed_arch_limit = _make(
    "err_size_of_dimension_exceed_arch_limit",
    "size of a dimension exceeds the architecture limit for this API (matmul stationary free <= 128, "
    "moving free <= 512, PSUM tile free <= 512, transpose <= 128x128, bn_stats free <= 512)")
err_tensor_access_out_of_bound = _make(
    "err_tensor_access_out_of_bound",
    "tensor access out of bounds; out-of-bound elements must be excluded with a mask")
err_1d_arange_not_supported = _make(
    "err_1d_arange_not_supported",
    "indexing a tensor with a 1-D arange is not supported; use nl.arange(n)[:, None] / [None, :]")
err_unsupported_mixing_basic_advanced_tensor_indexing = _make(
    "err_unsupported_mixing_basic_advanced_tensor_indexing",
    "mixing basic (slice) and advanced (arange) tensor indexing is not supported")
err_unexpected_output_dependencies = _make(
    "err_unexpected_output_dependencies",
    "iterations of an affine_range loop must not write the same memory location "
    "(PSUM += accumulation excepted); use sequential_range for a loop-carried write")
err_tensor_output_not_written_to = _make(
    "err_tensor_output_not_written_to",
    "every kernel output tensor must be written to")
err_cannot_update_immutable_parameter = _make(
    "err_cannot_update_immutable_parameter",
    "kernel input parameters are immutable and may not be written to")
err_exceed_max_supported_dimension = _make(
    "err_exceed_max_supported_dimension",
    "tensor parameter exceeds the maximum number of dimensions supported by this API")
err_failed_to_infer_tile_from_local_tensor = _make(
    "err_failed_to_infer_tile_from_local_tensor",
    "compute operands must be tiles whose first dimension is the partition dimension")
err_store_dst_shape_smaller_than_other_shape = _make(
    "err_store_dst_shape_smaller_than_other_shape",
    "an assignment / instruction destination must have the same or a bigger shape than its sources")
err_activation_scale_scalar_or_vector = _make(
    "err_activation_scale_scalar_or_vector",
    "activation scale/bias must be a scalar or a (P, 1) vector spanning the partition dimension")
err_activation_bias_invalid_type = _make(
    "err_activation_bias_invalid_type",
    "activation bias must be a float32, float16 or bfloat16 vector")
err_nki_api_outside_of_nki_kernel = _make(
    "err_nki_api_outside_of_nki_kernel",
    "NKI APIs can only be called inside a kernel run by nki.jit / simulate_kernel / benchmark")
err_shared_hbm_must_in_kernel_level = _make(
    "err_shared_hbm_must_in_kernel_level",
    "shared_hbm tensors can only be created at the top-level kernel scope (not inside a loop)")
err_cannot_assign_to_index = _make(
    "err_cannot_assign_to_index",
    "an index expression (nl.arange / nl.mgrid) does not support item assignment")

# --- simulator rules with no published AWS code ---------------------------------------------------
err_partition_stride_not_supported = _make(
    "err_partition_stride_not_supported",
    "the partition dimension of an SBUF/PSUM access must be contiguous (step 1) and independent of "
    "the free indices", documented=False)
err_reduce_axis_not_trailing_free = _make(
    "err_reduce_axis_not_trailing_free",
    "reductions are only over trailing contiguous free axes (never axis 0, the partition axis)",
    documented=False)
err_unsupported_dtype = _make(
    "err_unsupported_dtype",
    "data type not supported here (no fp64/int64 on NeuronCores; matmul output must be fp32 in PSUM)",
    documented=False)
err_buffer_capacity_exceeded = _make(
    "err_buffer_capacity_exceeded",
    "live allocations exceed the capacity of the buffer (SBUF/PSUM bytes per partition, HBM bytes)",
    documented=False)
err_invalid_program_axis = _make(
    "err_invalid_program_axis",
    "nl.program_id / nl.num_programs axis must be < the rank of the launch grid", documented=False)

ALL_ERRORS = tuple(v for v in list(globals().values())
                   if isinstance(v, type) and issubclass(v, NKIError) and v is not NKIError)
__all__ += [c.__name__ for c in ALL_ERRORS]


def raise_error(cls: type, detail: str):
    """Raise ``cls(detail)``; a helper so call sites read ``raise_error(err_x, "...")``."""
    raise cls(detail)
