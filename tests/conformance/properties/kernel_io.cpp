#include "tests/conformance/properties/kernel_io.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "conformance/judge/tolerance.hpp"
#include "core/guarded_buffer.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

std::int64_t offset_of(const StridedView& v, std::int64_t a, std::int64_t b, std::int64_t c,
                       std::int64_t d) {
  return a * v.stride[0] + b * v.stride[1] + c * v.stride[2] + d * v.stride[3];
}

std::vector<double> read_view(DType t, const StridedView& v, const void* data) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(view_numel(v)));
  for (std::int64_t a = 0; a < v.shape[0]; ++a)
    for (std::int64_t b = 0; b < v.shape[1]; ++b)
      for (std::int64_t c = 0; c < v.shape[2]; ++c)
        for (std::int64_t d = 0; d < v.shape[3]; ++d)
          out.push_back(load_as_double(t, data, offset_of(v, a, b, c, d)));
  return out;
}

GuardedBuffer write_view(const char* name, DType t, const StridedView& v, std::int64_t base,
                         const std::vector<double>& values) {
  if (static_cast<std::int64_t>(values.size()) != view_numel(v)) {
    throw std::invalid_argument(std::string("write_inputs: wrong element count for ") + name);
  }
  GuardedBuffer buf(name, dtype_size(t), v, base);
  std::size_t x = 0;
  for (std::int64_t a = 0; a < v.shape[0]; ++a)
    for (std::int64_t b = 0; b < v.shape[1]; ++b)
      for (std::int64_t c = 0; c < v.shape[2]; ++c)
        for (std::int64_t d = 0; d < v.shape[3]; ++d)
          store_from_double(t, buf.data(), offset_of(v, a, b, c, d), values[x++]);
  buf.snapshot();
  return buf;
}

}  // namespace

Tensors read_inputs(const Problem& p, const InputBuffers& in) {
  if (p.packed) throw std::invalid_argument("read_inputs: packed layouts are not supported");
  Tensors t;
  t.q = read_view(p.dtype, q_view(p), in.q.data());
  t.k = read_view(p.dtype, k_view(p), in.k.data());
  t.v = read_view(p.dtype, v_view(p), in.v.data());
  if (p.mask == MaskKind::additive) t.mask = read_view(p.dtype, mask_view(p), in.mask->data());
  if (p.mask == MaskKind::boolean) {
    const StridedView v = mask_view(p);
    const auto* m = static_cast<const std::uint8_t*>(in.mask->data());
    for (std::int64_t a = 0; a < v.shape[0]; ++a)
      for (std::int64_t b = 0; b < v.shape[1]; ++b)
        for (std::int64_t c = 0; c < v.shape[2]; ++c)
          for (std::int64_t d = 0; d < v.shape[3]; ++d)
            t.mask.push_back(m[offset_of(v, a, b, c, d)] ? 1.0 : 0.0);
  }
  return t;
}

InputBuffers write_inputs(const Problem& p, const Tensors& t) {
  if (p.packed) throw std::invalid_argument("write_inputs: packed layouts are not supported");
  InputBuffers in{write_view("q", p.dtype, q_view(p), p.q.base_offset, t.q),
                  write_view("k", p.dtype, k_view(p), p.k.base_offset, t.k),
                  write_view("v", p.dtype, v_view(p), p.v.base_offset, t.v), std::nullopt,
                  std::nullopt};
  if (p.mask == MaskKind::additive) {
    in.mask.emplace(write_view("mask", p.dtype, mask_view(p), 0, t.mask));
  } else if (p.mask == MaskKind::boolean) {
    const StridedView v = mask_view(p);
    GuardedBuffer buf("mask", 1, v);
    std::size_t x = 0;
    for (std::int64_t a = 0; a < v.shape[0]; ++a)
      for (std::int64_t b = 0; b < v.shape[1]; ++b)
        for (std::int64_t c = 0; c < v.shape[2]; ++c)
          for (std::int64_t d = 0; d < v.shape[3]; ++d)
            static_cast<std::uint8_t*>(buf.data())[offset_of(v, a, b, c, d)] =
                t.mask[x++] != 0 ? 1 : 0;
    buf.snapshot();
    in.mask.emplace(std::move(buf));
  }
  return in;
}

