"""``torch_neuronx.estimate(...)``: record what a program runs on ``neuron`` and estimate it on Trainium.

::

    with torch_neuronx.estimate(platform="trn2", lnc=2, instance="trn2.48xlarge", modules=[model],
                                optimizers=[opt]) as est:
        train_step()                        # real neuron tensors, or fake ones (see shape_only)
    print(est.report.summary())             # every line says ESTIMATE
    est.report.to_dict(); est.report.save_chrome_trace("step.json")

Every op on ``neuron`` is recorded (:mod:`.recorder`), costed (:mod:`.costs`, :mod:`.collectives`), placed
in time eagerly and as compiled graphs (:mod:`.fusion`, :mod:`.timeline`), and its memory tracked
(:mod:`.memory`). Compiled-graph launches, collectives of the ``"neuron"`` process group and NKI kernels
are reported by small hooks in those layers (:mod:`.active`).
"""
from __future__ import annotations

import contextlib
import math
import numbers
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch.utils import _pytree as pytree

from ..runtime.platforms import Platform, get_platform
from . import active, dtensor_propagation
from .calibration import ModelConstants, default_constants
from .collectives import (
    CollectiveCall,
    CollectiveModel,
    CollectiveTime,
    describe,
    group_of,
    is_collective,
    is_wait,
    kind_of,
    on_neuron_backend,
)
from .costs import CostTable, OpCost
from .events import GraphInfo, KernelInfo, OpEvent, Segment
from .fusion import NO_WORK
from .memory import MemoryTracker
from .recorder import EstimateMode, ProgramContext
from .roofline import Roofline, dtype_name
from .topology import Placement, resolve_instance

if TYPE_CHECKING:
    from .graphs import GraphLauncher
    from .report import EstimateReport, Task

__all__ = ["EstimateSession", "estimate"]

#: What the ``"neuron"`` process group passes as a collective's outputs / inputs: a tensor, a list of tensors
#: or a list of lists.
TensorTree = torch.Tensor | Sequence["TensorTree"]

_PHASE_CATEGORY = {"forward": "activations", "backward": "temporaries", "optimizer": "optimizer_state"}


