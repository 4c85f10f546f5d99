// Pair coverage: jobs are classified from the parsed problem (layouts and gaps by the row
// stride, lengths against the running backend's blocks); the generated covering set covers
// every pair it does not report impossible, and a run without a value leaves its pairs
// uncovered.
#include "conformance/engine/pair_coverage.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "conformance/engine/case_sampler.hpp"
#include "conformance/engine/check_case.hpp"
#include "kernels/registry.hpp"

namespace sdpa::conformance {
namespace {

// The value name of dimension `name` for `id` on `backend` (in `pass`).
std::string value_of(const std::string& id, const std::string& backend, const std::string& name,
                     IsaTarget isa = IsaTarget::scalar, int threads = 1,
                     PairPass pass = PairPass::forward) {
  const Backend& b = find_backend_or_throw(backend);
  const auto dims = pair_dimensions(b, pass);
  const auto v = classify_job(parse_case_id_or_throw(id), b, isa, threads, pass);
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d].name == name) return dims[d].values[static_cast<std::size_t>(v[d])];
  }
  ADD_FAILURE() << "no dimension " << name;
  return "";
}

// The jobs of `ids` on `backend`'s scalar target at one and at two threads.
std::vector<CoverageJob> jobs_at_one_and_two_threads(const std::vector<std::string>& ids,
                                                     const Backend& backend, const Device& device) {
  auto jobs = accepted_jobs(ids, backend, device, {IsaTarget::scalar}, 1);
  const auto two = accepted_jobs(ids, backend, device, {IsaTarget::scalar}, 2);
  jobs.insert(jobs.end(), two.begin(), two.end());
  return jobs;
}

// `id` with the strides of `kind` (the sampler's views).
std::string with_strides(const std::string& id, StrideKind kind) {
  Case c = parse_case_id_or_throw(id);
  apply_stride_kind(c.problem, kind);
  return format_case_id(c);
}

TEST(PairCoverage, StrideKindsComeFromTheStrides) {
  const std::string base = "b2.hq4.hkv2.l5.s7.dqk32.f32";
  EXPECT_EQ(value_of(base, "cpu.math", "strides"), "unit");
  const std::string strided = with_strides(base, StrideKind::head_dim_2);
  EXPECT_NE(strided.find("qst="), std::string::npos) << strided;
  EXPECT_EQ(value_of(strided, "cpu.math", "strides"), "head_dim_2");
  // A view x[..., ::2] of a dense tensor keeps its row pitch and layout.
  EXPECT_EQ(value_of(strided, "cpu.math", "row_pitch"), "dense");
  EXPECT_EQ(
      value_of(with_strides(base + ".gap=3", StrideKind::head_dim_2), "cpu.math", "row_pitch"),
      "gap_odd");
  EXPECT_EQ(
      value_of(with_strides(base + ".lay=bshd", StrideKind::head_dim_2), "cpu.math", "layout"),
      "bshd");
  EXPECT_EQ(value_of(with_strides(base, StrideKind::transposed), "cpu.math", "strides"),
            "transposed_kv");
  EXPECT_EQ(
      value_of(with_strides(base + ".lay=bshd", StrideKind::transposed), "cpu.flash", "strides"),
      "transposed_kv");
}

TEST(PairCoverage, StridePairsAreImpossibleOnlyWhereTheBackendNeedsUnitStride) {
  const Backend& flash = find_backend_or_throw("cpu.flash");
  const auto dims = pair_dimensions(flash);
  int strides = -1, dtype = -1;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d].name == "strides") strides = static_cast<int>(d);
    if (dims[d].name == "dtype") dtype = static_cast<int>(d);
  }
  ASSERT_GE(strides, 0);
  EXPECT_EQ(impossible_reason(flash, dims, {dtype, 0, strides, 2}), "");
  const Backend& cuda = find_backend_or_throw("cuda.flash");
  EXPECT_EQ(impossible_reason(cuda, pair_dimensions(cuda), {dtype, 1, strides, 1}),
            "the backend requires head-dim stride 1");
}

