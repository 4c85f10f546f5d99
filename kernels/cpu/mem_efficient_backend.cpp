// cpu.mem_efficient: split-KV attention (Rabe and Staats 2021, "Self-attention does not need
// O(n^2) memory"; split-KV / flash-decoding). The keys of each (b, kv head) are cut into
// chunks that are processed independently; each chunk leaves, per query row, its partial
// (max m_c, sum l_c = sum exp(s - m_c), unnormalised output acc_c = sum exp(s - m_c) V).
// A second pass combines the chunks with LSE weights, in chunk order:
//   M = max_c m_c,  L = sum_c l_c exp(m_c - M),  O = sum_c acc_c exp(m_c - M) / L.
// Work items are (b, kv head, query-row set, key chunk), so a decode problem with B = 1,
// H = 1, L = 1 and a long S still has one item per chunk for every core. The query rows of
// a GQA group are processed together, so K and V are read once per group.
//
// Determinism and batch invariance: the chunk length depends only on (S_b, Dqk, Dv)
// (mem_efficient_chunk_length), row sets and row blocks only on (L_b, Hq / Hkv), every
// kernel computes an element with a fixed operation order, and the combine runs in chunk
// order. Nothing depends on the thread count or on the other batch elements.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_backends.hpp"
#include "kernels/cpu/isa_target.hpp"
#include "kernels/cpu/sdpa_rows.hpp"
#include "kernels/cpu/vec_kernels.hpp"

namespace sdpa::cpu {
namespace {

constexpr std::int64_t kMinChunk = 256;     // keys; also the contract's key_block
constexpr std::int64_t kTargetChunks = 16;  // splits wanted for long keys
constexpr std::int64_t kRowSet = 1024;      // query rows (of a GQA group) per work item
constexpr std::int64_t kRowBlock = 48;      // rows per GEMM block (a multiple of every mr)
constexpr std::int64_t kDirectRows = 8;     // at most this many rows: decode kernels, no GEMM
constexpr std::int64_t kScratchBudget = std::int64_t(64) << 20;  // bytes of partials per wave

std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }
std::int64_t ceil_div(std::int64_t x, std::int64_t m) { return (x + m - 1) / m; }

}  // namespace

// S_b / 16 rounded up to a multiple of 64 keys, at least 256 (so the combine stays cheap
// next to the chunk's work) and at most what keeps a chunk's K and V in f32 near 512 KiB
// (one core's share of L2): 512 keys at Dqk = Dv = 128, 1024 at 64, 256 at 256.
std::int64_t mem_efficient_chunk_length(std::int64_t sb, std::int64_t dqk, std::int64_t dv) {
  const std::int64_t cap = std::clamp<std::int64_t>(
      (std::int64_t(512) << 10) / (4 * std::max<std::int64_t>(dqk + dv, 1)) / 64 * 64, kMinChunk,
      1024);
  return std::clamp(round_up(ceil_div(sb, kTargetChunks), 64), kMinChunk, cap);
}

