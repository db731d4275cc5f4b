#!/usr/bin/env bash
# The end-to-end suite on Debian's real Slurm 22.05 (slurmctld, slurmd,
# slurmdbd with MariaDB, slurmrestd serving REST v0.0.38), set-up included.
# Usage (as root on Debian bookworm): scripts/test-real-slurm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -L real-slurm
