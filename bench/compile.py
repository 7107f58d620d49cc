"""torch.compile(backend="neuron") against Inductor on CPU and against eager neuron, in one run.

    python bench/compile.py [--repeats 7] [--check]

Three identical Llamas (hidden 256, intermediate 688, 4 layers, 4 heads, vocab 2048; same seed and
state dict; eager attention on every side, see the note below): one on CPU compiled with
``backend="inductor"``, one on ``neuron`` compiled with ``backend="neuron"``, one on ``neuron`` eager.
Measured (median seconds of ``--repeats`` interleaved runs after warm-up, which also absorbs
compilation; the device is synchronized around every timed region):

  * ``forward``: logits of 4 x 128 tokens, ``torch.no_grad``;
  * ``train_step``: compiled forward + backward on 4 x 128 tokens, then AdamW (not compiled) on
    the model's device;
  * ``decode_step``: one greedy decode step with a static KV cache: ``generate(max_new_tokens=24,
    cache_implementation="static")`` from a 1 x 32 prompt, divided by 24 (transformers compiles
    the decode step itself: ``backend="neuron"`` on neuron, Inductor with ``_compile_all_devices``
    on CPU, ``disable_compile=True`` for eager neuron; the eager prefill is included on all sides).

Ratios: compiled neuron ÷ Inductor CPU, as medians' ratio and as ``paired`` (the median over repeats
of the two runs made one after the other; the goal ≤ 1.03 is judged on it, as it cancels the
machine's slower drift; its 95% confidence interval is printed beside it: a goal is certified when the
interval's upper end meets it), and compiled neuron ÷ eager neuron (expect < 1). ``--check`` exits with
status 1 when a goal is missed.

Note: attention is ``attn_implementation="eager"`` because SDPA on neuron cannot be traced by
Dynamo yet (the device's ``_fused_sdp_choice`` aliases fake tensors to CPU; see the compile
notes), and the comparison must run the same graph on every side.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
from stats import median_ci

LLAMA = dict(vocab_size=2048, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
             attn_implementation="eager", bos_token_id=1, eos_token_id=2, pad_token_id=0)
BATCH, SEQ = 4, 128
PROMPT_LEN, NEW_TOKENS = 32, 24
# Judged on the paired ratio (see compare) for neuron ÷ Inductor CPU.
GOALS = {"paired": 1.03, "neuron/eager_neuron": 1.0}


def sync(device: torch.device) -> None:
    if device.type == "neuron":
        torch.neuron.synchronize()


def timed(fn, device) -> float:
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t0


def compare(fns: dict, repeats: int, warmup: int) -> dict:
    """Median seconds per entry of ``fns`` (name → (callable, device)), runs interleaved.

    Also ``"paired"``: the median over repeats of ``neuron`` seconds ÷ ``inductor_cpu`` seconds of the
    same repeat (run one after the other), which cancels the machine's slower drift, and
    ``"paired_ci"``: its 95% confidence interval (``stats.median_ci``).
    """
    for _ in range(warmup):
        for fn, _dev in fns.values():
            fn()
    times = {k: [] for k in fns}
    names = list(fns)
    for i in range(repeats):
        order = names if i % 2 == 0 else names[::-1]
        for k in order:
            fn, dev = fns[k]
            times[k].append(timed(fn, dev))
    out = {k: statistics.median(v) for k, v in times.items()}
    paired = [n / c for n, c in zip(times["neuron"], times["inductor_cpu"], strict=True)]
    out["paired"] = statistics.median(paired)
    out["paired_ci"] = median_ci(paired)
    return out


def build():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**LLAMA)
    torch.manual_seed(0)
    cpu = LlamaForCausalLM(config)
    neuron_c = LlamaForCausalLM(config)
    neuron_e = LlamaForCausalLM(config)
    neuron_c.load_state_dict(cpu.state_dict())
    neuron_e.load_state_dict(cpu.state_dict())
    return cpu, neuron_c.to("neuron"), neuron_e.to("neuron")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)

    import torch_neuronx.compile as tnc
    from transformers.generation import CompileConfig

    tnc.register()  # no-op with the torch_dynamo_backends entry point installed
    cpu_dev, nd = torch.device("cpu"), torch.device("neuron")
    cpu, nc, ne = build()
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(3, LLAMA["vocab_size"], (BATCH, SEQ), generator=gen)
    prompt = torch.randint(3, LLAMA["vocab_size"], (1, PROMPT_LEN), generator=gen)
    dx, dprompt = x.to(nd), prompt.to(nd)
    results: dict = {}
    t_start = time.perf_counter()

    # forward
    for m in (cpu, nc, ne):
        m.eval()
    f_cpu = torch.compile(cpu, backend="inductor", dynamic=False)
    f_nc = torch.compile(nc, backend="neuron")
    with torch.no_grad():
        ref = cpu(input_ids=x).logits
        results["forward_max_abs_diff"] = max(
            (f_cpu(input_ids=x).logits - ref).abs().max().item(),
            (f_nc(input_ids=dx).logits.cpu() - ref).abs().max().item())
        results["forward"] = compare({
            "inductor_cpu": (lambda: f_cpu(input_ids=x), cpu_dev),
            "neuron": (lambda: f_nc(input_ids=dx), nd),
            "eager_neuron": (lambda: ne(input_ids=dx), nd)}, args.repeats, warmup=2)

    # train step
    def train(model, ids, dev):
        model.train()
        step_model = model if dev == "eager" else torch.compile(model, backend=dev, dynamic=False)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def go():
            loss = step_model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return go

    results["train_step"] = compare({
        "inductor_cpu": (train(cpu, x, "inductor"), cpu_dev),
        "neuron": (train(nc, dx, "neuron"), nd),
        "eager_neuron": (train(ne, dx, "eager"), nd)}, args.repeats, warmup=2)

    # decode step (static cache; transformers compiles the decode step)
    cpu_cc = CompileConfig(backend="inductor", dynamic=False, mode="default")
    cpu_cc._compile_all_devices = True

    def decode(model, ids, **kw):
        model.eval()

        def go():
            with torch.no_grad():
                out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                     max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                     do_sample=False, cache_implementation="static", **kw)
            assert out.shape[1] == PROMPT_LEN + NEW_TOKENS
        return go

    t = compare({
        "inductor_cpu": (decode(cpu, prompt, compile_config=cpu_cc), cpu_dev),
        "neuron": (decode(nc, dprompt), nd),
        "eager_neuron": (decode(ne, dprompt, disable_compile=True), nd)}, args.repeats, warmup=2)
    results["decode_step"] = {k: (v if k.startswith("paired") else v / NEW_TOKENS) for k, v in t.items()}

    missed = []
    print(f"{'benchmark':12} {'inductor CPU':>13} {'neuron comp.':>13} {'neuron eager':>13} "
          f"{'comp/ind.CPU':>13} {'paired (95% CI)':>20} {'comp/eager':>11}")
    for name in ("forward", "train_step", "decode_step"):
        r = results[name]
        a, b = r["neuron"] / r["inductor_cpu"], r["neuron"] / r["eager_neuron"]
        r["neuron/inductor_cpu"], r["neuron/eager_neuron"] = a, b
        lo, hi = r["paired_ci"]
        print(f"{name:12} {r['inductor_cpu'] * 1e3:>10.2f} ms {r['neuron'] * 1e3:>10.2f} ms "
              f"{r['eager_neuron'] * 1e3:>10.2f} ms {a:>13.3f} {r['paired']:>7.3f} ({lo:.3f}-{hi:.3f}) {b:>11.3f}")
        for key, goal in GOALS.items():
            if r[key] > goal:
                missed.append(f"{name} {key} {r[key]:.3f} > {goal}")
    m = tnc.get_dynamo_metrics()
    print(f"forward max |logits diff| vs eager CPU: {results['forward_max_abs_diff']:.2e}")
    print(f"backend neuron: {m['graphs']} graphs, {m['graphs_compiled']} compiled, "
          f"{m['cache_hits_memory'] + m['cache_hits_disk']} cache hits, "
          f"{m['compile_seconds']:.1f} s compiling; total {time.perf_counter() - t_start:.0f} s; "
          f"threads {torch.get_num_threads()}")
    if os.environ.get("BENCH_JSON"):
        print(json.dumps(results, indent=1))
    if missed:
        print("goals missed: " + "; ".join(missed))
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