namespace {

// A set of query rows of one (b, kv head): rows r in [r0, r1) of the G * L_b rows, row r
// being query i = r / G of head hk * G + r % G (query-major, so that a block of rows has
// similar causal ranges).
struct RowSet {
  std::int64_t b = 0, hk = 0, r0 = 0, r1 = 0;
  std::int64_t chunk = 0, chunks = 0;  // chunk length and count of this batch element
  std::int64_t part = 0;               // offset of its partials in the wave scratch (floats)
};

struct Plan {
  const sdpa_cts_params& p;
  const Geometry& g;
  const vk::Table& t;
  std::int64_t ldo;     // floats of an accumulator row (multiple of 32 >= Dv)
  std::int64_t ldpart;  // floats per partial: acc[ldo], then m, l and the overflow shift k
  std::int64_t ldq;     // floats per converted query row (multiple of 16 >= Dqk)
  std::size_t esz;
};

struct Scratch {
  std::vector<float> q, s, kp, vp, kc, vc, tmp;
  std::vector<KeyRange> ranges;
  static float* grow(std::vector<float>& v, std::int64_t n) {
    if (static_cast<std::int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
    return v.data();
  }
};

// Query row r of a row set as (h, i).
struct QueryRow {
  std::int64_t h, i;
};
inline QueryRow query_row(const Geometry& g, const RowSet& rs, std::int64_t r) {
  return {rs.hk * g.group + r % g.group, r / g.group};
}

// Converts the query rows [r, r + n) of a row set to f32 rows of ld floats (zero-padded).
void load_queries(const Plan& pl, const RowSet& rs, std::int64_t r, std::int64_t n, float* q,
                  std::int64_t ld) {
  const sdpa_cts_params& p = pl.p;
  for (std::int64_t k = 0; k < n; ++k) {
    const QueryRow qr = query_row(pl.g, rs, r + k);
    float* dst = q + k * ld;
    pl.t.load_row(pl.g.dtype, at(pl.p.q, pl.g.q_row(p.q_stride, rs.b, qr.h, qr.i), pl.esz),
                  p.q_stride[3], p.head_dim_qk, dst);
    std::fill(dst + p.head_dim_qk, dst + ld, 0.0f);
  }
}

// Whether the items of a row set take the decode path (dot_keys and acc_values, no GEMM).
bool decode_shape(const Plan& pl, const RowSet& rs) {
  return pl.g.group * pl.g.lq(rs.b) <= kDirectRows;
}

// The K rows that chunk c of a row set reads when it takes the decode path with K read in
// place (for the unit before it to prefetch); none otherwise.
vk::Prefetch keys_of(const Plan& pl, const RowSet& rs, std::int64_t c) {
  const sdpa_cts_params& p = pl.p;
  if (!decode_shape(pl, rs) || p.k_stride[3] != 1) return {};
  const std::int64_t sb = pl.g.skv(rs.b), c0 = c * rs.chunk, c1 = std::min(sb, c0 + rs.chunk);
  if (c1 <= c0) return {};
  const auto esz = static_cast<std::int64_t>(pl.esz);
  return {at(pl.p.k, pl.g.kv_row(p.k_stride, rs.b, rs.hk, c0), pl.esz), p.k_stride[2] * esz,
          p.head_dim_qk * esz, c1 - c0};
}

// Processes chunk c of a row set: writes every row's partial (acc, m, l). `next_keys`: the
// keys of the unit this thread runs next, prefetched into L2 while V is summed.
void run_unit(const Plan& pl, const RowSet& rs, std::int64_t c, float* wave, Scratch& sc,
              const vk::Prefetch& next_keys) {
  const sdpa_cts_params& p = pl.p;
  const Geometry& g = pl.g;
  const vk::Table& t = pl.t;
  const std::int64_t lb = g.lq(rs.b), sb = g.skv(rs.b);
  const std::int64_t dq = p.head_dim_qk, dv = p.head_dim_v;
  const std::int64_t m = rs.r1 - rs.r0;
  const std::int64_t c0 = c * rs.chunk, c1 = std::min(sb, c0 + rs.chunk);
  float* const part = wave + rs.part;
  auto partial = [&](std::int64_t r) { return part + (r * rs.chunks + c) * pl.ldpart; };
  auto set_stats = [&](std::int64_t r, const RowStats& st) {
    partial(r)[pl.ldo] = static_cast<float>(st.m);
    partial(r)[pl.ldo + 1] = static_cast<float>(st.l);
    partial(r)[pl.ldo + 2] = 0;  // acc holds sum P V unscaled
  };
  // Overflow guard (sdpa_rows.hpp): the rows of [r0, r0 + rows) whose partial sum left the
  // f32 range get P scaled by 2^-k (row of `s`, key columns from `s_first`) and are summed
  // again by `redo(r, srow)`; the combine multiplies their partial by 2^k.
  auto guard_overflow = [&](std::int64_t r0, std::int64_t rows, float* s, std::int64_t lds,
                            std::int64_t s_first, std::int64_t keys, auto&& redo) {
    for (std::int64_t r = r0; r < r0 + rows; ++r) {
      float* pr = partial(r);
      if (!std::isfinite(pr[pl.ldo]) || !std::isfinite(pr[pl.ldo + 1])) continue;
      if (!any_nonfinite(pr, dv)) continue;
      const int k = overflow_shift(keys);
      float* srow = s + (r - r0) * lds + s_first;
      t.row_mul(srow, keys, std::ldexp(1.0f, -k));
      redo(r, srow);
      pr[pl.ldo + 2] = static_cast<float>(k);
    }
  };

  // Each row's keys inside this chunk, and their union [ja, jb).
  sc.ranges.resize(static_cast<std::size_t>(m));
  std::int64_t ja = c1, jb = c0;
  for (std::int64_t r = 0; r < m; ++r) {
    KeyRange kr = key_range(p, query_row(g, rs, rs.r0 + r).i, lb, sb);
    kr.lo = std::max(kr.lo, c0);
    kr.hi = std::min(kr.hi, c1);
    if (kr.hi < kr.lo) kr.hi = kr.lo;
    sc.ranges[r] = kr;
    if (!kr.empty()) {
      ja = std::min(ja, kr.lo);
      jb = std::max(jb, kr.hi);
    }
  }
  if (jb <= ja) {
    for (std::int64_t r = 0; r < m; ++r) set_stats(r, RowStats{});
    return;
  }
  const std::int64_t n = jb - ja;
  const F32RowOps ops{t};
  const void* k0 = at(pl.p.k, g.kv_row(p.k_stride, rs.b, rs.hk, ja), pl.esz);
  const void* v0 = at(pl.p.v, g.kv_row(p.v_stride, rs.b, rs.hk, ja), pl.esz);
  float* tmp = Scratch::grow(sc.tmp, std::max(n, dq) + 16);

  if (decode_shape(pl, rs)) {
    // Decode shape: dot products and value sums straight from K and V (no packing).
    float* q = Scratch::grow(sc.q, m * pl.ldq);
    load_queries(pl, rs, rs.r0, m, q, pl.ldq);
    const std::int64_t lds = round_up(n, 16);
    float* s = Scratch::grow(sc.s, m * lds);
    DType kt = pl.g.dtype, vt = pl.g.dtype;
    const void* kp = k0;
    const void* vp = v0;
    std::int64_t ks = p.k_stride[2], vs = p.v_stride[2];
    if (p.k_stride[3] != 1) {  // head dim not contiguous: convert the chunk first
      float* kc = Scratch::grow(sc.kc, n * std::max<std::int64_t>(dq, 1));
      for (std::int64_t j = 0; j < n; ++j)
        t.load_row(pl.g.dtype, at(k0, j * p.k_stride[2], pl.esz), p.k_stride[3], dq, kc + j * dq);
      kt = DType::f32, kp = kc, ks = dq;
    }
    if (p.v_stride[3] != 1) {
      float* vc = Scratch::grow(sc.vc, n * std::max<std::int64_t>(dv, 1));
      for (std::int64_t j = 0; j < n; ++j)
        t.load_row(pl.g.dtype, at(v0, j * p.v_stride[2], pl.esz), p.v_stride[3], dv, vc + j * dv);
      vt = DType::f32, vp = vc, vs = dv;
    }
    const std::int64_t vesz = static_cast<std::int64_t>(dtype_size(vt));
    t.dot_keys(kt, q, pl.ldq, m, kp, ks, n, dq, s, lds, {vp, vs * vesz, dv * vesz, n});
    for (std::int64_t r = 0; r < m; ++r) {
      const QueryRow qr = query_row(g, rs, rs.r0 + r);
      const RowStats st = row_softmax_block<float>(ops, g, rs.b, qr.h, qr.i, sc.ranges[r].lo,
                                                   sc.ranges[r].hi, s + r * lds, ja, n, tmp);
      set_stats(r, st);
      std::fill(partial(r), partial(r) + pl.ldo, 0.0f);
    }
    // All rows at once (V is read once per GQA group); partials of consecutive rows are
    // chunks * ldpart floats apart, a multiple of 16.
    t.acc_values(vt, s, lds, m, vp, vs, n, dv, partial(0), rs.chunks * pl.ldpart, next_keys);
    guard_overflow(0, m, s, lds, 0, n, [&](std::int64_t r, const float* srow) {
      std::fill(partial(r), partial(r) + pl.ldo, 0.0f);
      t.acc_values(vt, srow, lds, 1, vp, vs, n, dv, partial(r), pl.ldpart, {});
    });
    return;
  }

  // Prefill shape: pack the chunk's K^T and V once, then GEMM blocks of query rows.
  const std::int64_t nr = t.nr;
  const std::int64_t lds = round_up(n, nr);
  float* kp = Scratch::grow(sc.kp, lds * std::max<std::int64_t>(dq, 1));
  float* vp = Scratch::grow(sc.vp, n * round_up(std::max<std::int64_t>(dv, 1), nr));
  t.pack_b(pl.g.dtype, k0, p.k_stride[3], p.k_stride[2], dq, n, kp, tmp);
  t.pack_b(pl.g.dtype, v0, p.v_stride[2], p.v_stride[3], n, dv, vp, tmp);
  float* q = Scratch::grow(sc.q, kRowBlock * std::max<std::int64_t>(dq, 1));
  float* s = Scratch::grow(sc.s, kRowBlock * lds);
  for (std::int64_t b0 = 0; b0 < m; b0 += kRowBlock) {
    const std::int64_t rows = std::min(kRowBlock, m - b0);
    std::int64_t ba = jb, bb = ja;
    for (std::int64_t r = b0; r < b0 + rows; ++r) {
      if (!sc.ranges[r].empty()) {
        ba = std::min(ba, sc.ranges[r].lo);
        bb = std::max(bb, sc.ranges[r].hi);
      }
    }
    if (bb <= ba) {
      for (std::int64_t r = b0; r < b0 + rows; ++r) set_stats(r, RowStats{});
      continue;
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const QueryRow qr = query_row(g, rs, rs.r0 + b0 + r);
      t.load_row(pl.g.dtype, at(pl.p.q, g.q_row(p.q_stride, rs.b, qr.h, qr.i), pl.esz),
                 p.q_stride[3], dq, q + r * dq);
    }
    // Logit columns are keys relative to ja; GEMM whole panels around [ba, bb).
    const std::int64_t p0 = (ba - ja) / nr, p1 = ceil_div(bb - ja, nr);
    t.gemm(rows, (p1 - p0) * nr, dq, q, dq, kp + p0 * dq * nr, dq * nr, s + p0 * nr, lds);
    for (std::int64_t r = 0; r < rows; ++r) {
      const QueryRow qr = query_row(g, rs, rs.r0 + b0 + r);
      const KeyRange& kr = sc.ranges[b0 + r];
      set_stats(b0 + r, row_softmax_block<float>(ops, g, rs.b, qr.h, qr.i, kr.lo, kr.hi,
                                                 s + r * lds + (ba - ja), ba, bb - ba, tmp));
    }
    if (dv > 0) {
      // Partials of consecutive rows are rs.chunks * ldpart floats apart.
      t.gemm(rows, dv, bb - ba, s + (ba - ja), lds, vp + (ba - ja) * nr, n * nr, partial(b0),
             rs.chunks * pl.ldpart);
      guard_overflow(b0, rows, s, lds, ba - ja, bb - ba, [&](std::int64_t r, const float* srow) {
        t.gemm(1, dv, bb - ba, srow, lds, vp + (ba - ja) * nr, n * nr, partial(r), pl.ldpart);
      });
    }
  }
}

// Combines the chunks of row r of a row set and writes O and LSE.
void combine_row(const Plan& pl, const RowSet& rs, std::int64_t r, const float* wave,
                 std::vector<double>& acc, std::vector<float>& out) {
  const sdpa_cts_params& p = pl.p;
  const Geometry& g = pl.g;
  const std::int64_t dv = p.head_dim_v;
  const QueryRow qr = query_row(g, rs, r);
  const float* part = wave + rs.part + (r - rs.r0) * rs.chunks * pl.ldpart;
  bool any = false, nan = false;
  double mx = -INFINITY;
  for (std::int64_t c = 0; c < rs.chunks; ++c) {
    const double mc = part[c * pl.ldpart + pl.ldo];
    if (std::isnan(mc)) nan = true;
    if (mc == -INFINITY) continue;
    any = true;
    if (mc > mx) mx = mc;
  }
  double lse;
  out.assign(static_cast<std::size_t>(std::max<std::int64_t>(dv, 1)), 0.0f);
  if (nan) {
    lse = NAN;
    std::fill(out.begin(), out.end(), NAN);
  } else if (!any) {
    lse = -INFINITY;
  } else {
    acc.assign(static_cast<std::size_t>(std::max<std::int64_t>(dv, 1)), 0.0);
    double l = 0;
    for (std::int64_t c = 0; c < rs.chunks; ++c) {
      const float* pc = part + c * pl.ldpart;
      if (pc[pl.ldo] == -INFINITY) continue;
      const double w = std::exp(static_cast<double>(pc[pl.ldo]) - mx);
      l += static_cast<double>(pc[pl.ldo + 1]) * w;
      const double wv = std::ldexp(w, static_cast<int>(pc[pl.ldo + 2]));  // overflow guard
      for (std::int64_t d = 0; d < dv; ++d) acc[d] += static_cast<double>(pc[d]) * wv;
    }
    const double inv = 1.0 / (l * (1.0 - p.dropout_p));
    for (std::int64_t d = 0; d < dv; ++d) out[d] = static_cast<float>(acc[d] * inv);
    lse = mx + std::log(l);
  }
  pl.t.store_row(pl.g.dtype, out.data(), dv,
                 at(pl.p.o, g.q_row(p.o_stride, rs.b, qr.h, qr.i), pl.esz), p.o_stride[3]);
  if (p.want_lse) {
    pl.p.lse[(rs.b * p.heads_q + qr.h) * p.len_q + qr.i] = static_cast<float>(lse);
  }
}

// Rows with no query (i >= L_b) of slice (b, h): O = 0 in the padded layout, LSE = -inf.
void write_padding(const Plan& pl, std::int64_t b, std::int64_t h, std::vector<float>& zero) {
  const sdpa_cts_params& p = pl.p;
  zero.assign(static_cast<std::size_t>(std::max<std::int64_t>(p.head_dim_v, 1)), 0.0f);
  for (std::int64_t i = pl.g.lq(b); i < p.len_q; ++i) {
    if (!p.packed) {
      pl.t.store_row(pl.g.dtype, zero.data(), p.head_dim_v,
                     at(pl.p.o, pl.g.q_row(p.o_stride, b, h, i), pl.esz), p.o_stride[3]);
    }
    if (p.want_lse) pl.p.lse[(b * p.heads_q + h) * p.len_q + i] = -INFINITY;
  }
}

// Work of one wave: items (row set, chunk), then the rows to combine.
struct Wave {
  struct Unit {
    std::int64_t set, chunk;
  };
  struct Row {
    std::int64_t set, r;
  };
  std::vector<Unit> units;
  std::vector<Row> rows;
};

void run_problem(const LoweredProblem& lowered, const Device& device, const RunOptions& options) {
  const Geometry g(lowered);
  const sdpa_cts_params& p = g.p;
  if (p.batch == 0 || p.heads_q == 0 || p.len_q == 0) return;
  const IsaTarget target = isa_to_run(device);
  const vk::Table& t = vk::table(target);
  const std::int64_t ldo = round_up(std::max<std::int64_t>(p.head_dim_v, 1), 32);
  const Plan pl{p,
                g,
                t,
                ldo,
                ldo + 16,
                round_up(std::max<std::int64_t>(p.head_dim_qk, 1), 16),
                dtype_size(g.dtype)};

  // All row sets in (b, hk, rows) order, cut into waves whose partials fit the budget. The
  // cut only groups work; no item's result depends on the wave it is in.
  std::vector<RowSet> sets;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t lb = g.lq(b), sb = g.skv(b), rows = g.group * lb;
    if (rows == 0) continue;
    const std::int64_t chunk = mem_efficient_chunk_length(sb, p.head_dim_qk, p.head_dim_v);
    const std::int64_t chunks = std::max<std::int64_t>(ceil_div(sb, chunk), 1);
    for (std::int64_t hk = 0; hk < p.heads_kv; ++hk)
      for (std::int64_t r0 = 0; r0 < rows; r0 += kRowSet)
        sets.push_back({b, hk, r0, std::min(rows, r0 + kRowSet), chunk, chunks, 0});
  }
  const std::int64_t budget = kScratchBudget / 4;
  std::vector<Wave> waves;
  std::int64_t scratch = 0;
  for (std::size_t first = 0; first < sets.size();) {
    Wave w;
    std::int64_t floats = 0;
    std::size_t last = first;
    for (; last < sets.size(); ++last) {
      RowSet& rs = sets[last];
      const std::int64_t need = (rs.r1 - rs.r0) * rs.chunks * pl.ldpart;
      if (last > first && floats + need > budget) break;
      rs.part = floats;
      floats += need;
      for (std::int64_t c = 0; c < rs.chunks; ++c)
        w.units.push_back({static_cast<std::int64_t>(last), c});
      for (std::int64_t r = rs.r0; r < rs.r1; ++r)
        w.rows.push_back({static_cast<std::int64_t>(last), r});
    }
    scratch = std::max(scratch, floats);
    waves.push_back(std::move(w));
    first = last;
  }
  std::vector<float> partials(static_cast<std::size_t>(scratch));
  float* const part = partials.data();
  const std::int64_t slices = p.batch * p.heads_q;
  std::int64_t max_units = 0;
  for (const Wave& w : waves) max_units = std::max<std::int64_t>(max_units, std::ssize(w.units));
  // Never more threads than items: small problems skip the fork.
  const int threads = static_cast<int>(
      std::min<std::int64_t>(thread_count(options), std::max<std::int64_t>(max_units, 1)));
  std::vector<std::atomic<std::int64_t>> claimed(waves.size());  // units claimed, per wave
  for (auto& c : claimed) c.store(0, std::memory_order_relaxed);
#pragma omp parallel num_threads(threads)
  {
    Scratch sc;
    std::vector<double> acc;
    std::vector<float> out;
#pragma omp for schedule(static) nowait
    for (std::int64_t bh = 0; bh < slices; ++bh)
      write_padding(pl, bh / p.heads_q, bh % p.heads_q, out);
    for (std::size_t wi = 0; wi < waves.size(); ++wi) {
      const Wave& w = waves[wi];
      const auto nu = std::ssize(w.units);
      const auto nrows = std::ssize(w.rows);
      // Dynamic scheduling, one unit at a time, each claimed one unit ahead: a thread knows
      // the unit it runs next and prefetches its keys while it sums the current unit's
      // values, so that its core keeps reading memory between units. Which thread runs a
      // unit changes no bits.
      std::atomic<std::int64_t>& counter = claimed[wi];
      std::int64_t u = counter.fetch_add(1, std::memory_order_relaxed);
      while (u < nu) {
        const std::int64_t next = counter.fetch_add(1, std::memory_order_relaxed);
        const Wave::Unit& un = w.units[static_cast<std::size_t>(u)];
        vk::Prefetch pf;
        if (next < nu) {
          const Wave::Unit& nx = w.units[static_cast<std::size_t>(next)];
          pf = keys_of(pl, sets[static_cast<std::size_t>(nx.set)], nx.chunk);
        }
        run_unit(pl, sets[static_cast<std::size_t>(un.set)], un.chunk, part, sc, pf);
        u = next;
      }
#pragma omp barrier
#pragma omp for schedule(dynamic, 64)
      for (std::int64_t x = 0; x < nrows; ++x) {
        const Wave::Row& row = w.rows[static_cast<std::size_t>(x)];
        combine_row(pl, sets[static_cast<std::size_t>(row.set)], row.r, part, acc, out);
      }
    }
  }
}

class MemEfficientBackend final : public Backend {
 public:
  MemEfficientBackend() {
    caps_ = Capabilities::every_forward_input();
    caps_.dtypes = {DType::f32, DType::f16, DType::bf16};
    caps_.weights = false;
    caps_.deterministic = true;
    caps_.batch_invariant = true;
    caps_.traits.split_kv = true;
    caps_.traits.fused_mha = true;
    caps_.traits.isa_targets = true;
    // Its code changes at the decode path's row limit and the GEMM row block (rows of a KV
    // head's group), and at its key chunk.
    caps_.tiling = {true, {kDirectRows, kRowBlock}, {0}, mem_efficient_chunk_length};
  }
  std::string_view name() const override { return "cpu.mem_efficient"; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType) const override {
    PrecisionContract c;
    c.accumulate = c.p_type = DType::f32;
    c.online_softmax = true;  // chunks are combined by rescaling, like an online softmax
    c.key_block = kMinChunk;  // the shortest chunk: an upper bound on the rescales
    return c;
  }
  Support supports(const LoweredProblem& p, const Device& device) const override {
    Support s;
    check_capabilities(caps_, p, device, s);
    return s;
  }
  void run(const LoweredProblem& p, const Device& device,
           const RunOptions& options) const override {
    run_problem(p, device, options);
  }

 private:
  Capabilities caps_;
};

}  // namespace

const Backend& mem_efficient_backend() {
  static const MemEfficientBackend b;
  return b;
}

}  // namespace sdpa::cpu
