# Precompiled headers for the heavy third-party headers (nlohmann/json, CLI11,
# spdlog, GoogleTest): GCC parses them once per target, or once for several
# stages through REUSE_FROM, instead of once per translation unit.
#
# Off by default, on for CI's -O1 sanitizer builds (ci/test.sh): GCC 12 does not
# keep `#pragma GCC diagnostic` in a precompiled header, so libstdc++'s own
# suppression of -Warray-bounds and -Wstringop-overflow in <string> is lost and
# -O2 -Werror fails on its known false positives. At -O1 those warnings do not
# run. GCC 13 keeps the pragmas.
#
# A target gets only headers its own dependencies provide (the stages that use
# no JSON get none), so the stage layering still shows in the build. GCC uses a
# reused header only where the flags that matter match; where they do not it
# warns (-Winvalid-pch, kept a warning under -Werror) and compiles as if there
# were none: a mismatch costs time, never correctness. Clang (the libFuzzer
# build, tests/fuzz/run.sh) refuses a reused header whose -D macros differ, so
# there each target precompiles its own.
option(PERFGATE_PCH "Precompile the heavy third-party headers (see cmake/precompiled_headers.cmake)" OFF)
if(PERFGATE_PCH AND CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$")
  set(PERFGATE_USE_PCH ON)
else()
  set(PERFGATE_USE_PCH OFF)
endif()

# Standard headers most units include; cheap to add to each set.
set(PERFGATE_PCH_STD <algorithm> <chrono> <cstdint> <filesystem> <fstream> <functional>
    <map> <memory> <optional> <sstream> <string> <string_view> <vector>)

# perfgate_pch(TARGET header...): TARGET precompiles the standard set and HEADERS.
function(perfgate_pch target)
  if(PERFGATE_USE_PCH)
    target_precompile_headers(${target} PRIVATE ${PERFGATE_PCH_STD} ${ARGN})
  endif()
endfunction()

# perfgate_test_pch(TARGET header...): as perfgate_pch, and also whenever the
# test files compile at -O0 or -O1 (PERFGATE_TEST_OPT), where the pragmas do not matter.
function(perfgate_test_pch target)
  if(PERFGATE_USE_PCH OR (PERFGATE_TEST_OPT AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"))
    target_precompile_headers(${target} PRIVATE ${PERFGATE_PCH_STD} ${ARGN})
  endif()
endfunction()

# perfgate_reuse_pch(FROM target...): each target uses FROM's precompiled header,
# and so depends on FROM; for targets with the same compile flags and definitions.
# With clang, each target precompiles FROM's headers itself instead.
function(perfgate_reuse_pch from)
  if(PERFGATE_USE_PCH)
    get_target_property(headers ${from} PRECOMPILE_HEADERS)
    foreach(target IN LISTS ARGN)
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        target_precompile_headers(${target} REUSE_FROM ${from})
        target_compile_options(${target} PRIVATE -Winvalid-pch -Wno-error=invalid-pch)
      else()
        target_precompile_headers(${target} PRIVATE ${headers})
      endif()
    endforeach()
  endif()
endfunction()
