# Compiler policy shared by every target.
#
# -ffp-contract=off: the compiler never fuses a*b+c on its own. Code that wants a fused
# multiply-add says so (std::fma or intrinsics), so results are the same bits whatever
# instruction set the compiler targets: a case ID gives the same bytes on every machine.
add_library(sdpa_options INTERFACE)
target_compile_options(sdpa_options INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-psabi -ffp-contract=off
  -fno-math-errno>
  # The same policy in CUDA device code: no multiply-add contracted by the compiler.
  $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>)
# The project root (for "core/...", "kernels/...") and include/ (the public C headers,
# "sdpa_cts/params.h" and "sdpa_cts/plugin.h").
target_include_directories(sdpa_options INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(sdpa_options INTERFACE
  SDPA_CTS_VERSION="${PROJECT_VERSION}")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # GCC 12 at -O2 and above reports -Wrestrict inside libstdc++'s own std::string code
  # (char_traits.h's memcpy, reached from operator+ and replace) where nothing overlaps: GCC
  # bug 105329, fixed in GCC 13. Off for GCC 12 alone; Clang and newer GCCs keep it.
  target_compile_options(sdpa_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
if(SDPA_CTS_WERROR)
  # A user reads a warning as a defect: CI's builds (GCC's release build, Clang's sanitizer
  # build) hold the project at none.
  target_compile_options(sdpa_options INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:-Werror>)
endif()
if(SDPA_CTS_FUZZ)
  # Coverage instrumentation for libFuzzer in every library; the fuzz_* executables add the
  # driver (fuzz/CMakeLists.txt).
  target_compile_options(sdpa_options INTERFACE -fsanitize=fuzzer-no-link)
endif()
if(SDPA_CTS_TSAN)
  # ThreadSanitizer over the threaded kernels (scripts/tsan-check.sh): Clang with LLVM's
  # OpenMP runtime, whose Archer tool (OMP_TOOL_LIBRARIES) tells TSan about OpenMP's
  # synchronisation.
  target_compile_options(sdpa_options INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(sdpa_options INTERFACE -fsanitize=thread)
endif()
if(SDPA_CTS_SANITIZE)
  target_compile_options(sdpa_options INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(sdpa_options INTERFACE -fsanitize=address,undefined)
endif()
