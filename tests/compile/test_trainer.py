"""TrainingArguments(torch_compile=True) on neuron: transformers picks backend "neuron"
(dynamic=False); a small Llama trained on batches padded to multiples of 128 compiles at most
one graph per distinct padded shape and matches the eager CPU loss to 1e-4."""
from __future__ import annotations

import torch

import torch_neuronx.compile as tnc

LENGTHS = [40, 100, 130, 77, 128, 200, 60, 90]  # padded: 128, 256, 256, 128 per batch of 2


class _Rows(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.rows = [torch.randint(1, 256, (n,), generator=g) for n in LENGTHS]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return {"input_ids": self.rows[i]}


def _collate(rows):
    ids = [tnc.pad_to_multiple(r["input_ids"], 128, value=0) for r in rows]
    length = max(x.numel() for x in ids)
    input_ids = torch.stack([tnc.pad_to_multiple(x, length, value=0) for x in ids])
    mask = torch.zeros_like(input_ids)
    for i, r in enumerate(rows):
        mask[i, : r["input_ids"].numel()] = 1
    return {"input_ids": input_ids, "attention_mask": mask,
            "labels": input_ids.masked_fill(mask == 0, -100)}


def _train(model, compile: bool, use_cpu: bool, out_dir: str) -> tuple[list[float], object]:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    losses = []

    class Record(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=2, max_steps=4,
                             logging_steps=1, learning_rate=1e-3, report_to=[], seed=0,
                             torch_compile=compile, use_cpu=use_cpu, save_strategy="no",
                             dataloader_num_workers=0, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=_Rows(), data_collator=_collate,
                      callbacks=[Record()])
    trainer.train()
    return losses, args


def test_trainer_torch_compile_on_neuron(tiny_llama, tmp_path):
    from transformers import LlamaForCausalLM

    ref_losses, _ = _train(tiny_llama(0).train(), False, True, str(tmp_path / "cpu"))
    model = tiny_llama(0).train()
    losses, args = _train(model, True, False, str(tmp_path / "neuron"))
    assert args.torch_compile_backend == "neuron" and args.device.type == "neuron"
    assert isinstance(model, LlamaForCausalLM) and next(model.parameters()).device.type == "neuron"
    assert len(losses) == len(ref_losses) == 4
    for a, b in zip(losses, ref_losses, strict=True):
        assert abs(a - b) <= 1e-4, (losses, ref_losses)
    m = tnc.get_dynamo_metrics()
    distinct_shapes = 2  # (2, 128) and (2, 256)
    assert 1 <= m["graphs"] <= distinct_shapes
    # every forward graph has its backward graph; none more than once per shape
    assert m["graphs_compiled"] + m["cache_hits_memory"] + m["cache_hits_disk"] == 2 * m["graphs"]
    assert m["fallbacks"] == []
