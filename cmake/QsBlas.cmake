# The BLAS under Eigen. With EIGEN_USE_BLAS Eigen hands its GEMMs, GEMVs, triangular solves and
# rank updates (SYRK) to an optimised BLAS while our code keeps Eigen's API. Chosen by
# bench/quant/bench_blas (bench/README.md, "BLAS under Eigen"): Debian's OpenBLAS in its OpenMP
# flavour. The OpenMP flavour shares libgomp's thread pool with our own parallel regions, so there
# is one team of threads: called inside one of our regions it runs on the calling thread
# (omp_in_parallel), outside it uses omp_get_max_threads() threads. The pthread flavour would start a
# pool of its own under each of our threads and oversubscribe the cores.
#
# EIGEN_USE_BLAS goes on qs_base, which every target that includes Eigen links (through
# qs/eigen.h), so that no translation unit instantiates Eigen's built-in GEMM where another one
# calls BLAS for the same product (an ODR mix); qs/eigen.h refuses to compile when they disagree.
#
# QS_BLAS=OFF keeps Eigen's own kernels (for a comparison or a machine without OpenBLAS).
set(QS_BLAS OpenBLAS CACHE STRING "BLAS under Eigen: OpenBLAS (Debian's libopenblas, OpenMP flavour) or OFF (Eigen's own kernels)")
set_property(CACHE QS_BLAS PROPERTY STRINGS OpenBLAS OFF)

add_library(qs_blas INTERFACE)
if(QS_BLAS STREQUAL "OpenBLAS")
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS REQUIRED)
  target_link_libraries(qs_blas INTERFACE BLAS::BLAS)
  target_compile_definitions(qs_blas INTERFACE EIGEN_USE_BLAS QS_EIGEN_BLAS=1 QS_BLAS_OPENBLAS=1)
  message(STATUS "QuantScope: Eigen calls OpenBLAS (${BLAS_LIBRARIES})")
elseif(QS_BLAS STREQUAL "OFF")
  target_compile_definitions(qs_blas INTERFACE QS_EIGEN_BLAS=0)
  message(STATUS "QuantScope: Eigen uses its own GEMM kernels (QS_BLAS=OFF)")
else()
  message(FATAL_ERROR "QS_BLAS must be OpenBLAS or OFF, got '${QS_BLAS}'")
endif()
