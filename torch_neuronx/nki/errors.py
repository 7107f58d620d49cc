"""Simulator errors: one class per NKI error code, each citing the AWS page its rule comes from.

Every rule the simulator enforces raises a subclass of :class:`NKIError`. Classes are named exactly
like AWS's documented error codes (the "NKI API Errors" page of the legacy reference,
``nki.errors.rst``), so the name printed in a message can be looked up in AWS's documentation; the
current ``nki`` front end calls the same failures ``nki.isa.NkiValidationError`` ("Raised when hardware
constraints are violated"), which is :class:`NKIError` here. Rules AWS states on an API or
architecture page without giving them an error code have classes with ``aws_documented = False`` and a
name in the same style.

Each class carries ``source``: where its rule is stated, as ``<repository>@<commit>:<path>[:line]``
of AWS's documentation sources (keys of :data:`SOURCES`), so a reader can check the rule.

Message format (stable; tests match on it)::

    [err_num_partition_exceed_arch_limit] rule: number of partitions <= 128 ... | detail: tile 'x' [256, 512] in sbuf
"""
from __future__ import annotations

from typing import NoReturn

__all__ = ["NKIError", "NkiValidationError", "NKIWarning", "raise_error", "ALL_ERRORS", "SOURCES", "not_supported"]

_LEGACY = "aws-neuron/aws-neuron-sdk@cca3784:general/nki/"     # SDK 2.26, the last tree with general/nki
_CURRENT = "aws-neuron/aws-neuron-sdk@81ce03a:nki/"            # SDK 2.32 (NKI 0.6)

SOURCES: dict[str, str] = {
    "errors": _LEGACY + "api/nki.errors.rst",
    "known-issues": _LEGACY + "nki_known_issues.rst",
    "programming-model": _LEGACY + "programming_model.rst",
    "block-dims": _LEGACY + "nki_block_dimension_migration_guide.rst",
    "legacy-isa": _LEGACY + "api/nki/isa/__init__.py",
    "legacy-language": _LEGACY + "api/nki/language/__init__.py",
    "current-isa": _CURRENT + "api/nki/isa/__init__.py",
    "current-language": _CURRENT + "api/nki/language/__init__.py",
    "language-guide": _CURRENT + "get-started/nki-language-guide.rst",
    "arch-v2": _CURRENT + "guides/architecture/trainium_inferentia2_arch.rst",
    "dtypes": _CURRENT + "api/nki.api.shared.rst",
    "mamba": _CURRENT + "guides/tutorials/fused_mamba.rst",
    "direct-allocation": _LEGACY + "nki_direct_allocation_guide.rst",
}


class NKIError(Exception):
    """Base class of every simulator check failure (AWS's ``nki.isa.NkiValidationError``).

    Attributes:
        code: the AWS error-code name (also the class name).
        rule: one-line statement of the rule that was broken.
        source: where AWS states the rule (``<repo>@<commit>:<path>[:line]``).
        detail: the offending shape / buffer / API, as text.
        aws_documented: False when AWS publishes no code for this rule (name chosen by us).
    """

    code = "err_nki"
    rule = "NKI rule"
    source = SOURCES["errors"]
    aws_documented = True

    def __init__(self, detail: str = ""):
        self.detail = detail
        origin = "" if self.aws_documented else " (rule of an AWS API page; no published error code)"
        super().__init__(f"[{self.code}] rule: {self.rule}{origin} | detail: {detail}")


NkiValidationError = NKIError


class NKIWarning(UserWarning):
    """A kernel construct that AWS's toolchain accepts but that does not do what it reads as (for example
    Python's ``and`` on two masks, which keeps only the last mask). The kernel runs as AWS's compiler runs
    it; the warning names the construct and the spelling that does what it says."""


def _make(code: str, rule: str, source: str, documented: bool = True) -> type:
    src = SOURCES.get(source.split(":")[0], "") + (":" + source.split(":", 1)[1] if ":" in source else "")
    cls = type(code, (NKIError,), {"code": code, "rule": rule, "aws_documented": documented,
                                    "source": src or source,
                                    "__doc__": f"{rule}\n\nAWS error code: ``{code}``; source: {src or source}."})
    cls.__module__ = __name__
    return cls


# --- codes documented on AWS's "NKI API Errors" page ----------------------------------------------
err_num_partition_exceed_arch_limit = _make(
    "err_num_partition_exceed_arch_limit",
    "number of partitions (dimension 0 of an SBUF/PSUM tile) must not exceed the architecture limit of 128",
    "errors")
err_num_partition_mismatch = _make(
    "err_num_partition_mismatch",
    "the operands of an instruction must have the same number of partitions (nl.* element-wise APIs "
    "broadcast a 1-partition operand; Python operators and nki.isa instructions do not)",
    "errors")