TEST(PairCoverage, JobsCountOnTheirOwnTargetsAndThreads) {
  // Results of one run on one SIMD target at one thread: the other targets' pairs are not
  // counted, and the two-thread value stays uncovered.
  const Backend& math = find_backend_or_throw("cpu.math");
  const std::vector<CoverageJob> jobs = {
      {"b1.hq2.l5.s7.dqk32.f32", "cpu.math", IsaTarget::avx2, 1},
      {"b1.hq2.l5.s7.dqk32.f32", "cpu.flash", IsaTarget::avx2, 2}};
  const auto cov = pair_coverage(math, jobs, {});
  EXPECT_EQ(cov.jobs, 1u);
  EXPECT_GT(cov.not_run, 0u);
  bool two_threads_uncovered = false;
  for (const auto& p : cov.uncovered) {
    const std::string d = describe_pair(cov.dimensions, p);
    EXPECT_EQ(d.find("simd=scalar"), std::string::npos) << d;
    if (d.find("threads=2+") != std::string::npos) two_threads_uncovered = true;
  }
  EXPECT_TRUE(two_threads_uncovered);
}

TEST(PairCoverage, LayoutAndRowStrideComeFromTheStrides) {
  const std::string base = "b1.hq2.l5.s7.dqk32.f32";
  EXPECT_EQ(value_of(base, "cpu.math", "layout"), "bhsd");
  EXPECT_EQ(value_of(base, "cpu.math", "row_pitch"), "dense");
  EXPECT_EQ(value_of(base + ".lay=bshd", "cpu.math", "layout"), "bshd");
  EXPECT_EQ(value_of(base + ".gap=2", "cpu.math", "row_pitch"), "gap_even");
  EXPECT_EQ(value_of(base + ".gap=3", "cpu.math", "row_pitch"), "gap_odd");
  EXPECT_EQ(value_of(base + ".lay=bshd.gap=3", "cpu.math", "row_pitch"), "gap_odd");
  // With one or no query row the strides of bhsd and bshd coincide: named as the ID does.
  EXPECT_EQ(value_of("b1.hq2.l0.s7.dqk32.f32", "cpu.math", "layout"), "bhsd");
  EXPECT_EQ(value_of("b1.hq2.l1.s7.dqk32.f32", "cpu.math", "layout"), "bhsd");
}

TEST(PairCoverage, LengthsAreJudgedAgainstTheBackendsBlocks) {
  // cpu.flash tiles 64 (head, query) rows of a KV head's group and steps 128 keys.
  EXPECT_EQ(value_of("b1.hq2.l63.s128.dqk32.f32", "cpu.flash", "group_rows"), "<64");
  EXPECT_EQ(value_of("b1.hq4.hkv2.l32.s128.dqk32.f32", "cpu.flash", "group_rows"), "=64");
  EXPECT_EQ(value_of("b1.hq2.l65.s128.dqk32.f32", "cpu.flash", "keys"), "=128");
  EXPECT_EQ(value_of("b1.hq2.l65.s129.dqk32.f32", "cpu.flash", "keys"), ">128");
  // cpu.mem_efficient: decode rows (<= 8), GEMM blocks of 48 rows, key chunks (256 here).
  EXPECT_EQ(value_of("b1.hq8.hkv1.l1.s300.dqk32.f32", "cpu.mem_efficient", "group_rows"), "=8");
  EXPECT_EQ(value_of("b1.hq2.l48.s256.dqk32.f32", "cpu.mem_efficient", "group_rows"), "=48");
  EXPECT_EQ(value_of("b1.hq2.l48.s256.dqk32.f32", "cpu.mem_efficient", "keys"), "=chunk");
  EXPECT_EQ(value_of("b1.hq2.l48.s257.dqk32.f32", "cpu.mem_efficient", "keys"), ">chunk");
  // cpu.math: none beyond the first row.
  EXPECT_EQ(value_of("b1.hq2.l0.s7.dqk32.f32", "cpu.math", "query_rows"), "<1");
  EXPECT_EQ(value_of("b1.hq2.l2.s7.dqk32.f32", "cpu.math", "query_rows"), ">1");
}

