#!/usr/bin/env bash
# Installs the Debian 12 packages QuantScope builds with; installs nothing when all are present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev libqcustomplot-dev libgl-dev
  libeigen3-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libicu-dev
  # the BLAS under Eigen: OpenBLAS's OpenMP flavour, which shares our OpenMP threads (cmake/QsBlas.cmake)
  libopenblas-openmp-dev
  # and the pthread flavour, which then takes Debian's libopenblas.so.0 alternative, as on any machine
  # where numpy pulled it in: tests/quant/test_blas_flavour.cpp shows the programs run OpenMP's anyway
  libopenblas0-pthread
  libgtest-dev libgmock-dev libbenchmark-dev
  # oneDNN: BF16 matmuls with f32 accumulation on AVX512-BF16 / AMX CPUs (--matmul bf16)
  libdnnl-dev
  xvfb xauth
  # scripts/check-format.sh, run by scripts/test.sh: the layout .clang-format describes
  clang-format-14
  # install and .deb: PNG icons from the SVG, the man page, the validators, dpkg-shlibdeps
  librsvg2-bin help2man desktop-file-utils appstream dpkg-dev file
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
