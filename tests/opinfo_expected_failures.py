"""What the OpInfo sweep (``tests/test_opinfo.py``) expects besides a pass, per (op, dtype), with the reason.

``EXPECTED_FAILURES``: ops that run on the CPU but fail on ``neuron``. ``NOT_COUNTED``: ops whose CPU
reference itself cannot run any sample here, so nothing is compared. Keys are OpInfo names as the sweep
reports them (``name`` or ``name.variant``) and a dtype name of ``tests.test_opinfo.DTYPES``.

The sweep fails on any difference with these tables, both ways: a failure that is not listed, and a
listed op that now passes (or no longer runs), so the tables always say exactly what does not work and
why. A reason names the cause; a failure that is a defect of the device says so with "device bug: ...".
"""
from __future__ import annotations

# -- reasons --------------------------------------------------------------------------------------
SPARSE_INPUT = (
    "sparse layout: the sample's input is a sparse CSR tensor; the op refuses it by design (NeuronCores have "
    "no sparse support) with an error that says to keep it on the CPU or call .to_dense(). Note: moving the "
    "CSR tensor to neuron is itself not refused, unlike a COO one (device bug: .to('neuron') of a sparse "
    "CSR/CSC/BSR tensor should raise the same error)"
)
SPARSE_RESULT = (
    "sparse layout: the op returns a sparse COO tensor; the device refuses sparse results by design "
    "(NeuronCores have no sparse support) with an error that says to keep them on the CPU"
)
CUDA_ONLY = (
    "CUDA only: a Jiterator op (kernels compiled at run time by CUDA/ROCm); PyTorch raises on the CPU "
    "reference itself, so no sample runs"
)

#: (op, dtype) -> why the op fails on neuron.
EXPECTED_FAILURES: dict[tuple[str, str], str] = {
    ("sparse.mm.reduce", "float32"): SPARSE_INPUT,
    ("sparse.mm.reduce", "bfloat16"): SPARSE_INPUT,
    ("sparse.sampled_addmm", "float32"): SPARSE_INPUT,  # no bfloat16 CPU kernel: not swept in bfloat16
    ("to_sparse", "float32"): SPARSE_RESULT,
    ("to_sparse", "bfloat16"): SPARSE_RESULT,
}

#: (op, dtype) -> why no sample of the op runs on the CPU (nothing to compare against).
NOT_COUNTED: dict[tuple[str, str], str] = {
    ("jiterator_2inputs_2outputs", "float32"): CUDA_ONLY,
    ("jiterator_2inputs_2outputs", "bfloat16"): CUDA_ONLY,
    ("jiterator_4inputs_with_extra_args", "float32"): CUDA_ONLY,
    ("jiterator_4inputs_with_extra_args", "bfloat16"): CUDA_ONLY,
    ("jiterator_binary", "float32"): CUDA_ONLY,
    ("jiterator_binary", "bfloat16"): CUDA_ONLY,
    ("jiterator_binary_return_by_ref", "float32"): CUDA_ONLY,
    ("jiterator_binary_return_by_ref", "bfloat16"): CUDA_ONLY,
    ("jiterator_unary", "float32"): CUDA_ONLY,
    ("jiterator_unary", "bfloat16"): CUDA_ONLY,
}
