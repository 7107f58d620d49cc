"""Wrong-typed arguments to the public NKI API raise NKI errors naming the API, never Python's own
exceptions from inside the simulator (``nki/arguments.py`` and the checks of the APIs themselves).

A sweep calls every public function of both front ends' ``nl`` and ``nisa`` with a string, ``None``, a
list and a number in each required parameter and requires an ``NKIError``, a ``NotImplementedError`` naming the API or
Python's own signature ``TypeError`` (which names the function); the named cases check the error class
and message. Kernels and inputs are ours."""
import inspect

import numpy as np
import pytest

import torch_neuronx.nki.current.isa as cisa
import torch_neuronx.nki.current.language as cnl
import torch_neuronx.nki.isa as lisa
import torch_neuronx.nki.language as lnl
from torch_neuronx import nki as legacy
from torch_neuronx.nki import current
from torch_neuronx.nki import errors as E

A = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
IDX = np.arange(128, dtype=np.int32).reshape(128, 1)
# names exported by the modules that are not NKI APIs, and APIs that take a callable or run a body
NOT_APIS = {"install_operators", "fresh_result", "get_platform", "device_print", "static_cast", "as_int",
            "fori_loop", "while_loop", "affine_range", "sequential_range", "static_range", "tile_range",
            "builtin_custom_op", "all_reduce", "loop_reduce"}


def _kernel(front, body):
    """A kernel that makes a [128, 64] fp32 SBUF tile ``t`` and an int32 [128, 1] tile ``it`` and calls
    ``body(ctx)`` with them; its output is ``t``."""
    if front == "legacy":
        @legacy.jit
        def k(a, idx):
            o = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
            t = lnl.load(a)
            body({"tile": t, "itile": lnl.load(idx), "dst": lnl.ndarray((128, 64), dtype=lnl.float32,
                                                                            buffer=lnl.sbuf)})
            lnl.store(o, t)
            return o
        return k

    @current.jit
    def kc(a, idx):
        o = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.shared_hbm)
        t = cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=a)
        it = cnl.ndarray((128, 1), dtype=cnl.int32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=it, src=idx)
        body({"tile": t, "itile": it, "dst": cnl.ndarray((128, 64), dtype=cnl.float32, buffer=cnl.sbuf)})
        cisa.dma_copy(dst=o, src=t)
        return o
    return kc


def _good(name, ctx, nl):
    t = ctx["tile"]
    return {"x": t, "y": t, "data": t, "src": t, "data0": t, "data1": t, "data2": t, "a": t, "dst": ctx["dst"],
            "shape": (128, 64), "dtype": nl.float32, "op": nl.add, "op0": nl.add, "op1": nl.add, "axis": 1,
            "value": 0.0, "operand0": 1.0, "operand1": 1.0, "imm": 0.0, "buffer": nl.sbuf, "start": 0,
            "stop": 4, "size": 4, "n": 4, "indices": ctx["itile"], "stationary": t, "moving": t,
            "fill_value": 0.0, "condition": t, "pred": t, "predicate": t, "on_true_tile": t,
            "on_false_value": 0.0, "vals": t, "reduce_op": nl.add, "prob": 0.5, "rate": 0.5,
            "epsilon": 1e-5, "w": t, "seed": ctx["itile"], "constant": np.ones((4, 4), np.float32), "imm0": 0.0,
            "imm1": 0.0, "pattern": [[1, 64]], "channel_multiplier": 0, "cmp_op": nl.greater, "comp_op0": nl.greater,
            "comp_op1": nl.less, "bound0": 0.0, "bound1": 1.0, "on_true": t, "on_false": 0.0,
            "segment_ids": ctx["itile"], "src_seeds": ctx["itile"], "initial": 0.0, "src_buffer": t,
            "index": ctx["itile"]}[name]