err_unsupported_memory = _make(
    "err_unsupported_memory",
    "API operand is in the wrong memory (DMA moves HBM/SBUF, compute engines read and write SBUF/PSUM, "
    "nc_matmul reads SBUF and writes PSUM, at most one tensor_tensor input in PSUM, GpSimd never "
    "touches PSUM)", "errors")
err_size_of_dimension_exceed_arch_limit = _make(
    "err_size_of_dimension_exceed_arch_limit",
    "size of a dimension exceeds the architecture limit for this API (matmul stationary free <= 128, "
    "moving free <= 512 (4096 fp32 / 8192 bf16 on NeuronCore-v4), PSUM bank 2 KiB, transpose <= 128x128 "
    "(Vector: 32x32), bn_stats free <= 512)", "errors")
err_tensor_access_out_of_bound = _make(
    "err_tensor_access_out_of_bound",
    "tensor access out of bounds; out-of-bound elements must be excluded with a mask (or, for indirect "
    "DMA, oob_mode=oob_mode.skip)", "errors")
err_1d_arange_not_supported = _make(
    "err_1d_arange_not_supported",
    "indexing a tensor with a 1-D arange is not supported; use nl.arange(n)[:, None] / [None, :]",
    "errors")
err_unsupported_mixing_basic_advanced_tensor_indexing = _make(
    "err_unsupported_mixing_basic_advanced_tensor_indexing",
    "mixing basic (slice) and advanced (arange) tensor indexing is not supported", "errors")
err_unexpected_output_dependencies = _make(
    "err_unexpected_output_dependencies",
    "iterations of an affine_range loop must not write the same memory location "
    "(associative reductions excepted: PSUM accumulation, t += x, nl.loop_reduce); use sequential_range for "
    "a loop-carried write", "errors")
err_tensor_output_not_written_to = _make(
    "err_tensor_output_not_written_to", "every kernel output tensor must be written to", "errors")
err_cannot_update_immutable_parameter = _make(
    "err_cannot_update_immutable_parameter",
    "kernel input parameters are immutable and may not be written to (annotate nt.mutable_tensor)",
    "errors")
err_mutable_parameter_not_returned = _make(
    "err_mutable_parameter_not_returned",
    "a kernel parameter annotated nt.mutable_tensor must be returned by the kernel", "errors")
err_exceed_max_supported_dimension = _make(
    "err_exceed_max_supported_dimension",
    "tensor parameter exceeds the maximum number of dimensions supported by this API", "errors")
err_failed_to_infer_tile_from_local_tensor = _make(
    "err_failed_to_infer_tile_from_local_tensor",
    "compute operands must be tiles whose first dimension is the partition dimension (index block "
    "dimensions away)", "errors")
err_store_dst_shape_smaller_than_other_shape = _make(
    "err_store_dst_shape_smaller_than_other_shape",
    "an assignment / instruction destination must have the same or a bigger shape than its sources",
    "errors")
err_activation_scale_scalar_or_vector = _make(
    "err_activation_scale_scalar_or_vector",
    "activation scale/bias must be a scalar or a (P, 1) vector spanning the partition dimension",
    "errors")
err_activation_scale_invalid_type = _make(
    "err_activation_scale_invalid_type",
    "activation scale must be a scalar or a vector of type float32", "errors")
err_activation_bias_invalid_type = _make(
    "err_activation_bias_invalid_type",
    "activation bias must be a float32, float16 or bfloat16 vector", "errors")
err_ambiguous_tensor_truth_value = _make(
    "err_ambiguous_tensor_truth_value",
    "a multi-element tile or mask has no truth value: use &, |, ~ instead of and, or, not, and "
    "'is not None' for None checks", "errors")
err_control_flow_condition_depending_on_arange = _make(
    "err_control_flow_condition_depending_on_arange",
    "control flow cannot depend on an nl.arange / nl.mgrid index expression; use a mask", "errors")
err_dynamic_control_flow_not_supported = _make(
    "err_dynamic_control_flow_not_supported",
    "control flow cannot depend on tensor values (int(), if, while on a tile)", "errors")
err_hbm_tensor_with_init_value_not_supported = _make(
    "err_hbm_tensor_with_init_value_not_supported",
    "an HBM tensor cannot be created with an initial value (nl.zeros/ones/full in HBM); create it "
    "with nl.ndarray and write it", "errors")
err_local_variable_used_out_of_scope = _make(
    "err_local_variable_used_out_of_scope",
    "a tensor created inside a for loop, or an if/else on a loop index, cannot be used after that block; "
    "create it before the block and write it inside with t[...] = ...", "errors:417")
err_annotation_shape_mismatch = _make(
    "err_annotation_shape_mismatch",
    "an annotated assignment (x: tensor[128, 512] = ...) must have the shape of its annotation",
    "errors")
