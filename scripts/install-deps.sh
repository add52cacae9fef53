#!/usr/bin/env bash
# @file Installs the Debian packages Multiverse builds with, only those that are missing.
# Idempotent: a second run installs nothing. Used by the README's commands and by .ci/run.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config python3
  libyaml-cpp-dev nlohmann-json3-dev catch2 libcli11-dev libboost-context-dev
  libopenmpi-dev openmpi-bin
  libprotobuf-dev protobuf-compiler  # workloads/proto: the Chakra trace codec
  clang libomp-dev
  chromium  # tests/experiments/test_report.sh renders the report pages headless
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
