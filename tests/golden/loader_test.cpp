// The golden-file loader: the committed smoke set loads and is laid out as the case IDs say,
// and deliberately broken copies of it (made here with the HDF5 C API) give clear errors
// that name the file, the group and the dataset.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>

#include "golden/golden_file.hpp"

namespace sdpa::golden {
namespace {

namespace fs = std::filesystem;

std::string smoke_path() { return std::string(SDPA_GOLDEN_DIR) + "/smoke.h5"; }

// A scratch directory per test, removed afterwards.
class GoldenLoader : public testing::Test {
 protected:
  void SetUp() override {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("sdpa_golden_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A copy of the smoke set (or of `source`), changed by `edit` through the HDF5 C API.
  std::string broken_copy(const std::function<void(hid_t file)>& edit,
                          const std::string& source = smoke_path()) {
    const std::string path = (dir_ / "broken.h5").string();
    fs::copy_file(source, path, fs::copy_options::overwrite_existing);
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    EXPECT_GE(f, 0);
    edit(f);
    H5Fclose(f);
    return path;
  }

  std::vector<unsigned char> smoke_bytes() {
    std::ifstream in(smoke_path(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  std::string write_bytes(const std::vector<unsigned char>& bytes) {
    const std::string path = (dir_ / "raw.h5").string();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  fs::path dir_;
};

// The first smoke case whose ID contains every fragment.
std::string find_case(std::initializer_list<const char*> fragments) {
  const GoldenFile f(smoke_path());
  for (const auto& id : f.case_ids()) {
    bool all = true;
    for (const char* s : fragments) all = all && id.find(s) != std::string::npos;
    if (all) return id;
  }
  ADD_FAILURE() << "no smoke case matches";
  return "";
}

// Expects `fn` to throw E with a message containing every fragment.
template <typename E>
void expect_error(const std::function<void()>& fn, std::initializer_list<std::string> fragments) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& s : fragments) {
      EXPECT_NE(msg.find(s), std::string::npos) << "'" << s << "' not in: " << msg;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

void load_all(const std::string& path) {
  const GoldenFile f(path);
  for (const auto& id : f.case_ids()) f.load(id);
}

hid_t group_of(hid_t file, const std::string& id) {
  return H5Gopen2(file, ("/sdpa/" + id).c_str(), H5P_DEFAULT);
}

void replace_dataset(hid_t group, const char* name, hid_t type, std::vector<hsize_t> dims,
                     const void* data) {
  H5Ldelete(group, name, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t ds = H5Dcreate2(group, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(ds, 0);
  ASSERT_GE(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0);
  H5Dclose(ds);
  H5Sclose(space);
}

void set_string_attribute(hid_t obj, const char* name, const std::string& value) {
  H5Adelete(obj, name);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size());
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, type, value.data());
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

TEST_F(GoldenLoader, SmokeSetOpensWithProvenance) {
  const GoldenFile f(smoke_path());
  EXPECT_EQ(f.info().schema_version, 1);  // no backward case: version 1
  EXPECT_EQ(f.info().semantics_version, kSemanticsVersion);
  EXPECT_EQ(f.info().generator, "golden/generate.py");
  EXPECT_FALSE(f.info().generator_version.empty());
  EXPECT_GE(f.info().precision_digits, 40);
  EXPECT_EQ(f.info().set, "smoke");
  EXPECT_GE(f.case_ids().size(), 50u);
  EXPECT_LE(f.case_ids().size(), 100u);
  EXPECT_TRUE(std::is_sorted(f.case_ids().begin(), f.case_ids().end()));
}

TEST_F(GoldenLoader, EveryCaseLoadsWithConsistentShapes) {
  const GoldenFile f(smoke_path());
  for (const auto& id : f.case_ids()) {
    const GoldenCase g = f.load(id);
    const Problem& p = g.c.problem;
    EXPECT_EQ(g.id, id);
    EXPECT_EQ(format_case_id(g.c), id);
    EXPECT_EQ(g.c.data.generator, "golden") << id;
    EXPECT_EQ(g.o.size(), static_cast<std::size_t>(p.batch * p.heads_q * p.len_q * p.head_dim_v));
    EXPECT_EQ(g.lse.size(), static_cast<std::size_t>(p.batch * p.heads_q * p.len_q));
    EXPECT_EQ(g.has_weights, p.want_weights) << id;
    EXPECT_EQ(g.inputs.mask.has_value(), p.mask != MaskKind::none) << id;
    EXPECT_FALSE(g.family.empty()) << id;
    EXPECT_FALSE(g.note.empty()) << id;
  }
}

TEST_F(GoldenLoader, InputsLandAtTheLayoutsOffsetsAndGapsStayPoisoned) {
  const std::string id = find_case({"gap=3", "off=1", "bf16"});
  const GoldenFile f(smoke_path());
  const GoldenCase g = f.load(id);
  const Problem& p = g.c.problem;
  // Read the stored q (raw bf16 bits, row-major [B, H, L, D]) directly.
  const hid_t file = H5Fopen(smoke_path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t grp = group_of(file, id);
  const hid_t ds = H5Dopen2(grp, "q", H5P_DEFAULT);
  std::vector<std::uint16_t> raw(
      static_cast<std::size_t>(p.batch * p.heads_q * p.len_q * p.head_dim_qk));
  ASSERT_GE(H5Dread(ds, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()), 0);
  H5Dclose(ds);
  H5Gclose(grp);
  H5Fclose(file);
  const auto* q = static_cast<const std::uint16_t*>(g.inputs.q.data());
  std::size_t n = 0;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < p.heads_q; ++h)
      for (std::int64_t i = 0; i < p.len_q; ++i) {
        for (std::int64_t d = 0; d < p.head_dim_qk; ++d, ++n) {
          EXPECT_EQ(q[b * p.q.stride[0] + h * p.q.stride[1] + i * p.q.stride[2] + d], raw[n]);
        }
        for (std::int64_t d = p.head_dim_qk; d < p.q.stride[2]; ++d) {  // the gap
          EXPECT_EQ(q[b * p.q.stride[0] + h * p.q.stride[1] + i * p.q.stride[2] + d], 0x7FA5);
        }
      }
  EXPECT_EQ(q[-1], 0x7FA5);  // the base offset
  EXPECT_FALSE(g.inputs.q.check_unchanged());
}

TEST_F(GoldenLoader, StrideZeroInputsShareMemory) {
  const std::string id = find_case({"kst=16_0_4_1_0"});
  const GoldenCase g = GoldenFile(smoke_path()).load(id);
  EXPECT_EQ(g.inputs.k.view().stride[1], 0);
}

TEST_F(GoldenLoader, MissingFile) {
  const std::string path = (dir_ / "nope.h5").string();
  expect_error<std::runtime_error>([&] { GoldenFile f(path); }, {path, "no such file"});
}

TEST_F(GoldenLoader, DirectoryIsNotAFile) {
  expect_error<std::runtime_error>([&] { GoldenFile f(dir_.string()); }, {"is a directory"});
}

TEST_F(GoldenLoader, NotAnHdf5File) {
  const std::string path = write_bytes({'h', 'e', 'l', 'l', 'o', '\n'});
  expect_error<std::runtime_error>([&] { GoldenFile f(path); }, {path, "not an HDF5 file"});
}

TEST_F(GoldenLoader, TruncatedFile) {
  auto bytes = smoke_bytes();
  bytes.resize(bytes.size() / 2);
  const std::string path = write_bytes(bytes);
  expect_error<std::runtime_error>([&] { load_all(path); }, {path, "truncated or corrupt"});
}

TEST_F(GoldenLoader, CorruptDataAreDetected) {
#ifdef __SANITIZE_ADDRESS__
  // libhdf5 1.10.8 itself leaks 424 bytes after an object header fails its checksum, which
  // LeakSanitizer reports at exit; the release build runs this test.
  GTEST_SKIP() << "HDF5's own leak on checksum failure";
#endif
  // Flip one byte inside the stored expected output of one case: the object header that
  // holds it is checksummed, so reading that case must fail.
  const std::string id = find_case({"f64.lse.attnw"});
  const GoldenCase g = GoldenFile(smoke_path()).load(id);
  auto bytes = smoke_bytes();
  const auto* pattern = reinterpret_cast<const unsigned char*>(g.o.data());
  auto it = std::search(bytes.begin(), bytes.end(), pattern, pattern + 32);
  ASSERT_NE(it, bytes.end());
  it[5] ^= 0x40;
  const std::string path = write_bytes(bytes);
  const GoldenFile f(path);
  expect_error<std::runtime_error>([&] { f.load(id); }, {path, "/sdpa/" + id, "HDF5"});
}

TEST_F(GoldenLoader, MissingSchemaAttribute) {
  const auto path = broken_copy([](hid_t f) { H5Adelete(f, "schema"); });
  expect_error<std::invalid_argument>([&] { GoldenFile g(path); },
                                      {path, "attribute 'schema'", "not an sdpa-cts golden file"});
}

TEST_F(GoldenLoader, WrongSchemaVersion) {
  const auto path = broken_copy([](hid_t f) {
    const hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
    const std::int64_t v = 3;
    H5Awrite(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a);
  });
  expect_error<std::invalid_argument>([&] { GoldenFile g(path); },
                                      {path, "schema version 3", "reads versions 1 to 2"});
}

std::string backward_path() { return std::string(SDPA_GOLDEN_DIR) + "/backward.h5"; }

TEST_F(GoldenLoader, BackwardCasesCarryDoutAndTheGradients) {
  const GoldenFile f(backward_path());
  EXPECT_EQ(f.info().schema_version, 2);
  ASSERT_FALSE(f.case_ids().empty());
  int dbias_cases = 0;
  for (const auto& id : f.case_ids()) {
    const GoldenCase g = f.load(id);
    const Problem& p = g.c.problem;
    ASSERT_TRUE(p.backward) << id;
    ASSERT_TRUE(g.has_gradients) << id;
    ASSERT_TRUE(g.inputs.d_out.has_value()) << id;
    EXPECT_EQ(g.inputs.d_out->view().shape, o_view(p).shape) << id;
    EXPECT_EQ(g.dq.size(), static_cast<std::size_t>(p.batch * p.heads_q * p.len_q * p.head_dim_qk));
    EXPECT_EQ(g.dk.size(),
              static_cast<std::size_t>(p.batch * p.heads_kv * p.len_kv * p.head_dim_qk));
    EXPECT_EQ(g.dv.size(),
              static_cast<std::size_t>(p.batch * p.heads_kv * p.len_kv * p.head_dim_v));
    // d bias in the mask's stored shape, exactly where the ID asks for it.
    EXPECT_EQ(g.dbias.size(), p.bias_grad ? static_cast<std::size_t>(mask_elements(p)) : 0u) << id;
    dbias_cases += p.bias_grad;
  }
  EXPECT_EQ(dbias_cases, 2);
  // The smoke set is version 1 and has no backward case.
  const GoldenFile smoke(smoke_path());
  EXPECT_EQ(smoke.info().schema_version, 1);
}

TEST_F(GoldenLoader, ABackwardCaseNeedsSchemaVersion2) {
  const auto path = broken_copy(
      [](hid_t f) {
        const hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
        const std::int64_t v = 1;
        H5Awrite(a, H5T_NATIVE_INT64, &v);
        H5Aclose(a);
      },
      backward_path());
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(f.case_ids().front()); },
                                      {"bwd", "schema version 1", "version 2"});
}

TEST_F(GoldenLoader, ABackwardCaseWithoutItsGradientsIsRefused) {
  std::string id;
  const auto path = broken_copy(
      [&](hid_t f) {
        id = GoldenFile(backward_path()).case_ids().front();
        const hid_t g = group_of(f, id);
        H5Ldelete(g, "dk", H5P_DEFAULT);
        H5Gclose(g);
      },
      backward_path());
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); }, {"dataset 'dk'", "missing"});
}

TEST_F(GoldenLoader, GradientsWithoutBwdAreRefused) {
  const std::string id = find_case({"f32", "mask=add", "mbc=bh"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t g = group_of(f, id);
    std::vector<double> dq(2 * 2 * 5 * 8, 0.0);
    replace_dataset(g, "dq", H5T_IEEE_F64LE, {2, 2, 5, 8}, dq.data());
    H5Gclose(g);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); }, {"dataset 'dq'", "no bwd"});
}

TEST_F(GoldenLoader, WrongSemanticsVersion) {
  const auto path = broken_copy([](hid_t f) { set_string_attribute(f, "semantics_version", "0"); });
  expect_error<std::invalid_argument>([&] { GoldenFile g(path); }, {"semantics_version", "'0'"});
}

TEST_F(GoldenLoader, MissingDataset) {
  const std::string id = find_case({"f32", "mask=add"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t g = group_of(f, id);
    H5Ldelete(g, "o", H5P_DEFAULT);
    H5Gclose(g);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); },
                                      {path, "group '/sdpa/" + id + "'", "dataset 'o'", "missing"});
}

TEST_F(GoldenLoader, WrongShape) {
  const std::string id = find_case({"f32", "mask=add"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t g = group_of(f, id);
    std::vector<float> data(2 * 5 * 8, 1.0f);
    replace_dataset(g, "q", H5T_IEEE_F32LE, {1, 2, 5, 8 - 1}, data.data());
    H5Gclose(g);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>(
      [&] { f.load(id); }, {"dataset 'q'", "expected shape [1, 2, 5, 8], got [1, 2, 5, 7]"});
}

TEST_F(GoldenLoader, WrongElementType) {
  const std::string id = find_case({"f32", "mask=add"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t g = group_of(f, id);
    std::vector<double> data(2 * 7 * 8, 1.0);
    replace_dataset(g, "k", H5T_IEEE_F64LE, {1, 2, 7, 8}, data.data());
    H5Gclose(g);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); }, {"dataset 'k'", "expected f32"});
}

TEST_F(GoldenLoader, HalfWithoutDtypeAttribute) {
  const std::string id = find_case({".f16.", "scale=0.125"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t ds = H5Dopen2(group_of(f, id), "v", H5P_DEFAULT);
    H5Adelete(ds, "dtype");
    H5Dclose(ds);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); },
                                      {"dataset 'v'", "need the attribute dtype = 'f16'"});
}

TEST_F(GoldenLoader, DtypeAttributeContradictsTheCase) {
  const std::string id = find_case({".bf16.", "gap=3"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t ds = H5Dopen2(group_of(f, id), "v", H5P_DEFAULT);
    set_string_attribute(ds, "dtype", "f16");
    H5Dclose(ds);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); },
                                      {"dataset 'v'", "dtype is 'f16' but the case is bf16"});
}

TEST_F(GoldenLoader, BoolMaskValueOutOfRange) {
  const std::string id = find_case({"mask=bool", "mbc=l"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t g = group_of(f, id);
    std::vector<std::uint8_t> m(2 * 7, 1);
    m[3] = 2;
    replace_dataset(g, "mask", H5T_STD_U8LE, {1, 2, 1, 7}, m.data());
    H5Gclose(g);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); },
                                      {"dataset 'mask'", "bool mask value 2 at flat index 3"});
}

