#include "conformance/judge/requested_outputs.hpp"

namespace sdpa::conformance {

RequestedOutputs without_unreturned_outputs(const Capabilities& caps, const Problem& p) {
  RequestedOutputs r{p, {}};
  const bool backward_reads_lse = p.backward && caps.backward && caps.backward_needs_lse;
  if (p.want_lse && !caps.lse && !backward_reads_lse) {
    r.judged.want_lse = false;
    r.not_returned.push_back("lse");
  }
  if (p.want_weights && !caps.weights) {
    r.judged.want_weights = false;
    r.not_returned.push_back("weights");
  }
  // d bias is the gradient of an input the backward has anyway; a backward without it still
  // gives dQ, dK, dV. A case whose backend has no backward keeps asking for it (NOT_SUPPORTED).
  if (p.bias_grad && caps.backward && !caps.bias_gradient) {
    r.judged.bias_grad = false;
    r.not_returned.push_back("dbias");
  }
  return r;
}

}  // namespace sdpa::conformance