err_nki_api_outside_of_nki_kernel = _make(
    "err_nki_api_outside_of_nki_kernel",
    "NKI APIs can only be called inside a kernel run by nki.jit / simulate_kernel / benchmark", "errors")
err_shared_hbm_must_in_kernel_level = _make(
    "err_shared_hbm_must_in_kernel_level",
    "shared_hbm tensors can only be created at the top-level kernel scope (not inside a loop)", "errors")
err_cannot_assign_to_index = _make(
    "err_cannot_assign_to_index",
    "an index expression (nl.arange / nl.mgrid) does not support item assignment", "errors")
err_nested_kernel_with_spmd_grid = _make(
    "err_nested_kernel_with_spmd_grid",
    "a kernel called from inside a kernel cannot have an SPMD launch grid", "errors")
err_unsupported_expression_in_mask = _make(
    "err_unsupported_expression_in_mask",
    "a mask must be an affine predicate of index expressions (nl.arange / nl.mgrid), combined with & and |",
    "errors")
err_indirect_indices_free_dim = _make(
    "err_indirect_indices_free_dim",
    "dynamic (tensor-valued) indices of a load/store may only index the partition or a block dimension",
    "errors")
err_leading_dimension_of_tensor_must_be_partition = _make(
    "err_leading_dimension_of_tensor_must_be_partition",
    "the leading dimension of an SBUF/PSUM tensor must be its partition dimension (the current front "
    "end has no block dimensions)", "block-dims")

# --- rules stated on AWS API / architecture pages without an error code -----------------------------
err_partition_stride_not_supported = _make(
    "err_partition_stride_not_supported",
    "the partition dimension of an SBUF/PSUM access must be contiguous (step 1) and independent of the "
    "free indices (\"hardware does not allow P dimension striding\")", "arch-v2:704", documented=False)
err_reduce_axis_not_trailing_free = _make(
    "err_reduce_axis_not_trailing_free",
    "nisa.tensor_reduce reduces the last contiguous free axes of a tile (never axis 0, the partition "
    "axis)", "current-isa:1161", documented=False)
err_unsupported_dtype = _make(
    "err_unsupported_dtype",
    "data type not supported here (no fp64/int64 on NeuronCores; per-API dtype rules of the nki.isa pages)",
    "dtypes", documented=False)
err_buffer_capacity_exceeded = _make(
    "err_buffer_capacity_exceeded",
    "PSUM tiles live at one instruction (each from its first to its last access) exceed its 16 KiB "
    "(8 banks of 2 KiB) per partition, or one tile exceeds an SBUF partition (SBUF overflow is spilled to "
    "HBM, as AWS's compiler does)", "arch-v2:77",
    documented=False)
err_invalid_program_axis = _make(
    "err_invalid_program_axis",
    "nl.program_id / nl.num_programs axis must be < the rank of the launch grid", "current-language",
    documented=False)
err_unsupported_on_target = _make(
    "err_unsupported_on_target",
    "the instruction or argument is not available on the simulated NeuronCore generation (e.g. "
    "\"Available only on NeuronCore-v4 and newer\")", "current-isa", documented=False)
err_invalid_instruction_argument = _make(
    "err_invalid_instruction_argument",
    "an instruction argument breaks the constraints of its nki.isa page (shape, element count, operator "
    "or value)", "current-isa", documented=False)
err_core_barrier_mismatch = _make(
    "err_core_barrier_mismatch",
    "nisa.core_barrier / sendrecv need every core of the logical NeuronCore to reach the same "
    "synchronization (cores=(0, 1) with LNC=2, NeuronCore-v3 or newer)", "current-isa:2601",
    documented=False)
err_lifetime_conflict = _make(
    "err_lifetime_conflict",
    "tensors placed at overlapping addresses (nl.ndarray(address=...)) must not be alive at the same "
    "time: a tensor read after another tensor overwrote its bytes reads the other tensor's data on a "
    "NeuronCore (\"Lifetime Conflicts\"; the compiler's own checks \"may not catch all the lifetime "
    "violations\")", "direct-allocation:374", documented=False)

ALL_ERRORS = tuple(v for v in list(globals().values())
                   if isinstance(v, type) and issubclass(v, NKIError) and v is not NKIError)
__all__ += [c.__name__ for c in ALL_ERRORS]


def raise_error(cls: type, detail: str) -> NoReturn:
    """Raise ``cls(detail)``; a helper so call sites read ``raise_error(err_x, "...")``."""
    raise cls(detail)


def not_supported(api: str, arg: str, value: object, why: str = "") -> NotImplementedError:
    """The ``NotImplementedError`` for a known argument value the simulator does not model: names the
    API, the argument and the value (the caller raises it)."""
    extra = f": {why}" if why else ""
    return NotImplementedError(f"{api}({arg}={value!r}) is not supported by the torch_neuronx NKI "
                               f"simulator{extra}")