TEST_F(GoldenLoader, GroupNameMustBeCanonical) {
  const std::string id = find_case({"f32", "mask=add", "mbc=bh"});
  // Drop ".hkv2" (the parser defaults hkv to hq, so the name parses but is not canonical).
  std::string alias = id;
  alias.erase(alias.find(".hkv2"), 5);
  const auto path = broken_copy([&](hid_t f) {
    H5Lmove(f, ("/sdpa/" + id).c_str(), f, ("/sdpa/" + alias).c_str(), H5P_DEFAULT, H5P_DEFAULT);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(alias); },
                                      {"/sdpa/" + alias, "not the canonical case ID '" + id + "'"});
}

TEST_F(GoldenLoader, GroupNameMustBeACaseId) {
  const std::string id = find_case({"f32", "mask=add"});
  const auto path = broken_copy([&](hid_t f) {
    H5Lmove(f, ("/sdpa/" + id).c_str(), f, "/sdpa/bogus", H5P_DEFAULT, H5P_DEFAULT);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load("bogus"); },
                                      {"/sdpa/bogus", "not a valid case ID"});
}

TEST_F(GoldenLoader, InvalidProblem) {
  const std::string id = find_case({"f32", "mask=add"});
  std::string bad = id;
  bad.replace(bad.find("hkv2"), 4, "hkv3");  // 2 query heads cannot share 3 KV heads
  const auto path = broken_copy([&](hid_t f) {
    H5Lmove(f, ("/sdpa/" + id).c_str(), f, ("/sdpa/" + bad).c_str(), H5P_DEFAULT, H5P_DEFAULT);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(bad); }, {"invalid problem", "hkv"});
}