def _calls(front):
    nl, nisa = (lnl, lisa) if front == "legacy" else (cnl, cisa)
    for prefix, mod in (("nl", nl), ("nisa", nisa)):
        for name in sorted(getattr(mod, "__all__", dir(mod))):
            fn = getattr(mod, name, None)
            if name.startswith("_") or name in NOT_APIS or not inspect.isfunction(fn):
                continue
            req = [p for p in inspect.signature(fn).parameters.values()
                   if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            try:
                for p in req:
                    _good(p.name, {"tile": 0, "itile": 0, "dst": 0}, nl)
            except KeyError:
                continue                        # a parameter the sweep has no valid value for
            yield f"{prefix}.{name}", fn, nl, req


@pytest.mark.parametrize("front", ["legacy", "current"])
def test_no_public_function_lets_a_raw_exception_escape_for_wrong_typed_arguments(front):
    raw = []
    n = 0
    for api, fn, nl, req in _calls(front):
        for target in req:
            for bad in ("x", None, [1, 2], 1.5):
                def body(ctx, fn=fn, nl=nl, req=req, target=target, bad=bad):
                    kw = {p.name: _good(p.name, ctx, nl) for p in req}
                    kw[target.name] = bad
                    pos = [kw.pop(p.name) for p in req if p.kind == p.POSITIONAL_ONLY]
                    fn(*pos, **kw)
                n += 1
                try:
                    _kernel(front, body)(A, IDX)
                except E.NKIError:
                    pass
                except NotImplementedError as e:  # allowed only when it names the unsupported API
                    if api.split(".")[-1] not in str(e):
                        raw.append(f"{api}({target.name}={bad!r}): NotImplementedError without the API: {e}")
                except TypeError as e:
                    if api.split(".")[1] not in str(e) or "argument" not in str(e):
                        raw.append(f"{api}({target.name}={bad!r}): TypeError: {e}")
                except Exception as e:  # noqa: BLE001 - the point of the test
                    raw.append(f"{api}({target.name}={bad!r}): {type(e).__name__}: {e}")
    assert n > 500
    assert not raw, "\n".join(raw)


def _legacy(body):
    return _kernel("legacy", body)


def _current(body):
    return _kernel("current", body)


CASES = [
    # (id, kernel factory, body, error class, text the message must contain)
    ("mask compared with a string", _legacy,
     lambda c: lnl.exp(c["tile"], mask=(lnl.arange(128)[:, None] < "x")),
     E.err_unsupported_expression_in_mask, "index expression compared with 'x'"),
    ("mask combined with a string", _legacy, lambda c: lnl.exp(c["tile"], mask=(lnl.arange(128)[:, None] < 4) & "x"),
     E.err_unsupported_expression_in_mask, "index expression & 'x'"),
    ("a tile as a mask", _legacy, lambda c: lnl.exp(c["tile"], mask=c["tile"]),
     E.err_unsupported_expression_in_mask, "nl.exp: mask"),
    ("index arithmetic with None", _legacy, lambda c: lnl.arange(128)[:, None] + None,
     E.err_invalid_instruction_argument, "arithmetic with None"),
    ("a tile compared with a string", _legacy, lambda c: c["tile"] < "x",
     E.err_invalid_instruction_argument, "'x' (str) is not a tile or a number"),
    ("legacy iota of a string", _legacy, lambda c: lisa.iota("x", dtype=lnl.int32),
     E.err_invalid_instruction_argument, "nisa.iota: expr 'x'"),
    ("current iota of a string pattern", _current,
     lambda c: cisa.iota(dst=cnl.ndarray((128, 64), cnl.int32, buffer=cnl.sbuf), pattern="x"),
     E.err_invalid_instruction_argument, "[step, num] pair"),
    ("current iota of a string offset", _current,
     lambda c: cisa.iota(dst=cnl.ndarray((128, 64), cnl.int32, buffer=cnl.sbuf), pattern=[[1, 64]], offset="x"),
     E.err_invalid_instruction_argument, "nisa.iota: 'offset' is 'x'"),
    ("legacy shared_constant of a missing file", _legacy, lambda c: lnl.shared_constant("no-such-file"),
     E.err_invalid_instruction_argument, "not a readable .npy file"),
    ("current shared_constant of a missing file", _current, lambda c: cnl.shared_constant("no-such-file"),
     E.err_invalid_instruction_argument, "not a readable .npy file"),
    ("shared_constant of strings", _legacy, lambda c: lnl.shared_constant(np.array(["a", "b"])),
     E.err_invalid_instruction_argument, "array of numbers"),
    ("a string axis", _legacy, lambda c: lnl.sum(c["tile"], axis="1"),
     E.err_invalid_instruction_argument, "nl.sum: axis '1'"),
    ("a number where a tile goes", _legacy, lambda c: lnl.transpose(3.0),
     E.err_invalid_instruction_argument, "nl.transpose: 'x' is 3.0"),
    ("a list as an isa operand", _current,
     lambda c: cisa.tensor_tensor(dst=c["dst"], data1=c["tile"], data2=[1, 2], op=cnl.add),
     E.err_invalid_instruction_argument, "nisa.tensor_tensor: 'data2'"),
    ("a string dtype", _current, lambda c: cnl.ndarray((128, 64), dtype="float77", buffer=cnl.sbuf),
     E.err_unsupported_dtype, "float77"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_wrong_typed_argument_names_the_api_and_the_value(case):
    _id, factory, body, error, text = case
    with pytest.raises(E.NKIError) as ei:
        factory(body)(A, IDX)
    assert type(ei.value) is error, f"{type(ei.value).__name__}: {ei.value}"
    assert text in str(ei.value), str(ei.value)


def test_shared_constant_reads_a_npy_file(tmp_path):
    path = tmp_path / "c.npy"
    c = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    np.save(path, c)

    @legacy.jit
    def k(a):
        o = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, lnl.add(lnl.load(lnl.shared_constant(str(path))), lnl.load(a)))
        return o
    np.testing.assert_array_equal(k(A), c + A)