def _neuron_tensors(x) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor) and t.device.type == "neuron"]


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _whole(name: str, value: object, optional: bool) -> None:
    """Raises unless ``value`` is an int >= 1 (or None when ``optional``): a float would be truncated or used as
    a fraction of an instance, a bool counted as 0 or 1."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}={value!r}: must be a whole number (an int), not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name}={value}: must be at least 1")


def _check_arguments(lnc: object, instances: object, price_per_hour: object, modules: list, optimizers: list,
                     compiled: object, constants: object, tokens_per_step: object, trace: object) -> None:
    """The argument checks of :func:`estimate`, before anything is recorded (see its Raises)."""
    _whole("lnc", lnc, optional=True)
    _whole("instances", instances, optional=False)
    _whole("tokens_per_step", tokens_per_step, optional=True)
    if price_per_hour is not None:
        if isinstance(price_per_hour, bool) or not isinstance(price_per_hour, numbers.Real):
            raise TypeError(f"price_per_hour={price_per_hour!r}: a number of USD per instance-hour, not "
                            f"{type(price_per_hour).__name__}")
        if not math.isfinite(price_per_hour) or price_per_hour < 0:
            raise ValueError(f"price_per_hour={price_per_hour}: a price must be a finite number >= 0 USD per hour")
    if compiled is not None and not isinstance(compiled, bool):
        raise TypeError(f"compiled={compiled!r}: True (compiled graphs), False (eager ops) or None (as the program "
                        "ran), not a " + type(compiled).__name__)
    for m in modules:
        if m is not None and not isinstance(m, torch.nn.Module):
            raise TypeError(f"modules: {m!r} is not a torch.nn.Module: pass the model (or a list of models)")
    for o in optimizers:
        if not isinstance(o, torch.optim.Optimizer):
            raise TypeError(f"optimizers: {o!r} is not a torch.optim.Optimizer: pass the optimizer (or a list)")
    if constants is not None and not isinstance(constants, ModelConstants):
        raise TypeError(f"constants: a {type(constants).__name__} is not a ModelConstants: build one with "
                        "dataclasses.replace(torch_neuronx.estimate.calibration.default_constants(), ...)")
    if trace is not None:
        folder = os.path.dirname(os.path.abspath(str(trace)))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise ValueError(f"trace={trace!r}: the folder {folder} does not exist or cannot be written; create it "
                             "or choose another path (checked before the program runs, not after)")


class EstimateSession:
    """An estimate in progress (returned by :func:`estimate`; see its arguments).

    Attributes:
        platform, lnc, placement: the hardware estimated; constants: the model constants used.
        report: the :class:`~.report.EstimateReport`, available after the ``with`` block.
        segments: the recording's segments.
    """

    def __init__(self, platform: str | Platform = "trn2", lnc: int | None = None, instance: str | None = None,
                 instances: int = 1, price_per_hour: float | None = None,
                 modules: torch.nn.Module | Sequence[torch.nn.Module | None] | None = (),
                 optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] = (),
                 compiled: bool | None = None, constants: ModelConstants | None = None,
                 tokens_per_step: int | None = None, trace: str | None = None, module_names: bool = False):
        for name, value in (("modules", modules), ("optimizers", optimizers)):
            if isinstance(value, (str, bytes)):
                raise TypeError(f"{name}={value!r}: pass the object itself (or a list of them), not its name")
        modules = [modules] if isinstance(modules, torch.nn.Module) else list(modules or ())
        optimizers = [optimizers] if isinstance(optimizers, torch.optim.Optimizer) else list(optimizers)
        _check_arguments(lnc, instances, price_per_hour, modules, optimizers, compiled, constants, tokens_per_step,
                         trace)
        self.module_names = module_names
        self.platform = get_platform(platform) if not isinstance(platform, Platform) else platform
        self.lnc = self.platform.chip.default_lnc if lnc is None else int(lnc)     # a NumPy integer: a plain int
        instances = int(instances)
        tokens_per_step = None if tokens_per_step is None else int(tokens_per_step)
        self.constants = constants or default_constants()
        self.roofline = Roofline(self.platform, self.lnc, self.constants)
        self.placement = Placement(self.platform, self.lnc, resolve_instance(self.platform, instance, instances),
                                   instances)
        self.price_per_hour = price_per_hour
        self.costs = CostTable(self.roofline)
        self.collectives = CollectiveModel(self.placement, self.constants.alpha_cc_s)
        self.memory = MemoryTracker()
        self.modules: list[torch.nn.Module] = [m for m in modules if m is not None]
        self.optimizers: list[torch.optim.Optimizer] = optimizers
        self.compiled = compiled
        self.tokens_per_step = tokens_per_step
        self.trace_path = trace
        self.segments: list[Segment] = [Segment("program")]
        self._current = self.segments[0]
        self._current_index = 0
        self.uncosted: Counter = Counter()
        self.host_fallbacks: Counter = Counter()
        self.host_syncs = 0
        self.signatures: set = set()
        self.graph_keys: set = set()
        self.index = 0
        self.task: Task | None = None
        self.notes: list[str] = []
        self.report: EstimateReport | None = None
        self.kernel_cache: dict = {}
        self._mode: EstimateMode | None = None
        self._context: ProgramContext | None = None
        self._hooks: list = []

    # --- lifecycle -----------------------------------------------------------------------------------------
    def __enter__(self) -> EstimateSession:
        if active.current is not None:
            raise RuntimeError("torch_neuronx.estimate() is already active: estimates do not nest; finish the "
                               "outer one first")
        names = {}
        if self.module_names:
            for root in self.modules:
                names.update({m: n or type(root).__name__ for n, m in root.named_modules()})
        self._seed_memory()
        dtensor_propagation.install()
        self._context = ProgramContext(names)
        self._context.install()
        self._install_memory_hooks()
        self._mode = EstimateMode(self._record_op)
        self._mode.__enter__()
        active.current = self
        return self

    def __exit__(self, *exc) -> None:
        active.current = None
        try:
            if self._mode is not None:
                self._mode.__exit__(*exc)
        finally:
            if self._context is not None:
                self._context.remove()
            for h in self._hooks:
                h.remove()
            self._hooks = []
            dtensor_propagation.uninstall()
        if exc[0] is None:
            report = self.report = self.build_report()
            if self.trace_path:
                report.save_chrome_trace(self.trace_path)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Ops run inside are neither costed nor counted, nor their outputs tracked in memory."""
        mode = self._mode
        if mode is None:
            raise RuntimeError("paused() is for an active estimate: enter the estimate first")
        mode.paused += 1
        try:
            yield
        finally:
            mode.paused -= 1

    @contextlib.contextmanager
    def segment(self, name: str, repeat: float = 1.0, graphs: int = 1, note: str = "") -> Iterator[Segment]:
        """Ops recorded inside form a segment that the step runs ``repeat`` times (e.g. one micro-batch of
        ``K`` accumulated ones); ``graphs`` compiled graphs launch per repetition.

        Raises:
            ValueError: ``repeat`` < 0 or ``graphs`` < 0.
        """
        if repeat < 0 or graphs < 0:
            raise ValueError(f"segment {name!r}: repeat={repeat} and graphs={graphs} must be >= 0")
        seg = Segment(name, repeat, graphs, note)
        self.segments.append(seg)
        previous = (self._current, self._current_index)
        self._current, self._current_index = seg, len(self.segments) - 1
        try:
            yield seg
        finally:
            self._current, self._current_index = previous

    # --- memory --------------------------------------------------------------------------------------------
    def _seed_memory(self) -> None:
        tracked: defaultdict[int, int] = defaultdict(int)
        seen: set[int] = set()

        def add(t, category):
            if isinstance(t, torch.Tensor) and t.device.type == "neuron":
                key = id(t.untyped_storage())
                if key not in seen:
                    seen.add(key)
                    tracked[t.device.index or 0] += t.untyped_storage().nbytes()
                self.memory.track(t, category)

        for root in self.modules:
            for p in root.parameters():
                add(p.to_local() if hasattr(p, "to_local") else p, "parameters")
                if p.grad is not None:
                    add(p.grad.to_local() if hasattr(p.grad, "to_local") else p.grad, "gradients")
            for b in root.buffers():
                add(b, "parameters")
        for opt in self.optimizers:
            for state in opt.state.values():
                for t in pytree.tree_leaves(state):
                    add(t.to_local() if hasattr(t, "to_local") else t, "optimizer_state")
        neuron = getattr(torch, "neuron", None)
        if neuron is not None and neuron.is_available():
            for device in range(neuron.device_count()):
                self.memory.add_constant(device, neuron.memory_allocated(device) - tracked[device])

    def _install_memory_hooks(self) -> None:
        def reclassify_grad(param):
            g = param.grad
            if g is not None:
                self.memory.reclassify(g.to_local() if hasattr(g, "to_local") else g, "gradients")

        fsdp: type | None
        try:
            from torch.distributed.fsdp import FSDPModule as fsdp
        except ImportError:
            fsdp = None
        for root in self.modules:
            for p in root.parameters():
                if p.requires_grad:
                    self._hooks.append(p.register_post_accumulate_grad_hook(reclassify_grad))
            if fsdp is not None:
                for m in root.modules():
                    if isinstance(m, fsdp):
                        self._hooks.append(m.register_forward_pre_hook(lambda *a: self.memory.refresh()))
                        self._hooks.append(m.register_forward_hook(lambda *a: self.memory.refresh()))
        from torch.optim import optimizer as optim

        def after_step(opt, args, kwargs):
            for state in opt.state.values():
                for t in pytree.tree_leaves(state):
                    if isinstance(t, torch.Tensor):
                        self.memory.reclassify(t.to_local() if hasattr(t, "to_local") else t, "optimizer_state")
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        reclassify_grad(p)

        self._hooks.append(optim.register_optimizer_step_post_hook(after_step))

    def tag(self, obj: object, category: str) -> None:
        """Counts the ``neuron`` tensors of ``obj`` (a tensor, a nested structure of tensors, or a transformers
        cache) as ``category`` (e.g. ``"kv_cache"``) in the memory breakdown."""
        tensors = _neuron_tensors(obj)
        for layer in getattr(obj, "layers", ()) or ():
            tensors += _neuron_tensors([getattr(layer, "keys", None), getattr(layer, "values", None)])
        for t in tensors:
            self.memory.reclassify(t, category)

    # --- recording -----------------------------------------------------------------------------------------
    def _event(self, name: str, cost: OpCost, reads=(), writes=(), shapes: str = "", **extra) -> OpEvent:
        ev = OpEvent(self.index, name, cost, self._context.phase if self._context else "other",
                     self._context.module if self._context else "", self._current_index,
                     tuple(reads), tuple(writes), shapes, **extra)
        self.index += 1
        self.memory.event_index = self.index
        self._current.events.append(ev)
        return ev

    @staticmethod
    def _shapes(tensors) -> str:
        shapes = " ".join(f"{list(t.shape)}" for t in tensors[:4])
        return shapes + (f" {dtype_name(tensors[0].dtype)}" if tensors else "")

    def _record_op(self, func, args, kwargs, out) -> None:
        ins = _neuron_tensors((args, kwargs))
        outs = _neuron_tensors(out)
        reads = [(id(t.untyped_storage()), _nbytes(t)) for t in ins]
        written = list(outs)
        schema_args = func._schema.arguments
        for i, a in enumerate(schema_args):
            if a.alias_info is not None and a.alias_info.is_write:
                value = args[i] if i < len(args) else kwargs.get(a.name)
                written += _neuron_tensors(value)
        if is_collective(func):
            call = describe(func, args, kwargs, out)
            if on_neuron_backend(group_of(func, args, kwargs)):
                return                      # the "neuron" process group reports it itself (no double count)
            self._add_collective(call, reads, [(id(t.untyped_storage()), _nbytes(t)) for t in written])
            for t in outs:
                self.memory.track(t, "collective_buffers")
            return
        if is_wait(func):
            self._event(str(func), OpCost("collective"), reads, [], wait=True)
            return
        name = str(func)
        if self._is_nki_op(func):
            cost = OpCost("nki_kernel")
        else:
            cost = self.costs.cost(func, args, kwargs, out)
        cls = cost.op_class
        if cls == "uncosted":
            self.uncosted[name] += 1
        elif cls == "host_fallback":
            self.host_fallbacks[name] += 1
        elif cls == "host_sync":
            self.host_syncs += 1
        if cls not in NO_WORK or cls in ("host_fallback", "uncosted"):
            self.signatures.add((name, tuple((tuple(t.shape), t.dtype) for t in ins),
                                 tuple(repr(a) for a in args if not isinstance(a, (torch.Tensor, list, tuple)))))
        writes = [(id(t.untyped_storage()), _nbytes(t)) for t in written]
        if cls == "data_movement":
            # gathers read (and indexed writes write) only the rows they index, not the whole table
            reads = [(k, min(b, cost.hbm_bytes)) for k, b in reads]
            if func._schema.is_mutable:
                writes = [(k, min(b, cost.hbm_bytes // 2 or b)) for k, b in writes]
        category = _PHASE_CATEGORY[self._context.phase] if self._context else "other"
        for t in outs:
            self.memory.track(t, category)
        self._event(name, cost, reads, writes, self._shapes(ins) if cls not in NO_WORK else "")

    def _is_nki_op(self, func) -> bool:
        import sys

        mod = sys.modules.get("torch_neuronx.nki.torch_op")
        if mod is None:
            return False
        return f"{func.namespace}::{func._overloadpacket.__name__}" in mod.NKI_OPS


    def _add_collective(self, call: CollectiveCall, reads=(), writes=(), note: str = "") -> OpEvent:
        t = self.collectives.time(call.kind, call.nbytes, call.ranks)
        return self._event(f"{call.kind} ({len(call.ranks)} ranks)", OpCost("collective"), reads, writes,
                           f"{call.nbytes} bytes {call.dtype}", collective=call, collective_time=t)

    def add_collective(self, kind: str, nbytes: int, ranks: Iterable[int], group: str,
                       dtype: str = "") -> CollectiveTime:
        """Adds a collective the program does not run here (e.g. data-parallel gradient sync over ranks
        beyond the simulated world) to the current segment; returns its estimated time."""
        call = CollectiveCall(kind, int(nbytes), tuple(ranks), group, dtype)
        return self.collectives.time(call.kind, call.nbytes, call.ranks) if self._add_collective(call) else \
            CollectiveTime(0.0, 0.0, "")

    # --- hooks of other layers ----------------------------------------------------------------------------
    def record_collective(self, op: str, outputs: TensorTree | None, inputs: TensorTree | None,
                          ranks: Iterable[int], group: str, peer: int | None = None) -> None:
        """Called by the ``"neuron"`` process group for each collective it runs (real runs).

        Args:
            op: its op name (``"all_reduce"``, ``"all_gather_into_tensor"``, ``"send to rank 1"``...).
            outputs, inputs: the tensors it writes and reads (a tensor, list or list of lists, or None).
            ranks: global ranks of the group; group: its name; peer: group rank of a send/recv's peer.
        """
        kind = kind_of(op)
        if kind is None:
            return
        outs, ins = _neuron_tensors(outputs), _neuron_tensors(inputs)
        # nccom-test's size: the gathered output of an all-gather, the full input of a reduce-scatter
        sized = ins if kind in ("reduce_scatter", "scatter", "all_to_all", "send") and ins else (outs or ins)
        nbytes = sum(map(_nbytes, sized))
        ranks = tuple(ranks)
        if kind in ("send", "recv") and peer is not None and peer < len(ranks):
            me = torch.distributed.get_rank() if torch.distributed.is_initialized() else ranks[0]
            ranks = (me, ranks[peer])
        call = CollectiveCall(kind, nbytes, ranks, group, dtype_name(sized[0].dtype) if sized else "")
        self._add_collective(call, [(id(t.untyped_storage()), _nbytes(t)) for t in ins + outs],
                             [(id(t.untyped_storage()), _nbytes(t)) for t in outs])
        for t in outs:
            self.memory.track(t, "collective_buffers")

    def record_nki_kernel(self, name: str, platform: str, latency_s: float, engine_busy_s: dict, flops: float,
                          dma_bytes: int, inputs: Sequence[torch.Tensor] = (), outputs: Any = ()) -> None:
        """Called by ``nki_op`` for each NKI kernel launch, costed by the NKI simulator's cost model on this
        estimate's platform: ``latency_s`` of the launch, busy seconds per engine (tensor, vector, scalar,
        gpsimd, dma), matmul ``flops``, ``dma_bytes`` moved; ``inputs``: the kernel's tensor arguments,
        ``outputs``: what it returned (a tensor or a nested structure of them)."""
        info = KernelInfo(name, platform, latency_s, dict(engine_busy_s), flops, dma_bytes)
        ins, outs = _neuron_tensors(inputs), _neuron_tensors(outputs)
        cost = OpCost("nki_kernel", int(info.flops), dict(info.engine_busy_s), int(info.dma_bytes))
        self.signatures.add(("nki:" + info.name, tuple((tuple(t.shape), t.dtype) for t in ins), ()))
        self._event(f"nki:{info.name}", cost, [(id(t.untyped_storage()), _nbytes(t)) for t in ins],
                    [(id(t.untyped_storage()), _nbytes(t)) for t in outs], self._shapes(ins), kernel=info)

    def launch_graph(self, launcher: GraphLauncher, args: tuple[Any, ...]) -> Any:
        """Runs one launch of a compiled graph (a :class:`~.graphs.GraphLauncher`) and records it: one event
        costed from the graph's ATen ops (:func:`~.graphs.graph_cost`), its outputs counted in memory."""
        from .graphs import graph_cost

        boxed = launcher._boxed_call and len(args) == 1 and isinstance(args[0], list)
        inputs = list(args[0]) if boxed else list(args)
        with self.paused():
            out = launcher.compiled(*args)
        cached = launcher.costs.get(id(self))
        if cached is None:
            events, kernels, collectives, source = graph_cost(launcher.gm, self, launcher.inductor)
            info = GraphInfo(f"{launcher.kind} {launcher.key[:12]}",
                             tuple((dict(k.engine_s), k.hbm_bytes, k.dma_transfers) for k in kernels),
                             sum(len(k.events) for k in kernels if not k.extern),
                             tuple((dict(e.cost.engine_s), e.cost.hbm_bytes, e.cost.dma_transfers) for e in events),
                             source)
            engines: dict = {}
            for e in events:
                for engine, s in e.cost.engine_s.items():
                    engines[engine] = engines.get(engine, 0.0) + s
            cost = OpCost("compiled_graph", sum(e.cost.flops for e in events), engines,
                          sum(k.hbm_bytes for k in kernels))
            cached = launcher.costs[id(self)] = (info, cost, collectives)
        info, cost, collectives = cached
        self.graph_keys.add(launcher.key)
        ins, outs = _neuron_tensors(inputs), _neuron_tensors(out)
        category = _PHASE_CATEGORY[self._context.phase] if self._context else "other"
        for t in outs:
            self.memory.track(t, category)
        self._event(f"graph:{info.name}", cost, [(id(t.untyped_storage()), _nbytes(t)) for t in ins],
                    [(id(t.untyped_storage()), _nbytes(t)) for t in outs], self._shapes(ins), graph=info)
        for call in collectives:
            self._add_collective(call)
        return out

    # --- result --------------------------------------------------------------------------------------------
    def build_report(self) -> EstimateReport:
        """The :class:`~.report.EstimateReport` of what was recorded (also set as ``report`` on exit)."""
        from .report import build_report

        return build_report(self)


def estimate(platform: str | Platform = "trn2", lnc: int | None = None, instance: str | None = None,
             instances: int = 1, price_per_hour: float | None = None,
             modules: torch.nn.Module | Sequence[torch.nn.Module | None] | None = (),
             optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] = (),
             compiled: bool | None = None, constants: ModelConstants | None = None,
             tokens_per_step: int | None = None, trace: str | None = None,
             module_names: bool = False) -> EstimateSession:
    """Estimate what the code run inside ``with`` costs on Trainium.

    Args:
        platform: ``"trn1"``, ``"trn2"``, ``"trn3"`` or ``"inf2"`` (rows of ``torch_neuronx/runtime/platforms.py``).
        lnc: physical NeuronCores per logical core (default: the platform's, 2 on trn2/trn3).
        instance: EC2 instance type (default: the platform's largest, e.g. trn2.48xlarge).
        instances: number of instances (ranks are laid out over their logical cores in order).
        price_per_hour: USD per instance-hour; default the table's on-demand price (None for trn2/trn3).
        modules: the model(s), a module or a sequence of them (None entries skipped): their parameters,
            gradients and buffers are counted in memory from the start, and module names label the top ops.
        optimizers: an optimizer or a sequence of them: their state is counted in memory from the start.
        compiled: headline estimate as compiled graphs (True) or eager ops (False); None: compiled if the
            program ran compiled graphs, else eager. Both are always in the report.
        constants: fitted constants to use instead of ``calibration.default_constants()``.
        tokens_per_step: tokens one step processes (for tokens/s and $ per million tokens).
        trace: write the chrome trace (Perfetto) to this path on exit.
        module_names: label the top ops with the names of ``modules``' submodules (forward hooks on them;
            Dynamo guards on module hooks, so a model compiled with them recompiles without them).

    Returns:
        the session; ``session.report`` after the block.

    Raises:
        ValueError: unknown platform / instance, LNC not allowed on the platform, ``lnc`` / ``instances`` /
            ``tokens_per_step`` < 1, a price < 0 or not finite, a ``trace`` folder that does not exist or
            cannot be written.
        TypeError: ``lnc``, ``instances`` or ``tokens_per_step`` not an int (``2.5`` would be truncated or a
            fraction of an instance), a price that is not a number, ``compiled`` not a bool or None, ``modules`` /
            ``optimizers`` / ``constants`` of the wrong type.
        RuntimeError: an estimate is already active.
    """
    return EstimateSession(platform, lnc, instance, instances, price_per_hour, modules, optimizers, compiled,
                           constants, tokens_per_step, trace, module_names)