TEST_F(GoldenLoader, StrideZeroElementsMustAgree) {
  const std::string id = find_case({"kst=16_0_4_1_0"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t g = group_of(f, id);
    std::vector<float> k(2 * 2 * 4 * 4);
    for (std::size_t n = 0; n < k.size(); ++n) k[n] = static_cast<float>(n);  // heads differ
    replace_dataset(g, "k", H5T_IEEE_F32LE, {2, 2, 4, 4}, k.data());
    H5Gclose(g);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); },
                                      {"dataset 'k'", "share memory through a stride of 0"});
}

TEST_F(GoldenLoader, SeqlensMustMatchTheId) {
  const std::string id = find_case({"qlen=4_0_2"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t g = group_of(f, id);
    const std::int32_t lens[3] = {4, 1, 2};
    replace_dataset(g, "seqlens_q", H5T_STD_I32LE, {3}, lens);
    H5Gclose(g);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); },
                                      {"dataset 'seqlens_q'", "holds [4, 1, 2]", "[4, 0, 2]"});
}

TEST_F(GoldenLoader, WeightsWithoutAttnw) {
  const std::string id = find_case({"f32", "mask=add", "mbc=bh"});
  const auto path = broken_copy([&](hid_t f) {
    const hid_t g = group_of(f, id);
    std::vector<double> w(2 * 2 * 5 * 7, 0.0);
    replace_dataset(g, "weights", H5T_IEEE_F64LE, {2, 2, 5, 7}, w.data());
    H5Gclose(g);
  });
  const GoldenFile f(path);
  expect_error<std::invalid_argument>([&] { f.load(id); }, {"dataset 'weights'", "no attnw"});
}

