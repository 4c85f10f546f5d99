#include "python/src/python_backend.hpp"

#include <stdexcept>

#include "python/src/arrays.hpp"

namespace sdpa::python {

PythonBackend::PythonBackend(std::string name, nb::object fn, nb::object grad_fn,
                             PyContract contract)
    : name_(std::move(name)),
      fn_(std::move(fn)),
      grad_fn_(std::move(grad_fn)),
      contract_(std::move(contract)) {
  contract_.caps.backward = !grad_fn_.is_none();
}

PrecisionContract PythonBackend::precision(DType dtype) const {
  PrecisionContract c = contract_.precision;
  if (contract_.p_type_is_input) c.p_type = dtype;
  if (contract_.ds_type_is_input) c.ds_type = dtype;
  return c;
}

Support PythonBackend::supports(const LoweredProblem& p, const Device& device) const {
  Support s;
  check_capabilities(contract_.caps, p, device, s);
  return s;
}

namespace {

// Resets the case's binding to a run's buffers when the call ends, however it ends.
struct Binding {
  PyCase* c;
  ~Binding() {
    c->live = nullptr;
    c->live_d_out = nullptr;
    c->live_problem = nullptr;
  }
};

// Calls f(py_case) with the case bound to a run's buffers (and dO) for the call; a Python
// exception becomes a std::runtime_error beginning with `what`. The GIL must be held.
nb::object call_bound(const nb::object& f, const nb::object& py_case, const Problem& problem,
                      const Buffers& buffers, const void* d_out, const char* what) {
  PyCase* pc = nb::inst_ptr<PyCase>(py_case);
  pc->live = &buffers;
  pc->live_problem = &problem;
  pc->live_d_out = d_out;
  Binding unbind{pc};
  try {
    return f(py_case);
  } catch (nb::python_error& e) {
    throw std::runtime_error(std::string(what) + " raised " + e.what());
  }
}

}  // namespace

// An adapter of the harness: the Python function answers for the case, so its outputs are
// copied in the case's own problem's layouts.
void PythonBackend::run(const LoweredProblem& lowered, const Device&, const RunOptions&) const {
  const Problem& p = lowered.source();
  const Buffers buffers = lowered.buffers();
  nb::gil_scoped_acquire gil;
  nb::object out = call_bound(fn_, case_, p, buffers, nullptr, "the function");
  nb::object o, lse, weights;
  if (nb::isinstance<nb::dict>(out)) {
    nb::dict d = nb::borrow<nb::dict>(out);
    for (auto [key, value] : d) {
      const std::string k = nb::str(key).c_str();
      if (k == "o") {
        o = nb::borrow(value);
      } else if (k == "lse") {
        lse = nb::borrow(value);
      } else if (k == "weights") {
        weights = nb::borrow(value);
      } else {
        throw std::runtime_error("the function returned a dict with key '" + k +
                                 "' (known: o, lse, weights)");
      }
    }
  } else if (nb::isinstance<nb::tuple>(out)) {
    nb::tuple t = nb::borrow<nb::tuple>(out);
    if (t.size() != 2)
      throw std::runtime_error("the function returned a tuple of " + std::to_string(t.size()) +
                               " values; a tuple is (o, lse)");
    o = t[0];
    lse = t[1];
  } else {
    o = out;
  }
  if (!o.is_valid() || o.is_none()) throw std::runtime_error("the function returned no output o");
  try {
    copy_into(o, "o", p.dtype, o_view(p), buffers.o);
    if (p.want_lse) {
      if (!lse.is_valid() || lse.is_none())
        throw std::invalid_argument(
            "the case asks for the LSE (`lse`) and the function returned none (return "
            "{\"o\": o, \"lse\": lse}, or declare lse=False in its contract)");
      StridedView lv = lse_view(p);
      nb::object lse4 = lse.attr("reshape")(nb::make_tuple(p.batch, p.heads_q, p.len_q, 1));
      copy_into(lse4, "lse", DType::f32, lv, buffers.lse, true);
    }
    if (p.want_weights) {
      if (!weights.is_valid() || weights.is_none())
        throw std::invalid_argument(
            "the case asks for the attention weights (`attnw`) and the function returned none");
      copy_into(weights, "weights", p.dtype, weights_view(p), buffers.weights);
    }
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("the function's output ") + e.what());
  }
}

void PythonBackend::run_backward(const LoweredProblem& lowered, const Device&,
                                 const RunOptions&) const {
  const Problem& p = lowered.source();
  const Buffers forward = lowered.buffers();
  const GradientPointers grads = lowered.gradients();
  nb::gil_scoped_acquire gil;
  nb::object out = call_bound(grad_fn_, case_, p, forward, grads.d_out, "the gradient");
  if (!nb::isinstance<nb::dict>(out))
    throw std::runtime_error("the gradient function returned no dict of dq, dk, dv");
  nb::dict d = nb::borrow<nb::dict>(out);
  try {
    for (const char* name : {"dq", "dk", "dv"}) {
      if (!d.contains(name) || d[name].is_none())
        throw std::invalid_argument(std::string(name) + " is missing (an input without gradient?)");
    }
    copy_into(d["dq"], "dq", p.dtype, q_view(p), grads.dq);
    copy_into(d["dk"], "dk", p.dtype, k_view(p), grads.dk);
    copy_into(d["dv"], "dv", p.dtype, v_view(p), grads.dv);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("the function's gradient ") + e.what());
  }
}

}  // namespace sdpa::python