TEST(PairCoverage, FeaturesSimdAndThreads) {
  EXPECT_EQ(value_of("b3.hq4.hkv1.l4.s27.dqk24.f16.qlen=4_1_0.kvlen=0_27_13.packed", "cpu.math",
                     "varlen"),
            "packed");
  EXPECT_EQ(value_of("b1.hq4.hkv1.l4.s27.dqk24.f16", "cpu.math", "heads"), "mqa");
  EXPECT_EQ(value_of("b1.hq4.hkv2.l4.s27.dqk24.f16", "cpu.math", "heads"), "gqa");
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.f16.p0.3", "cpu.math", "dropout"),
            "past_first_key_block");
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.bf16", "cpu.math", "head_dim"), "other");
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.bf16", "cpu.math", "simd", IsaTarget::avx2), "avx2");
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.bf16", "cpu.math", "threads", IsaTarget::scalar, 0),
            "2+");
}

TEST(PairCoverage, TheCoveringSetCoversEveryPossiblePairOnItsOwn) {
  const std::vector<const Backend*> backends = {&find_backend_or_throw("cpu.math"),
                                                &find_backend_or_throw("cpu.flash")};
  const Device device = with_isa_target(detect_cpu(), "scalar");
  const CoveringSet set = generate_covering_set(backends, device);
  ASSERT_FALSE(set.case_ids.empty());
  ASSERT_EQ(set.impossible.size(), 2u);
  for (std::size_t i = 0; i < backends.size(); ++i) {
    // At one and at two threads, on the scalar target: every possible pair.
    const auto cov =
        pair_coverage(*backends[i], jobs_at_one_and_two_threads(set.case_ids, *backends[i], device),
                      set.impossible[i]);
    EXPECT_TRUE(cov.uncovered.empty())
        << backends[i]->name() << ": " << describe_pair(cov.dimensions, cov.uncovered.front());
    EXPECT_GT(cov.covered.size(), 500u);
    // Every pair no case can have says why.
    ASSERT_EQ(cov.impossible_reasons.size(), cov.impossible.size());
    for (std::size_t k = 0; k < cov.impossible.size(); ++k) {
      EXPECT_FALSE(cov.impossible_reasons[k].empty())
          << describe_pair(cov.dimensions, cov.impossible[k]);
    }
    // Removing the dropout cases uncovers dropout's pairs.
    std::vector<std::string> no_dropout;
    std::copy_if(set.case_ids.begin(), set.case_ids.end(), std::back_inserter(no_dropout),
                 [](const std::string& id) { return id.find(".p0.") == std::string::npos; });
    const auto less =
        pair_coverage(*backends[i], jobs_at_one_and_two_threads(no_dropout, *backends[i], device),
                      set.impossible[i]);
    bool dropout_uncovered = false;
    for (const auto& p : less.uncovered) {
      if (describe_pair(less.dimensions, p).find("dropout=past_first_key_block") !=
          std::string::npos) {
        dropout_uncovered = true;
      }
    }
    EXPECT_TRUE(dropout_uncovered);
  }
  // f64 is cpu.math's alone: on cpu.flash its pairs are impossible, not uncovered.
  bool f64_impossible = false;
  for (const auto& p : set.impossible[1]) {
    if (p.d1 == 0 && p.v1 == 3) f64_impossible = true;
  }
  EXPECT_TRUE(f64_impossible);
}

