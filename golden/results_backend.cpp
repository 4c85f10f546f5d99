#include "golden/results_backend.hpp"

#include <charconv>
#include <stdexcept>

#include "core/spec_fields.hpp"

namespace sdpa::golden {

PrecisionContract parse_contract(std::string_view text) {
  PrecisionContract c;
  c.accumulate = DType::f32;
  bool p_given = false;
  for (std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    const std::string key(item.substr(0, eq == std::string_view::npos ? item.size() : eq));
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    auto bad = [&](const std::string& what) {
      return std::invalid_argument("--contract '" + std::string(text) + "': key '" + key +
                                   "': " + what + ", got '" + std::string(value) + "'");
    };
    if (key == "acc" || key == "p") {
      const auto t = parse_dtype(value);
      if (!t) throw bad("expected f64, f32, f16 or bf16");
      (key == "acc" ? c.accumulate : c.p_type) = *t;
      p_given = p_given || key == "p";
    } else if (key == "online") {
      if (value != "0" && value != "1") throw bad("expected 0 or 1");
      c.online_softmax = value == "1";
    } else if (key == "block") {
      std::int64_t n = -1;
      auto r = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || r.ec != std::errc() || r.ptr != value.data() + value.size() || n < 0) {
        throw bad("expected a non-negative integer");
      }
      c.key_block = n;
    } else if (key == "mma") {
      // B/E: tensor-core block FMAs of B products with E extra alignment bits
      const auto slash = value.find('/');
      int b = 0, e = -1;
      const bool ok =
          slash != std::string_view::npos &&
          std::from_chars(value.data(), value.data() + slash, b).ptr == value.data() + slash &&
          std::from_chars(value.data() + slash + 1, value.data() + value.size(), e).ptr ==
              value.data() + value.size() &&
          slash > 0 && slash + 1 < value.size();
      if (!ok || b < 0 || b > 64 || e < 0 || e > 24) {
        throw bad("expected BLOCK/EXTRA_BITS (0 to 64 products, 0 to 24 bits), e.g. 8/1");
      }
      c.mma_block = b;
      c.mma_extra_bits = e;
    } else {
      throw std::invalid_argument("--contract '" + std::string(text) + "': unknown key '" + key +
                                  "' (known: acc, p, online, block, mma)");
    }
  }
  if (!p_given) c.p_type = c.accumulate;
  return c;
}

std::string format_contract(const PrecisionContract& c) {
  return "acc=" + std::string(dtype_name(c.accumulate)) +
         ",p=" + std::string(dtype_name(c.p_type)) + ",online=" + (c.online_softmax ? "1" : "0") +
         ",block=" + std::to_string(c.key_block) +
         (c.mma_block > 0
              ? ",mma=" + std::to_string(c.mma_block) + "/" + std::to_string(c.mma_extra_bits)
              : std::string());
}

RecordedResults::RecordedResults(std::string name, const GoldenCase& results,
                                 PrecisionContract contract, std::string file)
    : name_(std::move(name)), results_(results), contract_(contract), file_(std::move(file)) {
  caps_ = Capabilities::every_forward_input();
  caps_.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
  caps_.backward = true;       // when the file holds the case's gradients (supports())
  caps_.bias_gradient = true;  // when it holds the case's d bias
}

// An adapter of the harness: it answers for a case, so it reads the case's own problem.
Support RecordedResults::supports(const LoweredProblem& lowered, const Device&) const {
  const Problem& p = lowered.source();
  Support s;
  auto missing = [&](const char* dataset) {
    s.decline("no results for this case in " + file_ + ": dataset '" + dataset +
              "' is missing (fill it in from your framework)");
  };
  if (!results_.has_o) missing("o");
  if (p.want_lse && !results_.has_lse) missing("lse");
  if (p.want_weights && !results_.has_weights) missing("weights");
  if (p.backward && !results_.has_gradients) missing("dq");
  if (p.bias_grad && results_.dbias.empty() && mask_elements(p) > 0) missing("dbias");
  return s;
}

void RecordedResults::run(const LoweredProblem& lowered, const Device&, const RunOptions&) const {
  const Problem& p = lowered.source();
  const Buffers buf = lowered.buffers();
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, Dv = p.head_dim_v;
  const auto cuq = cu_seqlens_q(p);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) {
      // Packed layouts store only the valid rows; padded ones every row (0 beyond L_b).
      const std::int64_t rows = p.packed ? seqlen_q(p, b) : L;
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t r = p.packed ? cuq[static_cast<std::size_t>(b)] + i : i;
        const std::size_t row = static_cast<std::size_t>((b * H + h) * L + i);
        for (std::int64_t d = 0; d < Dv; ++d) {
          store_from_double(p.dtype, buf.o, element_offset(p.o, p.packed, b, h, r, d),
                            results_.o[row * static_cast<std::size_t>(Dv) + std::size_t(d)]);
        }
      }
    }
  if (p.want_lse) {
    for (std::size_t x = 0; x < results_.lse.size(); ++x) {
      buf.lse[x] = static_cast<float>(results_.lse[x]);
    }
  }
  if (p.want_weights) {
    for (std::size_t x = 0; x < results_.weights.size(); ++x) {
      store_from_double(p.dtype, buf.weights, static_cast<std::int64_t>(x), results_.weights[x]);
    }
  }
}

void RecordedResults::run_backward(const LoweredProblem& lowered, const Device&,
                                   const RunOptions&) const {
  const Problem& p = lowered.source();
  const GradientPointers g = lowered.gradients();
  // The gradients as recorded, each in its input's layout (padded layouts: every row, as the
  // file has them; packed: the valid rows).
  const auto cuq = cu_seqlens_q(p), cuk = cu_seqlens_kv(p);
  const struct {
    void* dst;
    const TensorLayout& layout;
    const std::vector<double>& src;
    std::int64_t heads, rows, cols;
    bool q_side;
  } tensors[] = {{g.dq, p.q, results_.dq, p.heads_q, p.len_q, p.head_dim_qk, true},
                 {g.dk, p.k, results_.dk, p.heads_kv, p.len_kv, p.head_dim_qk, false},
                 {g.dv, p.v, results_.dv, p.heads_kv, p.len_kv, p.head_dim_v, false}};
  for (const auto& t : tensors)
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const auto ub = static_cast<std::size_t>(b);
      const std::int64_t valid = t.q_side ? seqlen_q(p, b) : seqlen_kv(p, b);
      const std::int64_t first = p.packed ? (t.q_side ? cuq[ub] : cuk[ub]) : 0;
      for (std::int64_t h = 0; h < t.heads; ++h)
        for (std::int64_t i = 0; i < (p.packed ? valid : t.rows); ++i)
          for (std::int64_t e = 0; e < t.cols; ++e) {
            store_from_double(
                p.dtype, t.dst, element_offset(t.layout, p.packed, b, h, first + i, e),
                t.src[static_cast<std::size_t>(((b * t.heads + h) * t.rows + i) * t.cols + e)]);
          }
    }
  // d bias as recorded, in the mask's storage (its stored shape's order is the storage's).
  if (p.bias_grad && g.dbias) {
    for (std::size_t x = 0; x < results_.dbias.size(); ++x) {
      store_from_double(p.dtype, g.dbias, static_cast<std::int64_t>(x), results_.dbias[x]);
    }
  }
}

}  // namespace sdpa::golden
