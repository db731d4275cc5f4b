#!/usr/bin/env bash
# File: scripts/generate-crds.sh
#
# Regenerates the committed CustomResourceDefinitions in crds/ from the API protos in proto/, with
# the protoc plugin tools/protoc-gen-crd. Run it after changing a .proto under proto/slurmoperator/;
# the ctest test `crds_up_to_date` fails until crds/ matches the protos again.
#
# Usage: scripts/generate-crds.sh [BUILD_DIR]
#   BUILD_DIR  CMake build directory for the plugin (default: build/ in the repository root). It is
#              configured with Ninja if it has no CMakeCache.txt yet.
# Environment: PROTOC (default: protoc on PATH), JOBS (parallel build jobs, default 2).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -ge 1 ]]; then
  build="$(realpath -m -- "$1")"  # relative to the caller's directory
else
  build="${repo}/build"
fi
protoc="${PROTOC:-protoc}"

if [[ ! -f "${build}/CMakeCache.txt" ]]; then
  cmake -S "${repo}" -B "${build}" -G Ninja
fi
cmake --build "${build}" --target protoc-gen-crd --parallel "${JOBS:-2}"
plugin="${build}/tools/protoc-gen-crd/protoc-gen-crd"

# Every API version's protos; options.proto only declares the annotations.
cd "${repo}/proto"
mapfile -t protos < <(find slurmoperator -path slurmoperator/crd -prune -o -name '*.proto' -print | LC_ALL=C sort)

out="$(mktemp -d)"
trap 'rm -rf "${out}"' EXIT
"${protoc}" -I. -I/usr/include --plugin=protoc-gen-crd="${plugin}" --crd_out="${out}" "${protos[@]}"

# crds/ holds generated files only: replace them all, so renamed resources leave nothing behind.
mkdir -p "${repo}/crds"
rm -f "${repo}/crds/"*.yaml
cp "${out}/"*.yaml "${repo}/crds/"
echo "Regenerated ${repo}/crds from ${#protos[@]} protos:"
ls -1 "${repo}/crds"