// Dropout is classified by the keys the rows reach, against the backend's first key block:
// top-left causal rows with L <= 64 never reach cpu.flash's key 128, however long S is.
TEST(PairCoverage, DropoutIsJudgedByTheKeysTheRowsReach) {
  const std::string p = ".p0.3.dseed3.seed1.gen=normal";
  EXPECT_EQ(value_of("b1.hq2.l48.s300.dqk32.f32.seed1.gen=normal", "cpu.flash", "dropout"), "off");
  EXPECT_EQ(value_of("b1.hq2.l48.s80.dqk32.f32" + p, "cpu.flash", "dropout"), "in_first_key_block");
  EXPECT_EQ(value_of("b1.hq2.l48.s300.dqk32.f32.causal=tl" + p, "cpu.flash", "dropout"),
            "in_first_key_block");
  EXPECT_EQ(value_of("b1.hq2.l48.s300.dqk32.f32.causal=br" + p, "cpu.flash", "dropout"),
            "past_first_key_block");
  EXPECT_EQ(value_of("b1.hq2.l48.s300.dqk32.f32" + p, "cpu.flash", "dropout"),
            "past_first_key_block");
  // Against cpu.math's first key cut (16), the same top-left case reaches past it.
  EXPECT_EQ(value_of("b1.hq2.l48.s300.dqk32.f32.causal=tl" + p, "cpu.math", "dropout"),
            "past_first_key_block");
}

// A pair is "not possible" only with a reason that holds for every case; one the generator
// merely failed to build has none, and so stays uncovered.
TEST(PairCoverage, NotPossibleNeedsAReason) {
  const Backend& flash = find_backend_or_throw("cpu.flash");
  const auto dims = pair_dimensions(flash);
  auto pair = [&](const std::string& n1, const std::string& v1, const std::string& n2,
                  const std::string& v2) {
    auto at = [&](const std::string& n, const std::string& v) {
      for (std::size_t d = 0; d < dims.size(); ++d) {
        if (dims[d].name != n) continue;
        const auto& vs = dims[d].values;
        return std::pair<int, int>{
            static_cast<int>(d), static_cast<int>(std::find(vs.begin(), vs.end(), v) - vs.begin())};
      }
      ADD_FAILURE() << "no dimension " << n;
      return std::pair<int, int>{0, 0};
    };
    const auto [d1, x1] = at(n1, v1);
    const auto [d2, x2] = at(n2, v2);
    return ValuePair{d1, x1, d2, x2};
  };
  EXPECT_EQ(impossible_reason(flash, dims, pair("dtype", "f64", "causal", "br")),
            "the backend does not take f64");
  EXPECT_EQ(impossible_reason(flash, dims, pair("mask", "bool", "varlen", "packed")),
            "a mask tensor cannot be packed");
  EXPECT_EQ(impossible_reason(flash, dims, pair("dropout", "past_first_key_block", "keys", "=128")),
            "S is at most the first key block: no key lies past it");
  EXPECT_EQ(impossible_reason(flash, dims, pair("dropout", "past_first_key_block", "causal", "tl")),
            "");
  EXPECT_EQ(impossible_reason(flash, dims, pair("dtype", "f16", "layout", "bshd")), "");
  EXPECT_EQ(impossible_reason(flash, dims, pair("backward", "on", "causal", "br")), "");
  // cpu.mem_efficient has no backward: every pair with it is impossible, with that reason.
  const Backend& mem = find_backend_or_throw("cpu.mem_efficient");
  const auto mem_dims = pair_dimensions(mem);
  const auto backward = std::find_if(mem_dims.begin(), mem_dims.end(),
                                     [](const PairDimension& d) { return d.name == "backward"; });
  ASSERT_NE(backward, mem_dims.end());
  const int b = static_cast<int>(backward - mem_dims.begin());
  EXPECT_EQ(impossible_reason(mem, mem_dims, ValuePair{0, 1, b, 1}),
            "the backend has no backward pass");
}

TEST(PairCoverage, TheBackwardIsADimension) {
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.f16.lse.bwd", "cpu.flash", "backward"), "on");
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.f16.lse", "cpu.flash", "backward"), "off");
}

