// The fused LSTM and GRU cells. PyTorch's RNN code (aten/native/RNN.cpp)
// sends every CUDA, XPU and PrivateUse1 input of nn.LSTM, nn.GRU, nn.LSTMCell
// and nn.GRUCell to _thnn_fused_lstm_cell / _thnn_fused_gru_cell, which have
// CUDA kernels only, so the boxed fallback would find no CPU kernel to run.
// Here each cell is the gate arithmetic of the CPU's unfused cell written as
// neuron ops (each one dispatched and counted like any op), and each backward
// is the closed-form gradient of that arithmetic. The workspace layouts are
// CUDA's: LSTM [i, f, g, o] (activated gates, (B, 4H)); GRU [r, z, n, hx, hn]
// ((B, 5H), hn = the hidden state's new-gate term, bias included). Autograd
// uses derivatives.yaml: these backward kernels without create_graph, the
// composite _thnn_differentiable_*_cell_backward with it.
#include "aten/Tracking.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <torch/library.h>

namespace torch_neuronx {
namespace {

bool given(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined();
}

// x * (1 - x): the derivative of sigmoid in terms of its output.
at::Tensor dsigmoid(const at::Tensor& s) {
  return s * at::rsub(s, 1);
}

// 1 - y^2: the derivative of tanh in terms of its output.
at::Tensor dtanh(const at::Tensor& y) {
  return at::rsub(y * y, 1);
}

void check_biases(const char* op, const std::optional<at::Tensor>& input_bias,
                  const std::optional<at::Tensor>& hidden_bias) {
  TORCH_CHECK(given(input_bias) == given(hidden_bias), op,
              ": input_bias and hidden_bias must be given together (both or neither)");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates,
    const at::Tensor& hidden_gates,
    const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias,
    const std::optional<at::Tensor>& hidden_bias) {
  TORCH_NEURONX_TRACK("aten::_thnn_fused_lstm_cell");
  check_biases("_thnn_fused_lstm_cell", input_bias, hidden_bias);
  at::Tensor hgates = given(hidden_bias) ? hidden_gates + *hidden_bias : hidden_gates;
  at::Tensor igates = given(input_bias) ? input_gates + *input_bias : input_gates;
  const auto chunks = (hgates + igates).chunk(4, 1);
  const at::Tensor i = chunks[0].sigmoid();
  const at::Tensor f = chunks[1].sigmoid();
  const at::Tensor g = chunks[2].tanh();
  const at::Tensor o = chunks[3].sigmoid();
  at::Tensor cy = f * cx + i * g;
  at::Tensor hy = o * cy.tanh();
  return {hy, cy, at::cat({i, f, g, o}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy,
    const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx,
    const at::Tensor& cy,
    const at::Tensor& workspace,
    bool has_bias) {
  TORCH_NEURONX_TRACK("aten::_thnn_fused_lstm_cell_backward_impl");
  if (!given(grad_hy) && !given(grad_cy)) {
    return {};
  }
  const auto w = workspace.chunk(4, 1);
  const at::Tensor& i = w[0];
  const at::Tensor& f = w[1];
  const at::Tensor& g = w[2];
  const at::Tensor& o = w[3];
  const at::Tensor tanh_cy = cy.tanh();
  at::Tensor gcx;  // d loss / d cy, through hy and directly
  at::Tensor go;
  if (given(grad_hy)) {
    gcx = *grad_hy * o * dtanh(tanh_cy);
    go = *grad_hy * tanh_cy * dsigmoid(o);
  } else {
    gcx = at::zeros_like(cy);
    go = at::zeros_like(o);
  }
  if (given(grad_cy)) {
    gcx = gcx + *grad_cy;
  }
  at::Tensor grad_gates =
      at::cat({gcx * g * dsigmoid(i), gcx * cx * dsigmoid(f), gcx * i * dtanh(g), go}, 1);
  at::Tensor grad_cx = gcx * f;
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> fused_gru_cell(
    const at::Tensor& input_gates,
    const at::Tensor& hidden_gates,
    const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias,
    const std::optional<at::Tensor>& hidden_bias) {
  TORCH_NEURONX_TRACK("aten::_thnn_fused_gru_cell");
  check_biases("_thnn_fused_gru_cell", input_bias, hidden_bias);
  const auto ic = (given(input_bias) ? input_gates + *input_bias : input_gates).chunk(3, 1);
  const auto hc = (given(hidden_bias) ? hidden_gates + *hidden_bias : hidden_gates).chunk(3, 1);
  const at::Tensor r = (hc[0] + ic[0]).sigmoid();
  const at::Tensor z = (hc[1] + ic[1]).sigmoid();
  const at::Tensor n = (ic[2] + hc[2] * r).tanh();
  at::Tensor hy = (hx - n) * z + n;
  return {hy, at::cat({r, z, n, hx, hc[2]}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy,
    const at::Tensor& workspace,
    bool has_bias) {
  TORCH_NEURONX_TRACK("aten::_thnn_fused_gru_cell_backward");
  const auto w = workspace.chunk(5, 1);
  const at::Tensor& r = w[0];
  const at::Tensor& z = w[1];
  const at::Tensor& n = w[2];
  const at::Tensor& hx = w[3];
  const at::Tensor& hn = w[4];
  const at::Tensor gz = grad_hy * (hx - n) * dsigmoid(z);
  const at::Tensor gn = grad_hy * at::rsub(z, 1) * dtanh(n);  // at the new gate's tanh input
  const at::Tensor gr = gn * hn * dsigmoid(r);
  at::Tensor grad_input_gates = at::cat({gr, gz, gn}, 1);
  at::Tensor grad_hidden_gates = at::cat({gr, gz, gn * r}, 1);
  at::Tensor grad_hx = grad_hy * z;
  at::Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : at::Tensor();
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", fused_lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", fused_lstm_cell_backward_impl);
  m.impl("_thnn_fused_gru_cell", fused_gru_cell);
  m.impl("_thnn_fused_gru_cell_backward", fused_gru_cell_backward);
}

} // namespace torch_neuronx
