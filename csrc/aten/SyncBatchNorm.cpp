// The batch-norm pieces nn.SyncBatchNorm calls between its collectives
// (torch/nn/modules/_functions.py): per-rank statistics, their combination
// across ranks, the normalization, and the two halves of the backward. PyTorch
// has CUDA kernels only for these and SyncBatchNorm accepts PrivateUse1 inputs,
// so the boxed fallback would find no CPU kernel. Each is written with neuron
// ops (dispatched and counted like any op). Statistics are float32 for
// float16/bfloat16 inputs, as CUDA computes them; channel = dim 1.
#include "aten/Tracking.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

namespace torch_neuronx {
namespace {

bool given(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined();
}

// Every dim but the channel dim (1).
std::vector<int64_t> reduce_dims(const at::Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, "batch norm expects an input of at least 2 dims (N, C, ...), got ",
              input.sizes());
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) {
    dims.push_back(d);
  }
  return dims;
}

at::ScalarType stats_dtype(const at::Tensor& input) {
  const auto t = input.scalar_type();
  return t == at::kHalf || t == at::kBFloat16 ? at::kFloat : t;
}

// A per-channel vector (C) shaped to broadcast against the input (1, C, 1, ...).
at::Tensor per_channel(const at::Tensor& v, const at::Tensor& input) {
  std::vector<int64_t> shape(input.dim(), 1);
  shape[1] = v.numel();
  return v.reshape(shape);
}

std::tuple<at::Tensor, at::Tensor> stats(const at::Tensor& input, double eps) {
  TORCH_NEURONX_TRACK("aten::batch_norm_stats");
  const auto dims = reduce_dims(input);
  const at::Tensor x = input.to(stats_dtype(input));
  at::Tensor mean = x.mean(dims);
  at::Tensor var = (x - per_channel(mean, x)).square().mean(dims);  // biased, as CUDA's
  return {mean, (var + eps).rsqrt()};
}

// Combines per-rank (mean, invstd) rows weighted by counts; updates the running
// statistics (unbiased variance) like CUDA's kernel.
std::tuple<at::Tensor, at::Tensor> gather_with_counts(
    const at::Tensor& mean,
    const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var,
    double momentum,
    double eps,
    const at::Tensor& counts) {
  const at::Tensor c = counts.to(mean.scalar_type()).reshape({-1, 1});  // (world, 1)
  const at::Tensor n = c.sum();
  at::Tensor g_mean = (mean * c).sum(0) / n;
  const at::Tensor var_i = invstd.square().reciprocal() - eps;  // each rank's biased variance
  at::Tensor g_var = ((var_i + (mean - g_mean).square()) * c).sum(0) / n;
  at::Tensor g_invstd = (g_var + eps).rsqrt();
  at::NoGradGuard no_grad;
  if (given(running_mean)) {
    running_mean->mul_(1 - momentum).add_(g_mean.to(running_mean->scalar_type()), momentum);
  }
  if (given(running_var)) {
    const at::Tensor unbiased = g_var * n / (n - 1);
    running_var->mul_(1 - momentum).add_(unbiased.to(running_var->scalar_type()), momentum);
  }
  return {g_mean, g_invstd};
}

std::tuple<at::Tensor, at::Tensor> gather_stats_with_counts(
    const at::Tensor& /*input*/,
    const at::Tensor& mean,
    const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var,
    double momentum,
    double eps,
    const at::Tensor& counts) {
  TORCH_NEURONX_TRACK("aten::batch_norm_gather_stats_with_counts");
  return gather_with_counts(mean, invstd, running_mean, running_var, momentum, eps, counts);
}

std::tuple<at::Tensor, at::Tensor> gather_stats(
    const at::Tensor& /*input*/,
    const at::Tensor& mean,
    const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var,
    double momentum,
    double eps,
    int64_t count) {
  TORCH_NEURONX_TRACK("aten::batch_norm_gather_stats");
  const at::Tensor counts = at::full({mean.size(0)}, static_cast<double>(count), mean.options());
  return gather_with_counts(mean, invstd, running_mean, running_var, momentum, eps, counts);
}

