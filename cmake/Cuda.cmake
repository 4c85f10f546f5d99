# CUDA (docs/KERNELS.md, "CUDA"): SDPA_CTS_CUDA=AUTO builds the CUDA runtime layer and the
# CUDA kernels when nvcc is found, ON requires it, OFF leaves them out (the CUDA backends are
# then descriptors whose run() says so). Sets SDPA_CTS_HAVE_CUDA for the rest of the build.
set(SDPA_CTS_CUDA AUTO CACHE STRING "CUDA runtime and kernels: AUTO (when nvcc is found), ON, OFF")
set_property(CACHE SDPA_CTS_CUDA PROPERTY STRINGS AUTO ON OFF)
set(SDPA_CTS_HAVE_CUDA OFF)
if(NOT SDPA_CTS_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # sm80 (A100) and sm90 (H100 / H200): the architectures the kernels are written for.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(SDPA_CTS_HAVE_CUDA ON)
  elseif(SDPA_CTS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SDPA_CTS_CUDA=ON but no CUDA compiler (nvcc) was found: put it on PATH "
                        "or set CMAKE_CUDA_COMPILER")
  endif()
endif()
if(SDPA_CTS_HAVE_CUDA)
  message(STATUS "sdpa-cts: CUDA on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
                 "${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "sdpa-cts: CUDA off (SDPA_CTS_CUDA=${SDPA_CTS_CUDA})")
endif()