TEST_F(GoldenLoader, MhaCasesLoad) {
  const GoldenFile f(smoke_path());
  ASSERT_GE(f.mha_case_names().size(), 5u);
  for (const auto& name : f.mha_case_names()) {
    const MhaGoldenCase c = f.load_mha(name);
    const auto& p = c.problem;
    const std::int64_t E = p.embed_dim;
    EXPECT_EQ(c.out.size(), static_cast<std::size_t>(p.len_q * p.batch * E)) << name;
    EXPECT_EQ(c.inputs.query.size(), c.out.size()) << name;
    EXPECT_EQ(c.weights.empty(), !p.need_weights) << name;
    EXPECT_FALSE(c.note.empty()) << name;
  }
}

TEST_F(GoldenLoader, MhaMissingAttributeAndArray) {
  const std::string name = GoldenFile(smoke_path()).mha_case_names()[0];
  const auto path = broken_copy([&](hid_t f) {
    const hid_t g = H5Gopen2(f, ("/mha/" + name).c_str(), H5P_DEFAULT);
    H5Adelete(g, "num_heads");
    H5Gclose(g);
  });
  expect_error<std::invalid_argument>([&] { GoldenFile(path).load_mha(name); },
                                      {"/mha/" + name, "attribute 'num_heads'", "missing"});
  const auto path2 = broken_copy([&](hid_t f) {
    const hid_t g = H5Gopen2(f, ("/mha/" + name).c_str(), H5P_DEFAULT);
    H5Ldelete(g, "out_proj_weight", H5P_DEFAULT);
    H5Gclose(g);
  });
  expect_error<std::invalid_argument>([&] { GoldenFile(path2).load_mha(name); },
                                      {"dataset 'out_proj_weight'", "missing"});
}

TEST_F(GoldenLoader, UnknownCase) {
  const GoldenFile f(smoke_path());
  expect_error<std::invalid_argument>([&] { f.load("b1.hq1.l1.s1.dqk1.f32.seed0.gen=x"); },
                                      {"no case"});
}

}  // namespace
}  // namespace sdpa::golden
