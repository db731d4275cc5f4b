#!/bin/sh
# Test exec credential plugin (client.authentication.k8s.io/v1).
#   --mode ok       print a token "exec-<EXEC_TEST_SUFFIX>-<with|no>-cluster"
#                   expiring at $EXEC_TEST_EXPIRY (default 2099-01-01)
#   --mode fail     exit 3
#   --mode garbage  print something that is not JSON
#   --mode cert     print a client certificate instead of a token
# Each run appends a line to $EXEC_TEST_COUNT_FILE if it is set.
mode=ok
while [ $# -gt 0 ]; do
  case "$1" in
    --mode) mode="$2"; shift 2 ;;
    *) shift ;;
  esac
done
if [ -n "$EXEC_TEST_COUNT_FILE" ]; then echo run >> "$EXEC_TEST_COUNT_FILE"; fi
case "$KUBERNETES_EXEC_INFO" in
  *'"server"'*) cluster=with-cluster ;;
  *) cluster=no-cluster ;;
esac
case "$mode" in
  fail) echo "plugin failed on purpose" >&2; exit 3 ;;
  garbage) echo "not json" ;;
  cert) printf '%s\n' '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}}' ;;
  *) printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-%s-%s","expirationTimestamp":"%s"}}\n' \
       "$EXEC_TEST_SUFFIX" "$cluster" "${EXEC_TEST_EXPIRY:-2099-01-01T00:00:00Z}" ;;
esac
