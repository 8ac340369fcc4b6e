# CPack: a Debian package of what `cmake --install` installs (cmake/QsInstall.cmake), built by
# scripts/package.sh. Its Depends come from dpkg-shlibdeps on the installed executables, so they
# name the Qt 6, QCustomPlot, PCRE2, ICU, OpenBLAS and libgomp packages (with versions) the build
# linked, plus OpenBLAS's OpenMP flavour by name.
set(QS_PACKAGE_MAINTAINER "QuantScope maintainers <maintainers@users.noreply.a-seed-2bbe6a48.example>"
    CACHE STRING "Maintainer field of the .deb: name <email>")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME quantscope)
set(CPACK_PACKAGE_VENDOR "QuantScope")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "${QS_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_INSTALL_DIRECTORY quantscope)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${QS_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # quantscope_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(QS_BLAS STREQUAL "OpenBLAS")
  # dpkg-shlibdeps names libopenblas0, which any of Debian's three OpenBLAS flavours satisfies, apt
  # taking the pthread one first; QuantScope needs the OpenMP flavour (cmake/QsBlas.cmake says why).
  # The computed dependencies are appended to this one.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-openmp")
endif()
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# The control file's long description; CPack puts the summary line above it, indents each line
# and turns the empty line into " .".
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "QuantScope opens Hugging Face safetensors checkpoints (one file, a folder,
sharded, dense or already quantized: GPTQ, AWQ, FP8, compressed-tensors,
NVFP4, MXFP4, bitsandbytes) and shows what is in them: tensors, per-layer
weight histograms and outlier channels.

quantscope is the Qt 6 desktop application; quantscope-cli inspects and
quantizes from the command line (RTN, GPTQ, AWQ, FP8, MXFP4, NVFP4, NF4,
trellis codes) and measures the KL divergence each method costs. A small
demo checkpoint is included in /usr/share/quantscope.")

if(QS_CUDA_ENABLED)
  # dpkg-shlibdeps finds no Debian package for a toolkit in /usr/local/cuda and stops.
  message(STATUS "QuantScope: this build has the CUDA backend; its .deb would need CUDA libraries "
                  "that no Debian package provides. scripts/package.sh builds with -DQS_WITH_CUDA=OFF.")
endif()

include(CPack)
