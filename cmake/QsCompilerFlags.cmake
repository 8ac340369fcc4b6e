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
