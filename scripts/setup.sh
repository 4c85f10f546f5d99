#!/usr/bin/env bash
# Installs everything sdpa-cts needs to build and test on a fresh Debian (bookworm) machine.
# Every dependency is a Debian package; run as root or with sudo available.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libhdf5-dev libcli11-dev nlohmann-json3-dev libopenblas-dev
  python3 python3-venv python3-dev clang-format libxml2-utils libssl-dev
  clang libomp-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