at::Tensor elemt(
    const at::Tensor& input,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias,
    const at::Tensor& mean,
    const at::Tensor& invstd,
    double /*eps*/) {
  TORCH_NEURONX_TRACK("aten::batch_norm_elemt");
  const at::Tensor x = input.to(stats_dtype(input));
  at::Tensor out = (x - per_channel(mean, x)) * per_channel(invstd, x);
  if (given(weight)) {
    out = out * per_channel(weight->to(out.scalar_type()), x);
  }
  if (given(bias)) {
    out = out + per_channel(bias->to(out.scalar_type()), x);
  }
  return out.to(input.scalar_type());
}

at::Tensor& elemt_out(
    const at::Tensor& input,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias,
    const at::Tensor& mean,
    const at::Tensor& invstd,
    double eps,
    at::Tensor& out) {
  at::Tensor result = elemt(input, weight, bias, mean, invstd, eps);
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> backward_reduce(
    const at::Tensor& grad_out,
    const at::Tensor& input,
    const at::Tensor& mean,
    const at::Tensor& invstd,
    const std::optional<at::Tensor>& weight,
    bool input_g,
    bool weight_g,
    bool bias_g) {
  TORCH_NEURONX_TRACK("aten::batch_norm_backward_reduce");
  const auto dims = reduce_dims(input);
  const at::Tensor dy = grad_out.to(stats_dtype(input));
  const at::Tensor x = input.to(stats_dtype(input));
  const at::Tensor sum_dy = dy.sum(dims);
  const at::Tensor sum_dy_xmu = (dy * (x - per_channel(mean, x))).sum(dims);
  at::Tensor grad_weight;
  at::Tensor grad_bias;
  if (weight_g) {
    grad_weight = sum_dy_xmu * invstd;
    if (given(weight)) {
      grad_weight = grad_weight.to(weight->scalar_type());
    }
  }
  if (bias_g) {
    grad_bias = given(weight) ? sum_dy.to(weight->scalar_type()) : sum_dy;
  }
  return {input_g ? sum_dy : at::Tensor(), input_g ? sum_dy_xmu : at::Tensor(), grad_weight, grad_bias};
}

at::Tensor backward_elemt(
    const at::Tensor& grad_out,
    const at::Tensor& input,
    const at::Tensor& mean,
    const at::Tensor& invstd,
    const std::optional<at::Tensor>& weight,
    const at::Tensor& sum_dy,
    const at::Tensor& sum_dy_xmu,
    const at::Tensor& count) {
  TORCH_NEURONX_TRACK("aten::batch_norm_backward_elemt");
  const at::Tensor x = input.to(stats_dtype(input));
  const at::Tensor dy = grad_out.to(x.scalar_type());
  const at::Tensor n = count.to(x.scalar_type()).sum();
  const at::Tensor m = per_channel(mean, x);
  const at::Tensor s = per_channel(invstd, x);
  const at::Tensor mean_dy = per_channel(sum_dy, x) / n;
  const at::Tensor mean_dy_xmu = per_channel(sum_dy_xmu, x) / n;
  at::Tensor scale = given(weight) ? s * per_channel(weight->to(x.scalar_type()), x) : s;
  at::Tensor grad_in = (dy - mean_dy - (x - m) * s.square() * mean_dy_xmu) * scale;
  return grad_in.to(input.scalar_type());
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("batch_norm_stats", stats);
  m.impl("batch_norm_gather_stats", gather_stats);
  m.impl("batch_norm_gather_stats_with_counts", gather_stats_with_counts);
  m.impl("batch_norm_elemt", elemt);
  m.impl("batch_norm_elemt.out", elemt_out);
  m.impl("batch_norm_backward_reduce", backward_reduce);
  m.impl("batch_norm_backward_elemt", backward_elemt);
}

} // namespace torch_neuronx
