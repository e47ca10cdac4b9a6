#!/usr/bin/env bash
# Installs what volt needs to build and test, from Debian packages only.
# Idempotent: packages already present are left alone, and the script says
# what it installs. Run as root (or with sudo available).
set -euo pipefail

# The build, the compiler (MLIR 19) and the runtime.
packages=(
  build-essential cmake ninja-build ccache pkg-config git
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libyaml-cpp-dev libflatbuffers-dev flatbuffers-compiler nlohmann-json3-dev
  libboost1.81-dev libcpp-httplib-dev libcli11-dev libpcre2-dev libxxhash-dev libicu-dev xz-utils
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang-14 libclang-rt-14-dev clang-format
  python3 python3-jinja2 python3-pip curl
  # voltc inspect --html is checked in a headless browser.
  chromium
)
# NVRTC 11.8, the last NVRTC that targets sm_70, from the non-free component.
nonfree_packages=(libnvrtc11.2)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-deps: run as root (or install sudo)" >&2; exit 1
  fi
fi

missing() {
  local out=()
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      out+=("$p")
    fi
  done
  echo "${out[@]:-}"
}

updated=0
apt_update() {
  if [ "$updated" -eq 0 ]; then
    $SUDO apt-get update -qq
    updated=1
  fi
}

# Enable Debian's non-free component when NVRTC is missing and the sources
# file does not list it yet.
need_nonfree=$(missing "${nonfree_packages[@]}")
if [ -n "$need_nonfree" ]; then
  src=/etc/apt/sources.list.d/debian.sources
  if [ -f "$src" ] && ! grep -Eq '^Components:.*non-free( |$)' "$src"; then
    echo "install-deps: adding the non-free component to $src (for NVRTC 11.8)"
    $SUDO sed -i -E '/^URIs: http[s]?:\/\/deb\.debian\.org\/debian\/?$/,/^$/ s/^(Components:.*main)( contrib)?$/\1 contrib non-free/' "$src"
  elif [ ! -f "$src" ] && [ -f /etc/apt/sources.list ] && ! grep -q 'non-free' /etc/apt/sources.list; then
    echo "install-deps: adding the non-free component to /etc/apt/sources.list (for NVRTC 11.8)"
    $SUDO sed -i -E 's/^(deb .*debian[^ ]* bookworm main)$/\1 contrib non-free/' /etc/apt/sources.list
  fi
fi

need=$(missing "${packages[@]}" "${nonfree_packages[@]}")
if [ -n "$need" ]; then
  echo "install-deps: installing $need"
  apt_update
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need
fi

# The OpenAI Python client, for the server's end-to-end test (PyPI), into
# the python3 that ctest runs (Debian's own needs --break-system-packages).
openai_version=3.57.0
if ! python3 -c "import openai, sys; sys.exit(openai.__version__ != '$openai_version')" 2>/dev/null; then
  echo "install-deps: installing openai==$openai_version (PyPI) for $(command -v python3)"
  python3 -m pip install --quiet "openai==$openai_version" 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages "openai==$openai_version"
  need="$need openai"
fi

if [ -z "$need" ]; then
  echo "install-deps: everything is installed"
else
  echo "install-deps: done"
fi
