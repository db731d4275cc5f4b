#!/usr/bin/env bash
# File: scripts/package-kubectl-plugin.sh
#
# Packages the kubectl plugin for krew: OUT_DIR/kubectl-slurmjob-VERSION.tar.gz and
# OUT_DIR/slurmjob.yaml (tools/kubectl-slurmjob/slurmjob.yaml with this version, the release
# URI and the archive's sha256).
#
# Usage: scripts/package-kubectl-plugin.sh VERSION [OUT_DIR]   (VERSION like v0.1.0; OUT_DIR dist/)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${1:?usage: package-kubectl-plugin.sh VERSION [OUT_DIR]}"
[[ "${version}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "VERSION must look like v1.2.3" >&2; exit 2; }
out="$(realpath -m -- "${2:-${repo}/dist}")"
mkdir -p "${out}"
archive="${out}/kubectl-slurmjob-${version}.tar.gz"
# Reproducible: fixed owner, mode and time.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=0755 \
  -C "${repo}/tools/kubectl-slurmjob" -cf - kubectl-slurmjob | gzip -n >"${archive}"
sha="$(sha256sum "${archive}" | cut -d' ' -f1)"
sed -e "s/v0\.0\.0/${version}/g" -e "s/0\{64\}/${sha}/" \
  "${repo}/tools/kubectl-slurmjob/slurmjob.yaml" >"${out}/slurmjob.yaml"
echo "${archive} sha256 ${sha}"
echo "${out}/slurmjob.yaml"
