# Warnings and optimisation shared by every QuantScope target (applied through qs_options).
add_library(qs_options INTERFACE)
target_compile_options(qs_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>
  # GCC 12 reports -Wrestrict inside libstdc++'s std::string concatenation at -O2/-O3, a known false
  # positive (GCC bug 105329); with -Werror it would fail builds on correct code.
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>)
if(QS_WARNINGS_AS_ERRORS OR DEFINED ENV{CI})
  target_compile_options(qs_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(QS_NATIVE)
  target_compile_options(qs_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
# Eigen's GEMM and our own loops parallelise with OpenMP ("all cores").
target_link_libraries(qs_options INTERFACE OpenMP::OpenMP_CXX Threads::Threads)

# QS_SANITIZE: sanitizers for every target, compiled and linked, as -fsanitize= takes them, e.g.
#   cmake -S . -B build-asan -DQS_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQS_WITH_CUDA=OFF
# Directory-wide (not through qs_options) so that test helpers, benchmarks and the programs are all
# instrumented: ASan needs every object that shares a heap to agree. Frame pointers keep the reports'
# stacks readable at -O2. C++ only: nvcc's device code is not instrumented (build it with CUDA off).
# Leave QS_WARNINGS_AS_ERRORS off there: with ASan, GCC 12 reports the `__m512 __Y = __Y;` idiom of its
# own AVX-512 header (qs/x86_intrinsics.h) as -Wuninitialized on -march=native AVX-512 machines.
set(QS_SANITIZE "" CACHE STRING "Sanitizers for every target, a -fsanitize= list such as address,undefined (empty: none)")
if(QS_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "QS_SANITIZE needs GCC or Clang, not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${QS_SANITIZE}> $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${QS_SANITIZE})
  message(STATUS "QuantScope: sanitizers ${QS_SANITIZE} on every target")
endif()
