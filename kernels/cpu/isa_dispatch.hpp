// Per-target kernel entries and their dispatch, generated from the one table of ISA targets
// (core/isa_targets.def), in the spirit of Highway's HWY_EXPORT / HWY_DYNAMIC_DISPATCH.
//
// A per-target kernel is an implementation header compiled once per target it specialises for
// (sdpa_cts_isa_units, cmake/BackendFamily.cmake), each unit with SDPA_CTS_ISA defined to the
// target's name. The header names what it exports SDPA_CTS_ISA_ENTRY(name), which is
// name_<target> (run_item_avx2), and may use SDPA_CTS_ISA_TARGET (the IsaTarget) and
// SDPA_CTS_ISA_NAME ("avx2"). Its caller, with the generated list "<header stem>_isas.hpp":
//
//   SDPA_CTS_ISA_DECLARE(flash_impl, RunItemFn, run_item)   // declares run_item_<isa> for each
//   RunItemFn* fn = SDPA_CTS_ISA_DISPATCH(flash_impl, RunItemFn, flash::run_item, target);
//
// The dispatch is a table over every target of core/isa_targets.def: the kernel's own entry
// where it has a unit for the target, else the nearest earlier target's (the table is in
// ascending order; every kernel has a scalar unit). Adding a target touches the table and the
// ISAS lists of the kernels that specialise for it; no switch statement names a target.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <utility>

#include "core/device.hpp"
#include "kernels/cpu/isa_entry.hpp"

// Declarations of name_<isa> for every target `kernel` has a unit for; Fn is a function type.
#define SDPA_CTS_ISA_DECLARE_ONE(isa, Fn, name) Fn SDPA_CTS_ISA_PASTE(name, isa);
#define SDPA_CTS_ISA_DECLARE(kernel, Fn, name) \
  SDPA_CTS_ISAS_##kernel(SDPA_CTS_ISA_DECLARE_ONE, Fn, name)

// The entry of `kernel` for `target` (an IsaTarget), as a Fn*.
#define SDPA_CTS_ISA_PAIR_ONE(isa, name) {::sdpa::IsaTarget::isa, &SDPA_CTS_ISA_PASTE(name, isa)},
#define SDPA_CTS_ISA_DISPATCH(kernel, Fn, name, target)                                    \
  ([]() -> const ::sdpa::cpu::IsaTable<Fn>& {                                              \
    static const ::sdpa::cpu::IsaTable<Fn> table =                                         \
        ::sdpa::cpu::isa_table<Fn>({SDPA_CTS_ISAS_##kernel(SDPA_CTS_ISA_PAIR_ONE, name)}); \
    return table;                                                                          \
  }()[static_cast<std::size_t>(target)])

namespace sdpa::cpu {

template <typename Fn>
using IsaTable = std::array<Fn*, kIsaTargetCount>;

// The table of a kernel from the targets it has units for: a target without a unit gets the
// nearest earlier target's entry.
template <typename Fn>
IsaTable<Fn> isa_table(std::initializer_list<std::pair<IsaTarget, Fn*>> own) {
  IsaTable<Fn> t{};
  for (const auto& [target, fn] : own) t[static_cast<std::size_t>(target)] = fn;
  if (t[0] == nullptr)
    throw std::logic_error("a per-target kernel needs a unit for the first target");
  for (std::size_t i = 1; i < t.size(); ++i)
    if (t[i] == nullptr) t[i] = t[i - 1];
  return t;
}

}  // namespace sdpa::cpu