std::string run_kernel(const Backend& b, const Problem& p, const InputBuffers& in,
                       const TargetRun& opt, Outputs* out) {
  Problem pl = p;
  pl.want_lse = b.capabilities().lse;
  if (const Support s = b.supports(pl, test_support::target_device(opt.target)); !s.ok()) {
    std::string why;
    for (const auto& r : s.all_reasons()) why += (why.empty() ? "" : "; ") + r;
    discard_declined(b, why);
  }
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv, Dv = p.head_dim_v;
  const std::size_t esz = dtype_size(p.dtype);
  GuardedBuffer o("o", esz, o_view(p), p.o.base_offset);
  GuardedBuffer lse("lse", 4, StridedView{{B, H, L, 1}, {H * L, L, 1, 1}});
  GuardedBuffer w(
      "weights", esz,
      p.want_weights ? StridedView{{B, H, L, S}, {H * L * S, L * S, S, 1}} : StridedView{});
  try {
    test_support::run_with(
        b, pl,
        {in.q.data(), in.k.data(), in.v.data(), in.mask ? in.mask->data() : nullptr, o.data(),
         pl.want_lse ? static_cast<float*>(lse.data()) : nullptr,
         p.want_weights ? w.data() : nullptr},
        opt);
  } catch (const std::exception& e) {
    return std::string("the backend threw: ") + e.what();
  }
  for (const GuardedBuffer* g : {&in.q, &in.k, &in.v}) {
    if (auto v = g->check_unchanged()) return v.message;
  }
  if (in.mask) {
    if (auto v = in.mask->check_unchanged()) return v.message;
  }
  if (auto v = o.check()) return v.message;
  if (pl.want_lse) {
    if (auto v = lse.check()) return v.message;
  }
  if (p.want_weights) {
    if (auto v = w.check()) return v.message;
  }
  *out = {};
  const StridedView ov = o_view(p);
  const auto cuq = cu_seqlens_q(p);
  const auto* ob = static_cast<const unsigned char*>(o.data());
  for (std::int64_t bb = 0; bb < B; ++bb)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i)
        for (std::int64_t d = 0; d < Dv; ++d) {
          // Packed rows beyond L_b do not exist: they read as 0, like the reference's.
          if (p.packed && i >= seqlen_q(p, bb)) {
            out->o.push_back(0);
            out->o_bytes.insert(out->o_bytes.end(), esz, 0);
            continue;
          }
          const std::int64_t off =
              p.packed ? offset_of(ov, 0, h, cuq[bb] + i, d) : offset_of(ov, bb, h, i, d);
          out->o.push_back(load_as_double(p.dtype, o.data(), off));
          out->o_bytes.insert(out->o_bytes.end(), ob + off * static_cast<std::int64_t>(esz),
                              ob + (off + 1) * static_cast<std::int64_t>(esz));
        }
  if (pl.want_lse) {
    const auto* l = static_cast<const float*>(lse.data());
    out->lse.assign(l, l + B * H * L);
    const auto* lb = static_cast<const unsigned char*>(lse.data());
    out->lse_bytes.assign(lb, lb + B * H * L * 4);
  }
  if (p.want_weights) {
    for (std::int64_t x = 0; x < B * H * L * S; ++x) {
      out->weights.push_back(load_as_double(p.dtype, w.data(), x));
    }
  }
  return "";
}

Bounds bounds(const Backend& b, const Problem& p, const InputBuffers& in) {
  Bounds out;
  Problem pl = p;
  pl.want_lse = true;
  out.ref = reference::run_sdpa(pl, in.pointers());
  const PrecisionContract contract = b.precision(p.dtype);
  const std::int64_t H = p.heads_q, L = p.len_q, Dv = p.head_dim_v;
  out.o.assign(out.ref.o.size(), 0.0);
  out.lse.assign(out.ref.lse.size(), 0.0);
  for (std::int64_t bb = 0; bb < p.batch; ++bb) {
    const ToleranceFactors f = tolerance_factors(p, contract, seqlen_kv(p, bb));
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < seqlen_q(p, bb); ++i) {
        const std::int64_t row = (bb * H + h) * L + i;
        out.lse[static_cast<std::size_t>(row)] = lse_tolerance(f, out.ref, row);
        for (std::int64_t d = 0; d < Dv; ++d) {
          out.o[static_cast<std::size_t>(row * Dv + d)] = output_tolerance(f, out.ref, row, d, Dv);
        }
      }
  }
  return out;
}

std::string compare(const std::vector<double>& a, const std::vector<double>& b,
                    const std::vector<double>& tol, const std::string& what) {
  if (a.size() != b.size()) return what + ": sizes differ";
  for (std::size_t x = 0; x < a.size(); ++x) {
    const bool nan_a = std::isnan(a[x]), nan_b = std::isnan(b[x]);
    bool ok;
    if (nan_a || nan_b) {
      ok = nan_a && nan_b;
    } else if (std::isinf(a[x]) || std::isinf(b[x]) || tol[x] == 0) {
      ok = a[x] == b[x];
    } else {
      ok = std::fabs(a[x] - b[x]) <= tol[x];
    }
    if (!ok) {
      std::ostringstream m;
      m.precision(9);
      m << what << "[" << x << "]: " << a[x] << " vs " << b[x] << " (allowed difference " << tol[x]
        << ")";
      return m.str();
    }
  }
  return "";
}

}  // namespace sdpa::props
