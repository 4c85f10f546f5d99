// Every family at once: any case the problem sampler draws (conformance/engine/rc_case_gen.hpp,
// shrinking toward the smallest legal problem) passes on every backend, restricted to what
// the backend declares (its element types, the weights output).
#include <algorithm>

#include "conformance/engine/rc_case_gen.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

class Sampled : public testing::TestWithParam<Combo> {
 protected:
  const Backend& backend() const { return *GetParam().backend; }
  TargetRun options() const { return {0, GetParam().target}; }
  SamplerOptions sampler(bool adversarial) const {
    SamplerOptions o;
    o.dtypes = backend().capabilities().dtypes;
    o.weights_output = backend().capabilities().weights;
    o.lse_output = backend().capabilities().lse;
    o.backward = backend().capabilities().backward;
    o.max_work = 1 << 17;  // small problems: many cases per second
    o.max_len = 200;
    o.adversarial_data = adversarial;
    return o;
  }
};

TEST_P(Sampled, AnySampledCasePasses) {
  check("any sampled case with plain data passes", [&] {
    const Case c = *gen_case(sampler(false));
    require_pass(backend(), c, options());
  });
}

TEST_P(Sampled, AnySampledAdversarialCasePasses) {
  check("any sampled case, adversarial data included, passes", [&] {
    const Case c = *gen_case(sampler(true));
    RC_TAG(c.data.generator);
    require_pass(backend(), c, options());
  });
}

INSTANTIATE_TEST_SUITE_P(All, Sampled, testing::ValuesIn(every_backend()), combo_name);

}  // namespace
}  // namespace sdpa::props