// The backward's lengths are judged against its own blocks: cpu.flash's backward takes 256
// query rows of one head and 128 keys at a time, its forward 64 rows of a KV head's group.
TEST(PairCoverage, TheBackwardsLengthsAreJudgedAgainstItsOwnBlocks) {
  const std::string id = "b1.hq4.hkv2.l256.s195.dqk32.f16.lse.bwd";
  EXPECT_EQ(value_of(id, "cpu.flash", "group_rows"), ">64");
  EXPECT_EQ(value_of(id, "cpu.flash", "query_rows", IsaTarget::scalar, 1, PairPass::backward),
            "=256");
  EXPECT_EQ(value_of("b1.hq4.hkv2.l300.s128.dqk32.f16.lse.bwd", "cpu.flash", "query_rows",
                     IsaTarget::scalar, 1, PairPass::backward),
            ">256");
  EXPECT_EQ(value_of(id, "cpu.flash", "keys", IsaTarget::scalar, 1, PairPass::backward), ">128");
  // cpu.math's backward has no blocks of its own: the forward's cuts.
  const Backend& math = find_backend_or_throw("cpu.math");
  EXPECT_EQ(pair_dimensions(math, PairPass::backward)[16].values, pair_dimensions(math)[16].values);
}

TEST(PairCoverage, TheBackwardsPairsAreThoseOfBackwardJobs) {
  const std::vector<const Backend*> backends = {&find_backend_or_throw("cpu.math"),
                                                &find_backend_or_throw("cpu.flash"),
                                                &find_backend_or_throw("cpu.mem_efficient")};
  const Device device = with_isa_target(detect_cpu(), "scalar");
  const CoveringSet set = generate_covering_set(backends, device);
  ASSERT_EQ(set.backward_impossible.size(), 3u);
  ASSERT_LT(set.backward_from, set.case_ids.size()) << "no case added for the backward";
  const std::vector<std::string> forward_cases(
      set.case_ids.begin(), set.case_ids.begin() + std::ptrdiff_t(set.backward_from));
  for (std::size_t i = 0; i < 2; ++i) {
    const Backend& b = *backends[i];
    // Every possible pair of the backward, among the backward jobs; no pair with it off.
    const auto cov = pair_coverage(b, jobs_at_one_and_two_threads(set.case_ids, b, device),
                                   set.backward_impossible[i], PairPass::backward);
    EXPECT_TRUE(cov.uncovered.empty())
        << b.name() << ": " << describe_pair(cov.dimensions, cov.uncovered.front());
    EXPECT_GT(cov.covered.size(), 500u) << b.name();
    for (const auto* list : {&cov.covered, &cov.uncovered, &cov.impossible}) {
      for (const auto& p : *list)
        EXPECT_EQ(describe_pair(cov.dimensions, p).find("backward=off"), std::string::npos);
    }
    // The forward's cases alone, which meet every value with the backward on, leave pairs of
    // the backward uncovered: the cases after backward_from are needed.
    const auto less = pair_coverage(b, jobs_at_one_and_two_threads(forward_cases, b, device),
                                    set.backward_impossible[i], PairPass::backward);
    EXPECT_FALSE(less.uncovered.empty()) << b.name();
    // The forward's pairs stay covered by the forward's cases.
    EXPECT_TRUE(
        pair_coverage(b, jobs_at_one_and_two_threads(forward_cases, b, device), set.impossible[i])
            .uncovered.empty())
        << b.name();
  }
  // A backend without a backward: every pair of its backward not possible, with the reason.
  const auto none = pair_coverage(*backends[2], {}, set.backward_impossible[2], PairPass::backward);
  EXPECT_TRUE(none.covered.empty() && none.uncovered.empty());
  ASSERT_FALSE(none.impossible.empty());
  EXPECT_EQ(none.impossible_reasons.front(), "the backend has no backward pass");
}

