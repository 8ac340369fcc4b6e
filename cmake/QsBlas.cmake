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

# Debian installs each flavour in a folder of its own (openblas-openmp/, openblas-pthread/, ...) and
# points libopenblas.so.0 at one of them through the alternatives system, where the pthread flavour
# has the higher priority: on any machine that has both (numpy pulls in the pthread one) a program
# linked against libopenblas.so.0 would load the pthread build, which our thread team must hold to one
# thread (qs/thread_team.h), halving GPTQ's speed on two cores. So the programs link the OpenMP
# flavour's folder by path and carry it in their run path, built and installed alike, whatever the
# alternative says. Elsewhere (no such folder) they link whichever OpenBLAS FindBLAS finds.
set(QS_OPENBLAS_OPENMP_DIR /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp)

add_library(qs_blas INTERFACE)
if(QS_BLAS STREQUAL "OpenBLAS")
  find_library(QS_OPENBLAS_OPENMP_LIBRARY NAMES openblas PATHS ${QS_OPENBLAS_OPENMP_DIR} NO_DEFAULT_PATH)
  if(QS_OPENBLAS_OPENMP_LIBRARY)
    target_link_libraries(qs_blas INTERFACE ${QS_OPENBLAS_OPENMP_LIBRARY})
    # The build tree's run path gets the folder from the link line; the installed programs need it too.
    list(APPEND CMAKE_INSTALL_RPATH ${QS_OPENBLAS_OPENMP_DIR})
    set(qs_blas_found ${QS_OPENBLAS_OPENMP_LIBRARY})
  else()
    set(BLA_VENDOR OpenBLAS)
    find_package(BLAS REQUIRED)
    target_link_libraries(qs_blas INTERFACE BLAS::BLAS)
    set(qs_blas_found "${BLAS_LIBRARIES}; no ${QS_OPENBLAS_OPENMP_DIR}: the flavour is the system's choice")
  endif()
  target_compile_definitions(qs_blas INTERFACE EIGEN_USE_BLAS QS_EIGEN_BLAS=1 QS_BLAS_OPENBLAS=1)
  message(STATUS "QuantScope: Eigen calls OpenBLAS (${qs_blas_found})")
elseif(QS_BLAS STREQUAL "OFF")
  target_compile_definitions(qs_blas INTERFACE QS_EIGEN_BLAS=0)
  message(STATUS "QuantScope: Eigen uses its own GEMM kernels (QS_BLAS=OFF)")
else()
  message(FATAL_ERROR "QS_BLAS must be OpenBLAS or OFF, got '${QS_BLAS}'")
endif()
