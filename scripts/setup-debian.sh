#!/usr/bin/env bash
# Installs everything KForge needs on Debian 12 (bookworm) and builds it.
#   scripts/setup-debian.sh            install packages (needs root or sudo), configure, build
#   KFORGE_PRESET=asan scripts/...     build another preset (dev, asan, ci)
# Python for the runner: Debian's python3-torch (1.13, CPU) — about a minute to install, enough
# to run PyTorch references on the CPU. PyPI's torch is a CUDA build of several GB; on a GPU
# machine, point KFORGE_PYTHON at an interpreter that has a CUDA build of torch instead.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config git
  # format and naming checks of the changed tree (scripts/lint.sh)
  clang-format clang-tidy
  # C++ libraries (DESIGN.md, Dependencies)
  libcurl4-openssl-dev nlohmann-json3-dev libtomlplusplus-dev libkainjow-mustache-dev
  libsqlite3-dev libcli11-dev libfmt-dev libspdlog-dev libcpp-httplib-dev libxxhash-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # OpenCL on the CPU, the sandbox
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo bubblewrap
  # the runner: Python with CPU torch, numpy, pyopencl, pytest
  python3 python3-numpy python3-torch python3-pyopencl python3-pytest
  # load_inline candidates build against torch's headers (python3-torch only recommends them)
  libtorch-dev pybind11-dev
  # the harness's seccomp filter (runner/kforge_runner/harness/syscall_filter.py, through ctypes)
  libseccomp2
  # kforge export's test: the exported package installs into a fresh venv (pip, setuptools, wheel)
  python3-venv python3-setuptools python3-wheel
  # HIP compiler (compile checks of amd/hip candidates; they run where ROCm has a GPU)
  hipcc
  # reports: verdict reading, Chart.js inlined into the HTML, headless Chromium for its test
  libsimdjson-dev libjs-chart.js chromium
  # kforge bench's Slurm executor: the one-node test cluster (tests/exec/slurm_cluster.sh), sqlite3
  # for its verdict comparison
  slurm-wlm munge sqlite3
  # kforge bench's live view on a terminal, tested through a tmux pane (tests/cli)
  tmux
)

if ! dpkg -s "${PACKAGES[@]}" >/dev/null 2>&1; then
  echo "== installing Debian packages"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${PACKAGES[@]}" >/dev/null
fi

# nvcc is not in Debian's main archive: use the CUDA toolkit where it is installed.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
command -v nvcc >/dev/null || echo "note: nvcc not found; CUDA compile tests will be skipped"

PRESET="${KFORGE_PRESET:-dev}"
echo "== configuring and building (preset $PRESET)"
cmake --preset "$PRESET" >/dev/null
cmake --build --preset "$PRESET"
echo "== built: build/$PRESET/src/cli/kforge"