// A generated case whose attended keys dropout drops entirely has an output of zeros, which
// the judge calls MISTRUSTED: it would cover its pairs in no run. The generator leaves such
// cases out (one once came from three batches with lengths 4, 1, 0 and keys 0, 16, 8).
TEST(PairCoverage, NoGeneratedCaseIsMistrusted) {
  const std::vector<const Backend*> backends = {&find_backend_or_throw("cpu.math"),
                                                &find_backend_or_throw("cpu.flash"),
                                                &find_backend_or_throw("cpu.mem_efficient")};
  const Device device = with_isa_target(detect_cpu(), "scalar");
  const Backend& math = *backends[0];
  for (const auto& id : generate_covering_set(backends, device).case_ids) {
    if (id.find(".p0.") == std::string::npos) continue;
    Case c = parse_case_id_or_throw(id);
    if (!math.supports(c.problem, device).ok()) continue;
    EXPECT_NE(check_case(math, c, device).status, Status::mistrusted) << id;
  }
}

TEST(PairCoverage, ARestrictedSetCoversEveryAllowedPairItDoesNotReportImpossible) {
  // f16 only, no mask, window, dropout, softcap, packed rows or row gaps; no empty problem.
  PairRestriction r;
  r.values = {{"dtype", {"f16"}},       {"mask", {"none"}},   {"window", {"off"}},
              {"dropout", {"off"}},     {"softcap", {"off"}}, {"varlen", {"none", "padded"}},
              {"row_pitch", {"dense"}}, {"strides", {"unit"}}};
  r.admit = [](const Case& c) {
    return c.problem.len_q > 0 && c.problem.len_kv > 0;  // no empty problem
  };
  r.lse = true;
  const std::vector<const Backend*> backends = {&find_backend_or_throw("cpu.math"),
                                                &find_backend_or_throw("cpu.flash")};
  const Device device = with_isa_target(detect_cpu(), "scalar");
  const CoveringSet set = generate_covering_set(backends, device, r);
  ASSERT_FALSE(set.case_ids.empty());
  ASSERT_EQ(set.impossible.size(), 2u);
  for (std::size_t i = 0; i < backends.size(); ++i) {
    const auto dims = pair_dimensions(*backends[i]);
    auto allowed = [&](int d, int v) {
      const auto it = r.values.find(dims[d].name);
      return it == r.values.end() || it->second.count(dims[d].values[v]) > 0;
    };
    std::set<ValuePair> covered;
    for (const auto& id : set.case_ids) {
      const Case c = parse_case_id_or_throw(id);
      EXPECT_TRUE(c.problem.want_lse) << id;
      EXPECT_TRUE(r.admit(c)) << id;
      const auto v = classify_job(c, *backends[i], IsaTarget::scalar, 1);
      for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
        if (dims[d].generated) {
          EXPECT_TRUE(allowed(d, v[d])) << id << " " << dims[d].name;
        }
      }
      if (!backends[i]->supports(c.problem, device).ok()) continue;
      for (int a = 0; a < static_cast<int>(dims.size()); ++a)
        for (int b = a + 1; b < static_cast<int>(dims.size()); ++b)
          covered.insert({a, v[a], b, v[b]});
    }
    const std::set<ValuePair> impossible(set.impossible[i].begin(), set.impossible[i].end());
    std::size_t allowed_pairs = 0;
    for (int a = 0; a < static_cast<int>(dims.size()); ++a) {
      for (int b = a + 1; b < static_cast<int>(dims.size()); ++b) {
        if (!dims[a].generated || !dims[b].generated) continue;
        for (int x = 0; x < static_cast<int>(dims[a].values.size()); ++x) {
          for (int y = 0; y < static_cast<int>(dims[b].values.size()); ++y) {
            const ValuePair p{a, x, b, y};
            if (!allowed(a, x) || !allowed(b, y)) {
              EXPECT_FALSE(impossible.count(p)) << "not wanted: " << describe_pair(dims, p);
              continue;
            }
            ++allowed_pairs;
            EXPECT_TRUE(covered.count(p) || impossible.count(p))
                << backends[i]->name() << ": " << describe_pair(dims, p);
          }
        }
      }
    }
    EXPECT_GT(allowed_pairs, 100u);
    // Per-batch lengths with causal bottom-right are possible, hence covered.
    EXPECT_TRUE(std::any_of(covered.begin(), covered.end(), [&](const ValuePair& p) {
      return describe_pair(dims, p) == "causal=br x varlen=padded";
    })) << backends[i]->name();
  }
}

