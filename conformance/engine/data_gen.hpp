// Input data of a case: a pure function of its case ID (generator name + seed + shape).
//
// Every value comes from Philox4x32-10 with key = seed and counter = (element index,
// tensor id), turned into a double with exact arithmetic only (no libm calls) and rounded
// once into the element type: the same ID gives the same bytes on any machine, at any
// thread count. The generators (names as in the case ID's `gen=`; docs/CASE_ID.md):
//   normal, uniform, int, sparse, zeros    the same distribution in every tensor;
//   large_logits, logits_88, negative_logits, v_near_max, neg_inf_blocks, nan_beyond,
//   denormals                              the adversarial data of docs/TESTING.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/case_buffers.hpp"
#include "core/case_id.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::conformance {

// Names of the data generators this build knows, e.g. "normal".
const std::vector<std::string>& data_generator_names();
// Throws std::invalid_argument naming `name` and the known generators unless it is one.
void require_known_generator(const std::string& name);

// Allocates and fills the inputs. Throws std::invalid_argument naming the problem for an
// invalid problem or an unknown generator.
InputBuffers make_inputs(const Case& c);

}  // namespace sdpa::conformance
