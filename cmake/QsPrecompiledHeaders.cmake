# Precompiled headers. Parsing Eigen, nlohmann/json and GoogleTest costs about 6 s in every translation
# unit that includes them (3.3 s, 2.5 s and 1.8 s on one core here; Qt and CLI11 add more), which was
# most of a fresh build. QS_PCH=OFF builds without them: each source then has to include what it uses
# by itself, which such a build checks.
#
# GCC reuses a precompiled header only under the flags it was made with; CMake adds -Winvalid-pch, so
# a mismatch is a warning (an error under QS_WARNINGS_AS_ERRORS), never a silent slow parse.
option(QS_PCH "Precompile the large third-party headers (Eigen, nlohmann/json, GoogleTest, Qt, CLI11)" ON)

# The headers most of our sources include (counted over core/, app/, tests/).
set(QS_PCH_COMMON_HEADERS
  <algorithm> <array> <cmath> <cstdint> <cstring> <filesystem> <fstream> <functional> <limits> <map>
  <memory> <optional> <random> <span> <string> <string_view> <utility> <vector>
  <qs/eigen.h> <nlohmann/json.hpp>)

# qs_precompile_headers(TARGET [HEADER...]): TARGET's sources start from its own precompiled header of
# the common headers and HEADER... (for targets with many sources: the core libraries, the GUI, the CLI).
function(qs_precompile_headers target)
  if(QS_PCH)
    target_precompile_headers(${target} PRIVATE ${QS_PCH_COMMON_HEADERS} ${ARGN})
  endif()
endfunction()

# qs_reuse_precompiled_headers(TARGET FROM): TARGET compiles with FROM's precompiled header, for the
# many one- or two-source test programs, where a header of their own would cost more than it saves.
# TARGET must compile with FROM's flags (position-independence included).
function(qs_reuse_precompiled_headers target from)
  if(QS_PCH)
    target_precompile_headers(${target} REUSE_FROM ${from})
  endif()
endfunction()

# With a precompiled header, GCC 12 reports -Wstringop-overflow and -Warray-bounds inside libstdc++'s
# std::string (char_traits::copy inlined from `"literal" + std::string`, the family of GCC bugs 105329
# and 105651) that it keeps quiet as system-header code without one. Those two are off where the
# headers are precompiled; scripts/check-portable-build.sh compiles the core without (QS_PCH=OFF), where
# our own code still meets them and each source's includes are checked.
if(QS_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(qs_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wno-stringop-overflow> $<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds>)
endif()

# The same holds for the `#pragma GCC diagnostic` around the x86 intrinsics and Eigen (qs/x86_intrinsics.h,
# qs/eigen.h): GCC 12 does not keep a pragma's state in a precompiled header, so a build for AVX-512
# (-march=native on such a CPU, or -march=x86-64-v4) printed GCC 12's false -Wmaybe-uninitialized from
# avx512fintrin.h (`__m512 __Y = __Y;`) once per inlined Eigen kernel: 161 lines for the app alone on a
# Zen 4. Off there only, for GCC before 13 (fixed there): the package's and the tests' builds (plain
# x86-64) keep the warning for our own code, and so does check-portable-build.sh for AVX-512 (no PCH).
if(QS_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  separate_arguments(qs_arch_flags UNIX_COMMAND "${CMAKE_CXX_FLAGS}")
  if(QS_NATIVE)
    list(APPEND qs_arch_flags -march=native)
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} ${qs_arch_flags} -dM -E -x c++ /dev/null
                  OUTPUT_VARIABLE qs_predefined ERROR_QUIET)
  if(qs_predefined MATCHES "__AVX512F__")
    target_compile_options(qs_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
    message(STATUS "QuantScope: AVX-512 build with precompiled headers under GCC 12: -Wno-maybe-uninitialized")
  endif()
endif()
