#!/usr/bin/env bash
# Installs every build and test dependency from Debian bookworm's packages.
# Idempotent: packages already present are skipped quickly. Run as root.
#
# Why each library: cpprestsdk (HTTP client with TLS and streaming bodies),
# Protobuf (the API types; proto/ is their source of truth), gRPC (the health
# endpoint), glog (logging), Abseil (Status/StatusOr, flags), nlohmann-json
# (JSON for Kubernetes objects and Slurm bodies), yaml-cpp (kubeconfig and the
# CRD generator), OpenSSL (RS256 signing of service-account JWTs),
# GoogleTest/GoogleMock (tests), clang with its libFuzzer runtime
# (scripts/fuzz.sh). Python 3 with PyYAML runs the stand-in
# servers in tests/fakes; kubectl drives the end-to-end tests. prometheus (with
# promtool) checks and unit-tests deploy/monitoring's alerts and scrapes the
# operator in the monitoring end-to-end test (the tests start it themselves).
# tzdata (/usr/share/zoneinfo) holds the IANA time zones that Abseil's
# absl::LoadTimeZone reads for a SlurmCronJob's spec.timeZone (and its tests'
# daylight-saving cases in America/New_York and Europe/Paris). libjemalloc2 is
# the allocator deploy/Dockerfile runs the operator on; the load bench does too.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libcpprest-dev libprotobuf-dev protobuf-compiler libprotoc-dev
  libgrpc++-dev protobuf-compiler-grpc libgoogle-glog-dev libabsl-dev
  nlohmann-json3-dev libyaml-cpp-dev libzstd-dev libssl-dev libgtest-dev libgmock-dev
  python3 python3-yaml clang-format openssl curl lua5.4
  clang libclang-rt-14-dev prometheus tzdata libjemalloc2
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all build and test packages present"
fi

# kubectl: this kind of machine ships it. Debian's kubernetes-client package
# collides with an installed kubectl package, so only install it where none exists.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "install-deps: kubectl not found; installing Debian's kubernetes-client"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kubernetes-client
fi
# sed, not head: head exits after one line and kubectl, still writing, dies of
# SIGPIPE, which pipefail turns into a failed install (exit 141 seen in CI).
kubectl version --client 2>/dev/null | sed -n 1p
