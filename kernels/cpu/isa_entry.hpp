// The names a per-target unit exports (kernels/cpu/isa_dispatch.hpp says how they are
// dispatched). Macros only: a per-target unit includes this without pulling in any library code
// that its instruction-set flags would compile (the linker could pick such inline code for
// callers on another target).
#pragma once

#define SDPA_CTS_ISA_PASTE2(a, b) a##_##b
#define SDPA_CTS_ISA_PASTE(a, b) SDPA_CTS_ISA_PASTE2(a, b)
#define SDPA_CTS_ISA_STR2(x) #x
#define SDPA_CTS_ISA_STR(x) SDPA_CTS_ISA_STR2(x)

#ifdef SDPA_CTS_ISA
// In a per-target unit (SDPA_CTS_ISA is its target's name): the exported name name_<target>,
// the target as an IsaTarget (core/device.hpp) and its name as a string.
#define SDPA_CTS_ISA_ENTRY(name) SDPA_CTS_ISA_PASTE(name, SDPA_CTS_ISA)
#define SDPA_CTS_ISA_TARGET_VALUE ::sdpa::IsaTarget::SDPA_CTS_ISA
#define SDPA_CTS_ISA_NAME SDPA_CTS_ISA_STR(SDPA_CTS_ISA)
// A namespace private to the unit, impl_<target> (an object-like macro, so that formatters
// read `namespace a::SDPA_CTS_ISA_NAMESPACE {` as a namespace).
#define SDPA_CTS_ISA_NAMESPACE SDPA_CTS_ISA_PASTE(impl, SDPA_CTS_ISA)
#endif