TEST(PairCoverage, EveryValueAllowedIsTheUnrestrictedSet) {
  // Naming every value of every dimension restricts nothing: the same cases, with the LSE.
  const std::vector<const Backend*> backends = {&find_backend_or_throw("cpu.math"),
                                                &find_backend_or_throw("cpu.mem_efficient")};
  const Device device = with_isa_target(detect_cpu(), "scalar");
  PairRestriction r;
  for (const auto& dim : pair_dimensions(*backends[0])) {
    if (dim.generated && dim.name != "query_rows" && dim.name != "keys")
      r.values[dim.name] = {dim.values.begin(), dim.values.end()};
  }
  r.lse = true;
  const CoveringSet all = generate_covering_set(backends, device);
  const CoveringSet restricted = generate_covering_set(backends, device, r);
  // Every restricted case asks for the LSE; the unrestricted ones only with the backward.
  auto without_lse = [](const std::vector<std::string>& ids, bool every) {
    std::vector<std::string> out;
    for (std::string id : ids) {
      const auto at = id.find(".lse.");
      if (every || id.find(".bwd.") != std::string::npos) {
        EXPECT_NE(at, std::string::npos) << id;
      }
      if (at != std::string::npos) id.erase(at, 4);
      out.push_back(id);
    }
    return out;
  };
  EXPECT_EQ(without_lse(restricted.case_ids, true), without_lse(all.case_ids, false));
}

TEST(PairCoverage, IsolatedPairsAreEachFeatureAloneAndEveryTwoTogether) {
  // Two element types, two features (causal bottom-right, per-batch lengths): each feature
  // alone on each type, the two together on the first type, nothing else.
  PairRestriction r;
  r.values = {{"dtype", {"f16", "bf16"}}, {"causal", {"none", "br"}},     {"window", {"off"}},
              {"mask", {"none"}},         {"dropout", {"off"}},           {"softcap", {"off"}},
              {"backward", {"off"}},      {"varlen", {"none", "padded"}}, {"heads", {"mha"}},
              {"layout", {"bhsd"}},       {"row_pitch", {"dense"}},       {"strides", {"unit"}}};
  const Backend& math = find_backend_or_throw("cpu.math");
  const Device device = with_isa_target(detect_cpu(), "scalar");
  const auto ids = isolated_pair_cases(math, device, r);
  std::multiset<std::string> shapes;
  for (const auto& id : ids) {
    const Problem p = parse_case_id_or_throw(id).problem;
    // Beyond one row and one key block of cpu.math: more than one query row, S > L.
    EXPECT_GT(p.len_q, 1) << id;
    EXPECT_GT(p.len_kv, p.len_q) << id;
    EXPECT_EQ(p.heads_q, p.heads_kv) << id;
    std::string shape(dtype_name(p.dtype));
    if (p.causal == Causal::bottom_right) shape += "+br";
    if (!p.seqlens_q.empty()) shape += "+varlen";
    shapes.insert(shape);
  }
  EXPECT_EQ(shapes, (std::multiset<std::string>{"f16+br", "f16+varlen", "bf16+br", "bf16+varlen",
                                                "f16+br+varlen"}));
  // A restriction that admits nothing leaves nothing.
  r.admit = [](const Case&) { return false; };
  EXPECT_TRUE(isolated_pair_cases(math, device, r).empty());
}

TEST(PairCoverage, ARestrictionNamesKnownDimensionsAndValues) {
  const std::vector<const Backend*> math = {&find_backend_or_throw("cpu.math")};
  const Device device = with_isa_target(detect_cpu(), "scalar");
  PairRestriction r;
  r.values = {{"colour", {"red"}}};
  EXPECT_THROW(generate_covering_set(math, device, r), std::invalid_argument);
  r.values = {{"dtype", {"f8"}}};
  EXPECT_THROW(generate_covering_set(math, device, r), std::invalid_argument);
}

}  // namespace
}  // namespace sdpa::conformance
