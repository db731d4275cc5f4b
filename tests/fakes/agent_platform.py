#!/usr/bin/python3
"""A strict stand-in for Agent Platform's `callSlurmRestApi`, its credentials, and fault switches.

    /usr/bin/python3 tests/fakes/agent_platform.py --port 0 --port-file /tmp/ap.port \
        [--cluster demo-project/us-central1/demo-cluster ...] [--slurm-api-version v0.0.42] \
        [--time-scale 60] [--verbose]

One HTTP/1.1 server (ThreadingHTTPServer) serves, on one port:
  * POST /v1beta1/projects/P/locations/R/modelDevelopmentClusters/C:callSlurmRestApi
      the envelope {"method","path","body"} -> {"status", "structuredBody"|"body"}; Slurm is the
      simulator in slurm_sim.py, or a real slurmrestd with --forward-to.
  * GET /computeMetadata/v1/...   a GCE/GKE metadata server (token, email, project-id).
  * POST /token                   an OAuth2 token endpoint (jwt-bearer and refresh_token grants).
  * /__admin/...                  switches and views for tests (see ADMIN_HELP below).
Google errors are {"error": {"code", "message", "status", "details": [...]}}.

Only the Python standard library is used.  Run with --help for every option.
"""

import argparse
import base64
import collections
import hashlib
import json
import os
import random
import re
import secrets
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slurm_sim  # noqa: E402

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
PERMISSION = "aiplatform.googleapis.com/modelDevelopmentClusters.run"
RPC_METHOD = "google.cloud.aiplatform.v1beta1.ModelDevelopmentClusterService.CallSlurmRestApi"
METHODS = {"HTTP_METHOD_GET": "GET", "HTTP_METHOD_POST": "POST", "HTTP_METHOD_DELETE": "DELETE"}
ENVELOPE_FIELDS = {"method", "path", "body"}
ALLOWED_QUERY = {"alt", "$alt", "prettyPrint", "fields", "$fields", "key", "quotaUser",
                 "$.xgafv", "access_token", "callback", "upload_protocol", "uploadType"}
CALL_RE = re.compile(r"^/v1beta1/projects/([^/]+)/locations/([^/]+)/"
                     r"modelDevelopmentClusters/([^/:]+):callSlurmRestApi$")
MAX_READ = 64 * 1024 * 1024


# Pretty JSON (indent=2, as Google's frontends answer by default) is written by CPython's pure-Python
# encoder: 2.6 s for a list of 10,000 Slurm jobs. The simulator hands out the same dict for a job
# row until the row changes, so each row's indented text is kept here (by identity, with the dict
# itself so that an id is never reused) and a job list is assembled from the rows' texts. The bytes
# are exactly those of json.dumps(out, indent=2).
_ROW_TEXT = {}
_ROW_TEXT_LOCK = threading.Lock()
_JOBS_SENTINEL = "\x00jobs\x00"


def _pretty_rows(rows, depth):
    pad = " " * (2 * depth)
    texts = []
    with _ROW_TEXT_LOCK:
        for row in rows:
            hit = _ROW_TEXT.get(id(row))
            if hit is None or hit[0] is not row:
                hit = (row, pad + json.dumps(row, indent=2).replace("\n", "\n" + pad))
                _ROW_TEXT[id(row)] = hit
            texts.append(hit[1])
        if len(_ROW_TEXT) > 2 * len(rows) + 4096:  # drop rows that are no longer handed out
            keep = {id(r) for r in rows}
            for k in [k for k in _ROW_TEXT if k not in keep]:
                del _ROW_TEXT[k]
    return texts


_COMPACT_TEXT = {}


def compact_json(out):
    """json.dumps(out, separators=(",", ":")) (?prettyPrint=false), fast for a job list: each
    row's text is cached as the pretty ones are (a list of 5,000 jobs cost 0.43 s of CPU, most of
    it in dumping rows that had not changed)."""
    sb = out.get("structuredBody") if isinstance(out, dict) else None
    jobs = sb.get("jobs") if isinstance(sb, dict) else None
    if not (isinstance(jobs, list) and len(jobs) >= 16 and all(isinstance(j, dict) for j in jobs)):
        return json.dumps(out, separators=(",", ":"))
    shallow_sb = dict(sb)
    shallow_sb["jobs"] = _JOBS_SENTINEL
    shallow = dict(out)
    shallow["structuredBody"] = shallow_sb
    text = json.dumps(shallow, separators=(",", ":"))
    texts = []
    with _ROW_TEXT_LOCK:
        for row in jobs:
            hit = _COMPACT_TEXT.get(id(row))
            if hit is None or hit[0] is not row:
                hit = (row, json.dumps(row, separators=(",", ":")))
                _COMPACT_TEXT[id(row)] = hit
            texts.append(hit[1])
        if len(_COMPACT_TEXT) > 2 * len(jobs) + 4096:  # rows no longer handed out
            keep = {id(r) for r in jobs}
            for k in [k for k in _COMPACT_TEXT if k not in keep]:
                del _COMPACT_TEXT[k]
    return text.replace(json.dumps(_JOBS_SENTINEL), "[" + ",".join(texts) + "]", 1)


def pretty_json(out):
    """json.dumps(out, indent=2), fast for {"status", "structuredBody": {..., "jobs": [...]}}."""
    sb = out.get("structuredBody") if isinstance(out, dict) else None
    jobs = sb.get("jobs") if isinstance(sb, dict) else None
    if not (isinstance(jobs, list) and len(jobs) >= 16 and all(isinstance(j, dict) for j in jobs)):
        return json.dumps(out, indent=2)
    shallow_sb = dict(sb)
    shallow_sb["jobs"] = _JOBS_SENTINEL
    shallow = dict(out)
    shallow["structuredBody"] = shallow_sb
    text = json.dumps(shallow, indent=2)
    rows = "[\n" + ",\n".join(_pretty_rows(jobs, 3)) + "\n    ]"
    return text.replace(json.dumps(_JOBS_SENTINEL), rows, 1)

CODES = {
    "OK": 200, "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404, "ALREADY_EXISTS": 409,
    "ABORTED": 409, "RESOURCE_EXHAUSTED": 429, "CANCELLED": 499, "UNKNOWN": 500,
    "INTERNAL": 500, "DATA_LOSS": 500, "UNIMPLEMENTED": 501, "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
DEFAULT_MESSAGES = {
    "UNAVAILABLE": "The service is currently unavailable.",
    "RESOURCE_EXHAUSTED": "Quota exceeded for quota metric 'Resource management (CRUD) requests'"
                          " and limit 'Resource management (CRUD) requests per minute per region'"
                          " of service 'aiplatform.googleapis.com'.",
    "PERMISSION_DENIED": "Permission '%s' denied on resource (or it may not exist)." % PERMISSION,
    "NOT_FOUND": "Requested entity was not found.",
    "INTERNAL": "Internal error encountered.",
    "DEADLINE_EXCEEDED": "Deadline expired before operation could complete.",
    "UNAUTHENTICATED": "Request had invalid authentication credentials. Expected OAuth 2 access "
                       "token, login cookie or other valid authentication credential. See "
                       "https://developers.google.com/identity/sign-in/web/devconsole-project.",
    "INVALID_ARGUMENT": "Request contains an invalid argument.",
    "ABORTED": "The operation was aborted.",
    "UNKNOWN": "Unknown error.",
    "FAILED_PRECONDITION": "Precondition check failed.",
    "CANCELLED": "The operation was cancelled.",
}
REASONS = {
    "UNAVAILABLE": "SERVICE_UNAVAILABLE", "RESOURCE_EXHAUSTED": "RATE_LIMIT_EXCEEDED",
    "PERMISSION_DENIED": "IAM_PERMISSION_DENIED", "NOT_FOUND": "RESOURCE_NOT_FOUND",
    "INTERNAL": "INTERNAL_ERROR", "DEADLINE_EXCEEDED": "DEADLINE_EXCEEDED",
    "INVALID_ARGUMENT": "INVALID_ARGUMENT", "UNAUTHENTICATED": "ACCESS_TOKEN_TYPE_UNSUPPORTED",
}

HTML_404 = ("<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n  <title>Error 404 (Not Found)!!1</title>\n"
            "  <p><b>404.</b> <ins>That\u2019s an error.</ins>\n  <p>The requested URL <code>%s</code> was "
            "not found on this server.  <ins>That\u2019s all we know.</ins>\n")

ADMIN_HELP = {
    "GET /__admin/state": "everything below in one document",
    "POST /__admin/faults": '{"error":"UNAVAILABLE","count":2} | {"faults":[...]} | {"clear":true}'
                            ' fields: target (slurm|token|metadata), method, path, cluster (regexes; '
                            'cluster "P/R/C", slurm only), '
                            'count, probability, seed, skip, error, message, retry_delay, '
                            'retry_after, delay, action (error|delay|drop|perform_then_drop|'
                            'perform_then_error|perform_then_slurm_error|slurm_unreachable|'
                            'drop_then_perform_later), reset, slurm_status, slurm_errors '
                            '(perform_then_slurm_error), later (drop_then_perform_later: seconds)',
    "GET /__admin/faults": "active faults with remaining counts and hits",
    "POST /__admin/response_form": '{"form":"structuredBody"|"body"}',
    "POST /__admin/token_lifetime": '{"seconds":N}',
    "POST /__admin/expire_all_tokens": "{}",
    "POST /__admin/tokens": '{"principal":"x@y","scopes":[...],"lifetime":N}',
    "GET /__admin/issued_tokens": "every access token minted so far, with its principal (for "
                                  "tests that check no log carries one)",
    "POST /__admin/access": '{"principal":"x@y","allowed":false[,"cluster":"P/R/C"]}',
    "GET /__admin/jobs": "?cluster=P/R/C&comment=...&name=... job tables and submit counts",
    "GET /__admin/calls": "counters (by_cluster: per P/R/C and call; by_cluster_token: \"P/R/C "
                          "kind principal\" of every bearer token that reached a cluster); POST "
                          "/__admin/calls resets them",
    "POST /__admin/clock": '{"advance":seconds} (manual clock only)',
    "POST /__admin/partitions": '{"partitions":["debug","gpu"][,"cluster":"P/R/C"]}',
    "POST /__admin/sim": '{"pending_seconds":..,"completing_seconds":..,"min_job_age":..,'
                         '"accounting_delay":..,"v0039_release":"23.02.x","next_job_id":N'
                         '[,"cluster":"P/R/C"]}',
    "POST /__admin/quota": '{"per_minute":N,"retry_delay":seconds,"window_seconds":60} (0 = off; '
                           'N calls per project and region in any window)',
    "POST /__admin/reset": '{} jobs, submits, faults, calls, quota, access; {"tokens":true} too',
}


class GoogleError(Exception):
    def __init__(self, status, message=None, reason=None, domain="aiplatform.googleapis.com",
                 metadata=None, retry_delay=None, field_violations=None, headers=None,
                 result=None):
        super().__init__(message or status)
        self.status = status
        self.code = CODES.get(status, 500)
        self.message = message or DEFAULT_MESSAGES.get(status, status)
        self.reason = reason or REASONS.get(status, status)
        self.domain = domain
        self.metadata = metadata
        self.retry_delay = retry_delay
        self.field_violations = field_violations
        self.headers = headers or {}
        self.result = result or status

    def payload(self):
        details = []
        if self.field_violations:
            details.append({"@type": "type.googleapis.com/google.rpc.BadRequest",
                            "fieldViolations": self.field_violations})
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": self.reason,
                "domain": self.domain,
                "metadata": dict(self.metadata or {"service": "aiplatform.googleapis.com",
                                                   "method": RPC_METHOD})}
        details.append(info)
        if self.retry_delay is not None:
            details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo",
                            "retryDelay": _duration(self.retry_delay)})
        return {"error": {"code": self.code, "message": self.message, "status": self.status,
                          "details": details}}


class OAuthError(Exception):
    def __init__(self, error, description, http_status=400):
        super().__init__(description)
        self.error = error
        self.description = description
        self.http_status = http_status


class DropConnection(Exception):
    """Close the connection without answering."""

    def __init__(self, reset=False):
        super().__init__("drop")
        self.reset = reset


def _duration(seconds):
    seconds = float(seconds)
    if seconds == int(seconds):
        return "%ds" % int(seconds)
    return ("%.3f" % seconds).rstrip("0") + "s"


# ---------------------------------------------------------------------------------------------
# RSA / JWT (RS256) verification with the standard library only


def _der_read(data, i):
    tag = data[i]
    length = data[i + 1]
    i += 2
    if length & 0x80:
        nbytes = length & 0x7F
        length = int.from_bytes(data[i:i + nbytes], "big")
        i += nbytes
    return tag, data[i:i + length], i + length


def _der_children(content):
    out, i = [], 0
    while i < len(content):
        tag, value, i = _der_read(content, i)
        out.append((tag, value))
    return out


RSA_OID = bytes.fromhex("2a864886f70d010101")


def _rsa_from_rsapublickey(content):
    kids = _der_children(content)
    return int.from_bytes(kids[0][1], "big"), int.from_bytes(kids[1][1], "big")


def _find_spki(content, depth=0):
    """Find SEQUENCE{SEQUENCE{OID rsaEncryption,..}, BIT STRING} inside a DER structure's
    content (a bare SubjectPublicKeyInfo, or one nested in a certificate)."""
    if depth > 6:
        return None
    try:
        kids = _der_children(content)
    except IndexError:
        return None
    if len(kids) == 2 and kids[0][0] == 0x30 and kids[1][0] == 0x03:
        algo = _der_children(kids[0][1])
        if algo and algo[0][0] == 0x06 and algo[0][1] == RSA_OID:
            return _rsa_from_rsapublickey(_der_read(kids[1][1][1:], 0)[1])
    for ktag, kcontent in kids:
        if ktag in (0x30, 0xA0, 0xA3):
            found = _find_spki(kcontent, depth + 1)
            if found:
                return found
    return None


def load_rsa_public_keys(path):
    """PEM public key (SPKI or PKCS#1), certificate, PKCS#8/PKCS#1 private key, or a
    service-account JSON key file -> list of {"n","e","kid","email"}."""
    with open(path) as f:
        text = f.read()
    kid = email = None
    if text.lstrip().startswith("{"):
        info = json.loads(text)
        text, kid, email = info["private_key"], info.get("private_key_id"), info.get(
            "client_email")
    keys = []
    for m in re.finditer(r"-----BEGIN ([A-Z ]+)-----(.*?)-----END \1-----", text, re.S):
        kind, der = m.group(1), base64.b64decode("".join(m.group(2).split()))
        tag, content, _ = _der_read(der, 0)
        if kind == "RSA PUBLIC KEY":
            n, e = _rsa_from_rsapublickey(content)
        elif kind in ("PUBLIC KEY", "CERTIFICATE"):
            found = _find_spki(der) if kind == "PUBLIC KEY" else _find_spki(content)
            if not found:
                raise ValueError("no RSA public key in %s" % path)
            n, e = found
        elif kind == "RSA PRIVATE KEY":
            kids = _der_children(content)
            n, e = int.from_bytes(kids[1][1], "big"), int.from_bytes(kids[2][1], "big")
        elif kind == "PRIVATE KEY":
            kids = _der_children(content)
            inner = _der_children(_der_read(kids[2][1], 0)[1])
            n, e = int.from_bytes(inner[1][1], "big"), int.from_bytes(inner[2][1], "big")
        else:
            continue
        keys.append({"n": n, "e": e, "kid": kid, "email": email})
    if not keys:
        raise ValueError("no usable key in %s" % path)
    return keys


SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


def rsa_verify_sha256(n, e, message, signature):
    k = (n.bit_length() + 7) // 8
    if len(signature) != k:
        return False
    m = pow(int.from_bytes(signature, "big"), e, n)
    em = m.to_bytes(k, "big")
    t = SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
    if k < len(t) + 11:
        return False
    expected = b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t
    return secrets.compare_digest(em, expected)


def b64url_decode(s):
    if isinstance(s, str):
        s = s.encode()
    if not re.fullmatch(rb"[A-Za-z0-9_-]*", s):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(s + b"=" * (-len(s) % 4))


INVALID_JWT_TIME = ("Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                    "reasonable timeframe. Check your iat and exp values in the JWT claim.")


def verify_jwt(assertion, keys, accepted_audiences, now, require_scope=True):
    """Structure, claims and (when keys are given) RS256 signature. Returns (header, claims)."""
    parts = assertion.split(".")
    if len(parts) != 3:
        raise OAuthError("invalid_grant", "Invalid JWT: malformed assertion")
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        signature = b64url_decode(parts[2])
    except (ValueError, UnicodeDecodeError):
        raise OAuthError("invalid_grant", "Invalid JWT: malformed assertion")
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise OAuthError("invalid_grant", "Invalid JWT: malformed assertion")
    if header.get("alg") != "RS256":
        raise OAuthError("invalid_grant", "Invalid JWT: unsupported alg %r" % header.get("alg"))
    if not isinstance(claims.get("iss"), str) or not claims["iss"]:
        raise OAuthError("invalid_grant", "Invalid JWT: missing iss claim")
    if claims.get("aud") not in accepted_audiences:
        raise OAuthError("invalid_grant", "Invalid JWT audience %r; expected one of %s" % (
            claims.get("aud"), sorted(accepted_audiences)))
    iat, exp = claims.get("iat"), claims.get("exp")
    if (isinstance(iat, bool) or isinstance(exp, bool) or not isinstance(iat, (int, float))
            or not isinstance(exp, (int, float))):
        raise OAuthError("invalid_grant", INVALID_JWT_TIME)
    if exp - iat > 3600 or exp <= iat or exp <= now or iat > now + 300:
        raise OAuthError("invalid_grant", INVALID_JWT_TIME)
    if keys:
        signing_input = (parts[0] + "." + parts[1]).encode()
        candidates = [k for k in keys
                      if (not header.get("kid") or not k["kid"] or k["kid"] == header["kid"])
                      and (not k["email"] or k["email"] == claims["iss"])]
        if not any(rsa_verify_sha256(k["n"], k["e"], signing_input, signature)
                   for k in candidates):
            raise OAuthError("invalid_grant", "Invalid JWT Signature.")
    if require_scope and not (isinstance(claims.get("scope"), str) and claims["scope"].strip()):
        raise OAuthError("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
    return header, claims


# ---------------------------------------------------------------------------------------------
# State


class TokenStore:
    def __init__(self, lifetime):
        self.lifetime = float(lifetime)
        self.lock = threading.Lock()
        self.tokens = {}
        self.mds_cache = {}
        self.minted = collections.Counter()

    def mint(self, principal, scopes, kind, lifetime=None):
        lifetime = self.lifetime if lifetime is None else float(lifetime)
        token = "ya29.fake-" + secrets.token_urlsafe(32)
        with self.lock:
            self._prune()
            self.tokens[token] = {"principal": principal, "scopes": set(scopes), "kind": kind,
                                  "expiry": time.time() + lifetime, "revoked": False}
            self.minted[kind] += 1
        return token, max(1, int(lifetime))

    def mds_token(self, principal, scopes):
        """The metadata server hands out a cached token until its last lifetime/12 (5 minutes of
        an hour), like the real one."""
        key = (principal, tuple(sorted(scopes)))
        now = time.time()
        with self.lock:
            cached = self.mds_cache.get(key)
            if cached:
                entry = self.tokens.get(cached)
                if entry and not entry["revoked"]:
                    lifetime = entry.get("lifetime", self.lifetime)
                    remaining = entry["expiry"] - now
                    if remaining > lifetime / 12.0:
                        return cached, max(1, int(remaining))
        token, expires_in = self.mint(principal, scopes, "metadata")
        with self.lock:
            self.tokens[token]["lifetime"] = self.lifetime
            self.mds_cache[key] = token
        return token, expires_in

    def lookup(self, token):
        with self.lock:
            entry = self.tokens.get(token)
            if entry is None:
                return None, "invalid"
            if entry["revoked"] or entry["expiry"] <= time.time():
                return entry, "expired"
            return entry, "ok"

    def kind_of(self, token):
        """Who minted `token`: "metadata" (the metadata server, i.e. the ADC of whoever asks it),
        "jwt-bearer", "refresh_token", ... or "unknown" (never minted here)."""
        with self.lock:
            entry = self.tokens.get(token)
            return entry["kind"] if entry else "unknown"

    def expire_all(self):
        with self.lock:
            count = 0
            for entry in self.tokens.values():
                if not entry["revoked"] and entry["expiry"] > time.time():
                    count += 1
                entry["revoked"] = True
            self.mds_cache.clear()
            return count

    def clear(self):
        with self.lock:
            self.tokens.clear()
            self.mds_cache.clear()

    def issued(self):
        with self.lock:
            return [{"token": t, "principal": e["principal"]} for t, e in self.tokens.items()]

    def _prune(self):
        if len(self.tokens) > 10000:
            cutoff = time.time() - 3600
            for t in [t for t, e in self.tokens.items() if e["expiry"] < cutoff]:
                del self.tokens[t]

    def describe(self):
        with self.lock:
            now = time.time()
            return {"lifetime_seconds": self.lifetime,
                    "valid_tokens": sum(1 for e in self.tokens.values()
                                        if not e["revoked"] and e["expiry"] > now),
                    "minted": dict(self.minted),
                    "principals": sorted({e["principal"] for e in self.tokens.values()})}


class Fault:
    _ids = 0

    def __init__(self, spec):
        if not isinstance(spec, dict):
            raise ValueError("a fault is a JSON object")
        known = {"target", "method", "path", "count", "probability", "seed", "skip", "error",
                 "message", "retry_delay", "retry_after", "delay", "action", "reset", "status",
                 "slurm_status", "slurm_errors", "later", "cluster"}
        unknown = set(spec) - known
        if unknown:
            raise ValueError("unknown fault fields: %s" % sorted(unknown))
        Fault._ids += 1
        self.id = Fault._ids
        self.target = spec.get("target", "slurm")
        if self.target not in ("slurm", "token", "metadata"):
            raise ValueError("target must be slurm, token or metadata")
        self.method_re = re.compile(spec.get("method") or ".*")
        self.path_re = re.compile(spec.get("path") or ".*")
        # callSlurmRestApi only: the clusters ("PROJECT/REGION/CLUSTER") it applies to
        self.cluster_re = re.compile(spec.get("cluster") or ".*")
        self.probability = spec.get("probability")
        if self.probability is not None:
            self.probability = float(self.probability)
            if not 0 <= self.probability <= 1:
                raise ValueError("probability must be within [0, 1]")
        self.rng = random.Random(spec.get("seed", 0))
        count = spec.get("count")
        self.remaining = int(count) if count is not None else (
            None if self.probability is not None else 1)
        self.skip = int(spec.get("skip", 0))
        self.error = spec.get("error", spec.get("status"))
        if self.error is not None and self.error not in CODES:
            raise ValueError("unknown canonical error %r" % self.error)
        self.delay = float(spec.get("delay", 0) or 0)
        action = spec.get("action")
        if action is None:
            action = "error" if self.error else ("delay" if self.delay else "error")
        if action not in ("error", "delay", "drop", "perform_then_drop", "perform_then_error",
                          "perform_then_slurm_error", "slurm_unreachable",
                          "drop_then_perform_later"):
            raise ValueError("unknown action %r" % action)
        if action == "error" and not self.error:
            self.error = "UNAVAILABLE"
        if action == "perform_then_error" and not self.error:
            self.error = "DEADLINE_EXCEEDED"
        self.action = action
        # perform_then_slurm_error: Slurm performed the request (e.g. queued the job), then
        # slurmrestd answered slurm_status with slurm_errors (error numbers) and no result, as
        # when slurmctld's reply timed out (504) or the connection to it broke (1001-1004,
        # 1800-1804); slurm_status 200 with no errors is a 2xx without job_id.
        self.slurm_status = int(spec.get("slurm_status", 504))
        if not 200 <= self.slurm_status <= 599:
            raise ValueError("slurm_status must be an HTTP status")
        self.slurm_errors = [int(n) for n in spec.get("slurm_errors", [])]
        self.message = spec.get("message")
        self.retry_delay = spec.get("retry_delay")
        if self.retry_delay is not None:
            self.retry_delay = float(self.retry_delay)
        self.retry_after = spec.get("retry_after")
        self.reset = bool(spec.get("reset", False))
        # drop_then_perform_later: the connection is dropped with no answer, and the request
        # is performed `later` seconds afterwards, as when Agent Platform's frontend gave up
        # on a call its backend was still working on (a submit that lands after its caller
        # timed out).
        self.later = float(spec.get("later", 0) or 0)
        if self.later < 0:
            raise ValueError("later must be >= 0")
        self.hits = 0
        self.spec = spec

    def describe(self):
        return {"id": self.id, "target": self.target, "method": self.method_re.pattern,
                "path": self.path_re.pattern, "remaining": self.remaining,
                "probability": self.probability, "skip": self.skip, "action": self.action,
                "error": self.error, "delay": self.delay, "retry_delay": self.retry_delay,
                "hits": self.hits}

    def google_error(self, result_prefix="fault:"):
        status = self.error or "UNAVAILABLE"
        headers = {}
        if self.retry_after is not None:
            headers["Retry-After"] = str(self.retry_after)
        retry = self.retry_delay if status in ("RESOURCE_EXHAUSTED", "UNAVAILABLE") else None
        return GoogleError(status, self.message, retry_delay=retry, headers=headers,
                           result=result_prefix + status)


class FaultManager:
    def __init__(self):
        self.lock = threading.Lock()
        self.faults = []

    def add(self, spec):
        fault = Fault(spec)
        with self.lock:
            self.faults.append(fault)
        return fault

    def clear(self):
        with self.lock:
            n = len(self.faults)
            self.faults.clear()
            return n

    def match(self, target, method, path, cluster=""):
        with self.lock:
            for fault in list(self.faults):
                if fault.target != target or not fault.cluster_re.fullmatch(cluster):
                    continue
                if not fault.method_re.search(method or "") or not fault.path_re.search(
                        path or ""):
                    continue
                if fault.skip > 0:
                    fault.skip -= 1
                    continue
                if fault.probability is not None and fault.rng.random() >= fault.probability:
                    continue
                fault.hits += 1
                if fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self.faults.remove(fault)
                return fault
        return None

    def describe(self):
        with self.lock:
            return [f.describe() for f in self.faults]


class CallStats:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with getattr(self, "lock", threading.Lock()):
            self.total = 0
            self.by_call = collections.Counter()
            self.by_result = collections.Counter()
            self.by_call_result = collections.defaultdict(collections.Counter)
            # "P/R/C <token kind> <principal>" -> calls: every bearer token that reached a cluster
            # (unbounded, unlike `recent`), so that a test can prove whose token never arrived.
            self.by_cluster_token = collections.Counter()
            # "PROJECT/REGION/CLUSTER" -> call template -> count (callSlurmRestApi only)
            self.by_cluster = collections.defaultdict(collections.Counter)
            self.recent = collections.deque(maxlen=500)

    def record(self, template, result, detail):
        with self.lock:
            self.total += 1
            self.by_call[template] += 1
            self.by_result[result] += 1
            self.by_call_result[template][result] += 1
            if detail.get("token_kind"):
                self.by_cluster_token["%s %s %s" % (detail.get("cluster"), detail["token_kind"],
                                                    detail.get("principal") or "-")] += 1
            if detail.get("cluster"):
                self.by_cluster[detail["cluster"]][template] += 1
            self.recent.append(dict(detail, call=template, result=result))

    def describe(self):
        with self.lock:
            return {"total": self.total, "by_call": dict(self.by_call),
                    "by_result": dict(self.by_result),
                    "by_call_result": {k: dict(v) for k, v in self.by_call_result.items()},
                    "by_cluster_token": dict(self.by_cluster_token),
                    "by_cluster": {k: dict(v) for k, v in self.by_cluster.items()},
                    "recent": list(self.recent)}


def path_template(method, path):
    """HTTP_METHOD_GET /slurm/v0.0.42/job/123 -> 'GET /slurm/v0.0.42/job/{job_id}'."""
    p = path.split("?", 1)[0]
    p = re.sub(r"/job/\d+(_\d+)?(?=/|$)", "/job/{job_id}", p)
    p = re.sub(r"/+$", "", p) or "/"
    if p.endswith("/jobs") or p.endswith("/ping"):
        p += "/"
    return "%s %s" % (METHODS.get(method, method), p)


def linux_user(principal):
    """Jobs run under the caller's own Linux account (OS Login style names)."""
    if principal.endswith(".gserviceaccount.com"):
        return "sa_" + str(int(hashlib.sha256(principal.encode()).hexdigest(), 16))[:21]
    return re.sub(r"[^a-z0-9_]", "_", principal.lower())[:32]


class Forwarder:
    """Fronts a real slurmrestd (rest_auth/jwt) instead of the simulator."""

    def __init__(self, base_url, user, token_file, versions, explicit_versions):
        self.base_url = base_url.rstrip("/")
        self.user = user
        self.token_file = token_file
        self.versions = versions
        self.explicit_versions = explicit_versions
        self.lock = threading.Lock()
        self.submits = []
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def token(self):
        if not self.token_file:
            return ""
        with open(self.token_file) as f:
            text = f.read().strip()
        # accept a bare token or the `scontrol token` output "SLURM_JWT=..."
        return text.split("=", 1)[1] if text.startswith("SLURM_JWT=") else text

    def handle(self, method, path, raw_query, body, principal):
        parts = [p for p in path.split("/") if p]
        if self.explicit_versions and (len(parts) < 2 or parts[1] not in self.versions):
            return slurm_sim.SlurmResponse(404, text=slurm_sim.NOT_FOUND_TEXT)
        url = self.base_url + urllib.parse.quote(path, safe="/%:@") + (
            "?" + raw_query if raw_query else "")
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json", "X-SLURM-USER-NAME": self.user or ""}
        try:
            headers["X-SLURM-USER-TOKEN"] = self.token()
        except OSError as e:
            raise GoogleError("INTERNAL", "cannot read the Slurm token file: %s" % e)
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with self.opener.open(req, timeout=120) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            raise GoogleError("UNAVAILABLE", "The cluster is temporarily unreachable: %s" % (
                getattr(e, "reason", e),), result="UNAVAILABLE(forward)")
        result = slurm_sim.SlurmResponse(status)
        if raw:
            try:
                parsed = json.loads(raw)
                if isinstance(parsed, dict):
                    result.body = parsed
                else:
                    result.text = raw.decode("utf-8", "replace")
            except ValueError:
                result.text = raw.decode("utf-8", "replace")
        if method == "POST" and path.rstrip("/").endswith("/job/submit"):
            job = (body or {}).get("job") if isinstance(body, dict) else None
            job = job if isinstance(job, dict) else {}
            with self.lock:
                self.submits.append({
                    "seq": len(self.submits) + 1, "time": time.time(), "path": path,
                    "principal": principal, "name": job.get("name"),
                    "comment": job.get("comment"), "http_status": status,
                    "job_id": (result.body or {}).get("job_id"),
                    "accepted": bool((result.body or {}).get("job_id"))})
        return result

    def job_table(self):
        with self.lock:
            by_comment = collections.Counter(s["comment"] for s in self.submits
                                             if s["accepted"] and s["comment"])
            by_name = collections.Counter(s["name"] for s in self.submits
                                          if s["accepted"] and s["name"])
            return {"forwarded_to": self.base_url, "jobs": [], "submits": list(self.submits),
                    "submit_counts": {"total": len(self.submits),
                                      "accepted": sum(1 for s in self.submits if s["accepted"]),
                                      "rejected": sum(1 for s in self.submits
                                                      if not s["accepted"]),
                                      "by_comment": dict(by_comment), "by_name": dict(by_name)}}


class Cluster:
    def __init__(self, project, region, cluster_id, backend, versions):
        self.project = project
        self.region = region
        self.cluster_id = cluster_id
        self.backend = backend
        self.versions = versions

    @property
    def key(self):
        return "%s/%s/%s" % (self.project, self.region, self.cluster_id)

    @property
    def resource(self):
        return "projects/%s/locations/%s/modelDevelopmentClusters/%s" % (
            self.project, self.region, self.cluster_id)


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.response_form = args.response_form
        self.tokens = TokenStore(args.token_lifetime)
        self.faults = FaultManager()
        self.calls = CallStats()
        self.denied = set(args.deny_principal or [])  # global deny list
        self.denied_per_cluster = collections.defaultdict(set)
        self.quota_per_minute = args.quota_per_minute
        self.quota_retry_delay = 30.0
        # Agent Platform counts per minute; tests may shrink the window to run faster.
        self.quota_window_seconds = 60.0
        self.quota_windows = collections.defaultdict(collections.deque)
        self.port = None
        self.sa_keys = []
        for path in args.sa_public_key or []:
            self.sa_keys.extend(load_rsa_public_keys(path))
        self.clock = slurm_sim.ManualClock(time.time()) if args.manual_clock else \
            slurm_sim.RealClock(args.time_scale)
        self.versions = args.versions or list(slurm_sim.VERSIONS)
        self.clusters = {}
        specs = args.cluster or ["%s/%s/%s" % (args.project, args.region, args.cluster_id)]
        for index, spec in enumerate(specs):
            versions = self.versions
            if "=" in spec:
                spec, vs = spec.split("=", 1)
                versions = [v for v in vs.split(",") if v]
            bits = spec.split("/") if "/" in spec else [args.project, args.region, spec]
            if len(bits) != 3 or not all(bits):
                raise SystemExit("--cluster must be PROJECT/REGION/CLUSTER, got %r" % spec)
            for v in versions:
                if v not in slurm_sim.VERSIONS:
                    raise SystemExit("unknown Slurm REST version %r" % v)
            if args.forward_to:
                backend = Forwarder(args.forward_to, args.slurm_user, args.slurm_token_file,
                                    versions, bool(args.versions) or "=" in specs[index])
            else:
                backend = slurm_sim.SlurmSimulator(
                    cluster_name=bits[2], clock=self.clock, versions=versions,
                    partitions=args.partitions, pending_seconds=args.pending_seconds,
                    completing_seconds=args.completing_seconds, min_job_age=args.min_job_age,
                    accounting_delay=args.accounting_delay,
                    job_id_start=args.job_id_start + 100000 * index)
            cluster = Cluster(bits[0], bits[1], bits[2], backend, versions)
            self.clusters[(bits[0], bits[1], bits[2])] = cluster
        first = next(iter(self.clusters.values()))
        self.metadata_project = args.metadata_project or first.project
        self.sa_email = args.sa_email or "slurm-operator@%s.iam.gserviceaccount.com" % (
            self.metadata_project)

    def sims(self, cluster_key=None):
        out = []
        for c in self.clusters.values():
            if cluster_key and c.key != cluster_key:
                continue
            out.append(c)
        if cluster_key and not out:
            raise ValueError("unknown cluster %r" % cluster_key)
        return out

    def allowed(self, principal, cluster):
        with self.lock:
            return principal not in self.denied and principal not in self.denied_per_cluster[
                cluster.key]

    def take_quota(self, cluster):
        with self.lock:
            limit = self.quota_per_minute
            if not limit:
                return None
            window = self.quota_windows[(cluster.project, cluster.region)]
            now = time.monotonic()
            while window and window[0] <= now - self.quota_window_seconds:
                window.popleft()
            if len(window) >= limit:
                return self.quota_retry_delay
            window.append(now)
            return None


# ---------------------------------------------------------------------------------------------
# HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ESF"
    sys_version = ""
    state = None  # set in main()
    # TCP_NODELAY: headers and body are written separately; with Nagle the body waited for
    # the client's delayed ACK (40 ms per call).
    disable_nagle_algorithm = True

    # -- plumbing ------------------------------------------------------------------------------
    def log_message(self, fmt, *args):
        pass  # one line per call is written by _log() instead

    def _log(self, line):
        if self.state.args.verbose:
            sys.stderr.write("%s agent_platform: %s\n" % (
                time.strftime("%H:%M:%S"), line))
            sys.stderr.flush()

    def _send(self, status, body, content_type="application/json; charset=UTF-8",
              headers=None, pretty=True):
        if isinstance(body, (dict, list)):
            if not pretty:  # ?prettyPrint=false, a Google system parameter
                data = (compact_json(body) + "\n").encode()
            else:
                data = (pretty_json(body) + "\n").encode()
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = body or b""
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
            self.close_connection = True

    def _send_google_error(self, err):
        headers = dict(err.headers)
        if err.status == "UNAUTHENTICATED":
            headers.setdefault("WWW-Authenticate", 'Bearer realm="https://accounts.google.com/"')
        self._send(err.code, err.payload(), headers=headers)

    def _drop(self, reset=False):
        self.close_connection = True
        try:
            if reset:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.connection.close()
        except OSError:
            pass

    def _read_body(self, limit=None):
        """Returns (bytes, too_large).  Reads Content-Length or chunked bodies."""
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks, total = [], 0
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    break
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > MAX_READ:
                    self.close_connection = True
                    return b"", True
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
            data = b"".join(chunks)
            return data, limit is not None and len(data) >= limit
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            raise GoogleError("INVALID_ARGUMENT", "Invalid Content-Length header.")
        if length > MAX_READ:
            self.close_connection = True
            return b"", True
        data = self.rfile.read(length) if length else b""
        return data, limit is not None and length >= limit

    def _header_bytes(self):
        return len(self.requestline) + 2 + sum(len(k) + len(v) + 4
                                               for k, v in self.headers.items()) + 2

    def _dispatch(self, method):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        try:
            if path.startswith("/__admin"):
                return self._admin(method, path, url.query)
            if path == "/" or path.startswith("/computeMetadata"):
                return self._metadata(method, path, url.query)
            if path == "/token":
                return self._oauth_token(method)
            m = CALL_RE.match(path)
            if m and method == "POST":
                # Path parameters arrive percent-encoded (a domain-scoped
                # project "example.com:proj" as example.com%3Aproj).
                return self._call(*(urllib.parse.unquote(g) for g in m.groups()), url.query)
            body, _ = self._read_body()
            self._log("%s %s -> 404" % (method, path))
            self.state.calls.record("%s %s" % (method, path), "HTTP_404", {"path": path})
            self._send(404, HTML_404 % path, "text/html; charset=UTF-8")
        except DropConnection as d:
            self._drop(d.reset)
        except Exception as e:  # never crash on bad input
            traceback.print_exc()
            self._send_google_error(GoogleError("INTERNAL", "fake internal error: %r" % (e,)))

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    # -- callSlurmRestApi -------------------------------------------------------------------
    def _authenticate(self):
        auth = self.headers.get("Authorization")
        if not auth:
            raise GoogleError(
                "UNAUTHENTICATED",
                "Request is missing required authentication credential. Expected OAuth 2 "
                "access token, login cookie or other valid authentication credential. See "
                "https://developers.google.com/identity/sign-in/web/devconsole-project.",
                reason="CREDENTIALS_MISSING", domain="googleapis.com",
                result="UNAUTHENTICATED(missing)")
        scheme, _, token = auth.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise GoogleError("UNAUTHENTICATED", reason="ACCESS_TOKEN_TYPE_UNSUPPORTED",
                              domain="googleapis.com", result="UNAUTHENTICATED(scheme)")
        entry, status = self.state.tokens.lookup(token)
        if status == "ok":
            return entry["principal"], entry["scopes"]
        if status == "expired":
            raise GoogleError("UNAUTHENTICATED", reason="ACCESS_TOKEN_EXPIRED",
                              domain="googleapis.com", result="UNAUTHENTICATED(expired)")
        if token.count(".") == 2 and self.state.args.accept_self_signed_jwt:
            # AIP-4111 self-signed JWT: `aud` = the service, or a `scope` claim, never both.
            try:
                _, claims = verify_jwt(
                    token, self.state.sa_keys,
                    {"https://aiplatform.googleapis.com/", "https://aiplatform.googleapis.com",
                     None}, time.time(), require_scope=False)
                has_scope = isinstance(claims.get("scope"), str) and claims["scope"].strip()
                if bool(has_scope) == bool(claims.get("aud")):
                    raise OAuthError("invalid", "exactly one of aud and scope is required")
                scopes = set(claims["scope"].split()) if has_scope else {CLOUD_PLATFORM}
                return claims["iss"], scopes
            except OAuthError:
                pass
        raise GoogleError("UNAUTHENTICATED", reason="ACCESS_TOKEN_TYPE_UNSUPPORTED",
                          domain="googleapis.com", result="UNAUTHENTICATED(invalid)")

    def _call(self, project, location, cluster_id, raw_query):
        st = self.state
        started = time.monotonic()
        ctx = {"method": None, "path": None, "principal": None, "cluster": "%s/%s/%s" % (
            project, location, cluster_id)}
        template = "callSlurmRestApi"
        try:
            limit = st.args.max_request_bytes
            body_bytes, too_large = self._read_body(limit - self._header_bytes())
            if too_large or len(body_bytes) + self._header_bytes() >= limit:
                raise GoogleError("INVALID_ARGUMENT",
                                  "Request payload size exceeds the limit: %d bytes." % limit,
                                  reason="REQUEST_TOO_LARGE", result="INVALID_ARGUMENT(size)")
            try:  # only for logs and counters; the envelope is validated below
                peek = json.loads(body_bytes) if body_bytes else {}
                if isinstance(peek, dict):
                    ctx["method"], ctx["path"] = peek.get("method"), peek.get("path")
                    if isinstance(ctx["method"], str) and isinstance(ctx["path"], str):
                        template = path_template(ctx["method"], ctx["path"])
            except (ValueError, UnicodeDecodeError):
                pass
            for key, _ in urllib.parse.parse_qsl(raw_query, keep_blank_values=True):
                if key not in ALLOWED_QUERY:
                    msg = ('Invalid JSON payload received. Unknown name "%s": Cannot bind query '
                           'parameter. Field \'%s\' could not be found in request message.' % (
                               key, key))
                    raise GoogleError("INVALID_ARGUMENT", msg,
                                      field_violations=[{"description": msg}],
                                      result="INVALID_ARGUMENT(query)")
            auth = (self.headers.get("Authorization") or "").strip()
            if auth.lower().startswith("bearer "):
                bearer = auth[7:].strip()
                ctx["token_kind"] = st.tokens.kind_of(bearer)
                ctx["token_sha256"] = hashlib.sha256(bearer.encode()).hexdigest()[:16]
            principal, scopes = self._authenticate()
            ctx["principal"] = principal
            if CLOUD_PLATFORM not in scopes:
                raise GoogleError("PERMISSION_DENIED",
                                  "Request had insufficient authentication scopes.",
                                  reason="ACCESS_TOKEN_SCOPE_INSUFFICIENT",
                                  domain="googleapis.com", result="PERMISSION_DENIED(scope)")
            envelope = self._parse_envelope(body_bytes)
            ctx["method"], ctx["path"] = envelope.get("method"), envelope.get("path")
            cluster = self._resolve_cluster(project, location, cluster_id, principal)
            method, slurm_path, query_text, body = self._validate_envelope(envelope, cluster)
            template = path_template(envelope["method"], slurm_path)
            retry = st.take_quota(cluster)
            if retry is not None:
                raise GoogleError("RESOURCE_EXHAUSTED", retry_delay=retry,
                                  result="RESOURCE_EXHAUSTED(quota)")
            fault = st.faults.match("slurm", envelope["method"], envelope["path"], ctx["cluster"])
            action = None
            if fault:
                if fault.delay:
                    time.sleep(fault.delay)
                action = fault.action
                if action == "error":
                    raise fault.google_error()
                if action == "drop":
                    st.calls.record(template, "dropped(before)", ctx)
                    self._log("%s %s %s -> connection dropped (not performed)" % (
                        principal, envelope["method"], slurm_path))
                    raise DropConnection(fault.reset)
                if action == "drop_then_perform_later":
                    st.calls.record(template, "dropped(performed_later)", ctx)
                    self._log("%s %s %s -> connection dropped; performed in %.1f s" % (
                        principal, envelope["method"], slurm_path, fault.later))
                    timer = threading.Timer(fault.later, self._perform, args=(
                        cluster, method, slurm_path, query_text, body, principal))
                    timer.daemon = True
                    timer.start()
                    raise DropConnection(fault.reset)
            if action == "slurm_unreachable":
                resp = self._unreachable(cluster, slurm_path)
            else:
                resp = self._perform(cluster, method, slurm_path, query_text, body, principal)
            if action == "perform_then_slurm_error":
                self._log("%s %s %s -> performed (slurm %d), answered slurm %d %s" % (
                    principal, envelope["method"], slurm_path, resp.status, fault.slurm_status,
                    fault.slurm_errors))
                resp = self._slurm_error_after(cluster, slurm_path, fault)
            if action == "perform_then_error":
                self._log("%s %s %s -> performed (slurm %d), then answered %s" % (
                    principal, envelope["method"], slurm_path, resp.status, fault.error))
                raise fault.google_error("fault(after_perform:slurm_%d):" % resp.status)
            if action == "perform_then_drop":
                st.calls.record(template, "dropped(after_perform):slurm_%d" % resp.status, ctx)
                self._log("%s %s %s -> performed (slurm %d), connection dropped" % (
                    principal, envelope["method"], slurm_path, resp.status))
                raise DropConnection(fault.reset)
            out = {"status": resp.status}
            if resp.body is not None:
                if st.response_form == "body":
                    out["body"] = json.dumps(resp.body)
                else:
                    out["structuredBody"] = resp.body
            elif resp.text:
                out["body"] = resp.text
            result = "slurm_%d" % resp.status
            st.calls.record(template, result, ctx)
            self._log("%s %s %s -> 200 {status: %d} %.1f ms" % (
                principal, envelope["method"], envelope["path"], resp.status,
                (time.monotonic() - started) * 1000))
            self._send(200, out, pretty=self._pretty_print(raw_query))
        except GoogleError as err:
            st.calls.record(template, err.result, ctx)
            self._log("%s %s %s -> %d %s: %s" % (
                ctx["principal"] or "-", ctx["method"] or "-", ctx["path"] or "-", err.code,
                err.status, err.message))
            self._send_google_error(err)

    @staticmethod
    def _pretty_print(raw_query):
        for key, value in urllib.parse.parse_qsl(raw_query, keep_blank_values=True):
            if key == "prettyPrint" and value.lower() in ("false", "0"):
                return False
        return True

    def _parse_envelope(self, body_bytes):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise GoogleError("INVALID_ARGUMENT",
                              "Invalid JSON payload received. Content-Type must be "
                              "application/json, got %r." % ctype,
                              result="INVALID_ARGUMENT(content-type)")
        try:
            envelope = json.loads(body_bytes.decode("utf-8")) if body_bytes else {}
        except (ValueError, UnicodeDecodeError) as e:
            msg = "Invalid JSON payload received. %s" % e
            raise GoogleError("INVALID_ARGUMENT", msg, field_violations=[{"description": msg}],
                              result="INVALID_ARGUMENT(json)")
        if not isinstance(envelope, dict):
            msg = "Invalid JSON payload received. Expected an object."
            raise GoogleError("INVALID_ARGUMENT", msg, field_violations=[{"description": msg}],
                              result="INVALID_ARGUMENT(json)")
        for key in envelope:
            if key not in ENVELOPE_FIELDS:
                msg = 'Invalid JSON payload received. Unknown name "%s": Cannot find field.' % key
                raise GoogleError("INVALID_ARGUMENT", msg,
                                  field_violations=[{"description": msg}],
                                  result="INVALID_ARGUMENT(unknown-field)")
        return envelope

    def _resolve_cluster(self, project, location, cluster_id, principal):
        st = self.state
        name = "projects/%s/locations/%s/modelDevelopmentClusters/%s" % (
            project, location, cluster_id)
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        m = re.match(r"^([a-z0-9-]+)-aiplatform\.", host)
        if m and m.group(1) != location:
            raise GoogleError("INVALID_ARGUMENT",
                              "Location '%s' in the request does not match the regional "
                              "endpoint '%s'." % (location, m.group(1)),
                              result="INVALID_ARGUMENT(location)")
        cluster = st.clusters.get((project, location, cluster_id))
        if principal in st.denied or (cluster and not st.allowed(principal, cluster)):
            raise GoogleError(
                "PERMISSION_DENIED",
                "Permission '%s' denied on resource '//aiplatform.googleapis.com/%s' (or it may "
                "not exist)." % (PERMISSION, name),
                metadata={"permission": PERMISSION,
                          "resource": name, "service": "aiplatform.googleapis.com"},
                result="PERMISSION_DENIED")
        if cluster is None:
            raise GoogleError("NOT_FOUND", "ModelDevelopmentCluster '%s' was not found." % name,
                              result="NOT_FOUND")
        return cluster

    def _validate_envelope(self, envelope, cluster):
        def bad(msg, field):
            raise GoogleError("INVALID_ARGUMENT", msg,
                              field_violations=[{"field": field, "description": msg}],
                              result="INVALID_ARGUMENT(%s)" % field)

        method = envelope.get("method")
        if method is None:
            bad("method is required.", "method")
        if not isinstance(method, str):
            bad('Invalid value at \'method\' (type.googleapis.com/google.cloud.aiplatform.v1beta1'
                '.HttpMethod), %s' % json.dumps(method), "method")
        if method not in METHODS:
            if method == "HTTP_METHOD_UNSPECIFIED":
                bad("method must be specified.", "method")
            bad('Invalid value at \'method\' (type.googleapis.com/google.cloud.aiplatform.v1beta1'
                '.HttpMethod), "%s"' % method, "method")
        path = envelope.get("path")
        if path is None or path == "":
            bad("path is required.", "path")
        if not isinstance(path, str):
            bad("Invalid value at 'path' (TYPE_STRING), %s" % json.dumps(path), "path")
        split = urllib.parse.urlsplit(path)
        if (split.scheme or split.netloc or split.fragment or not split.path.startswith("/")
                or not re.match(r"^/(slurm|slurmdb)(/|$)", split.path)
                or any(seg in (".", "..") for seg in split.path.split("/"))
                or any(c in path for c in " \t\r\n\\")):
            bad("path '%s' is not a valid Slurm REST API path: it must start with /slurm/ or "
                "/slurmdb/." % path, "path")
        body = envelope.get("body")
        if body is not None and not isinstance(body, dict):
            bad("Invalid value at 'body' (type.googleapis.com/google.protobuf.Struct), %s" % (
                json.dumps(body)[:100]), "body")
        short = METHODS[method]
        if short == "POST" and body is None:
            bad("body is required for HTTP_METHOD_POST.", "body")
        return short, urllib.parse.unquote(split.path), split.query, body

    def _perform(self, cluster, method, slurm_path, query_text, body, principal):
        if method != "POST" and body is not None:
            return slurm_sim.SlurmResponse(
                400, text="Unexpected http body provided for non-POST method")
        if isinstance(cluster.backend, Forwarder):
            return cluster.backend.handle(method, slurm_path, query_text, body, principal)
        query = slurm_sim.parse_rest_query(query_text, self._version_number(slurm_path))
        if isinstance(query, slurm_sim.SlurmResponse):
            return query
        return cluster.backend.handle(method, slurm_path, query, body, user=linux_user(principal),
                                      principal=principal)

    def _slurm_error_after(self, cluster, slurm_path, fault):
        """Slurm's answer without its result: only meta, errors[] and warnings[]."""
        n = self._version_number(slurm_path)
        errors = [{"description": slurm_sim.STRERROR.get(e, "Slurm error %d" % e),
                   "error_number": e, "error": slurm_sim.STRERROR.get(e, "Slurm error %d" % e),
                   "source": "slurm_submit_batch_job()"} for e in fault.slurm_errors]
        if isinstance(cluster.backend, Forwarder) or n not in slurm_sim.RELEASES:
            return slurm_sim.SlurmResponse(fault.slurm_status, {"errors": errors})
        payload = {"meta": cluster.backend.meta(n), "errors": errors}
        if n >= 39:
            payload["warnings"] = []
        return slurm_sim.SlurmResponse(fault.slurm_status, payload)

    @staticmethod
    def _version_number(slurm_path):
        parts = [p for p in slurm_path.split("/") if p]
        try:
            return int(parts[1].rsplit(".", 1)[1])
        except (IndexError, ValueError):
            return 42

    def _unreachable(self, cluster, slurm_path):
        parts = [p for p in slurm_path.split("/") if p]
        try:
            n = int(parts[1].rsplit(".", 1)[1])
        except (IndexError, ValueError):
            n = 42
        if isinstance(cluster.backend, Forwarder) or n not in slurm_sim.RELEASES:
            return slurm_sim.SlurmResponse(502, text="Bad Gateway")
        sim = cluster.backend
        err = {"description": "Unable to contact slurm controller (connect failure)",
               "error_number": 1001,
               "error": "Unable to contact slurm controller (connect failure)",
               "source": "slurm_load_jobs"}
        payload = {"meta": sim.meta(n), "errors": [err]}
        if n >= 39:
            payload["warnings"] = []
        return slurm_sim.SlurmResponse(500 if n <= 41 else 502, payload)

    # -- metadata server ------------------------------------------------------------------------
    def _metadata(self, method, path, raw_query):
        st = self.state
        self._read_body()
        headers = {"Metadata-Flavor": "Google"}
        template = "metadata " + re.sub(r"service-accounts/[^/]+/", "service-accounts/{sa}/",
                                        path)
        if self.headers.get("X-Forwarded-For"):
            st.calls.record(template, "HTTP_403", {"path": path})
            return self._send(403, "Forbidden: X-Forwarded-For header not allowed\n",
                              "text/html; charset=UTF-8", headers)
        if self.headers.get("Metadata-Flavor") != "Google":
            st.calls.record(template, "HTTP_403", {"path": path})
            self._log("metadata %s -> 403 (no Metadata-Flavor: Google)" % path)
            return self._send(
                403, "Your client does not have permission to get URL <code>%s</code> from this "
                     "server. Missing Metadata-Flavor:Google header.\n" % path,
                "text/html; charset=UTF-8", headers)
        if method != "GET":
            st.calls.record(template, "HTTP_405", {"path": path})
            return self._send(405, "Method Not Allowed\n", "text/html; charset=UTF-8", headers)
        fault = st.faults.match("metadata", method, path)
        if fault:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.action in ("drop", "perform_then_drop"):
                st.calls.record(template, "dropped", {"path": path})
                raise DropConnection(fault.reset)
            if fault.action == "error":
                st.calls.record(template, "fault:HTTP_%d" % fault.google_error().code,
                                {"path": path})
                return self._send(fault.google_error().code, "fault injected\n",
                                  "text/plain; charset=utf-8", headers)
        query = dict(urllib.parse.parse_qsl(raw_query, keep_blank_values=True))
        sa_prefix = "/computeMetadata/v1/instance/service-accounts/"
        text = None
        if path == "/":
            text = "computeMetadata/\n"
        elif path == "/computeMetadata/v1/" or path == "/computeMetadata/v1":
            text = "instance/\nproject/\n"
        elif path == "/computeMetadata/v1/project/project-id":
            text = st.metadata_project
        elif path == "/computeMetadata/v1/project/numeric-project-id":
            text = str(int(hashlib.sha256(st.metadata_project.encode()).hexdigest(), 16))[:12]
        elif path == "/computeMetadata/v1/instance/zone":
            text = "projects/%s/zones/%s-a" % (st.metadata_project, st.args.region)
        elif path == sa_prefix:
            text = "default/\n%s/\n" % st.sa_email
        elif path.startswith(sa_prefix):
            rest = path[len(sa_prefix):]
            account, _, leaf = rest.partition("/")
            if account not in ("default", st.sa_email):
                return self._metadata_404(template, path, headers)
            scopes = [s for s in query.get("scopes", "").split(",") if s] or [CLOUD_PLATFORM]
            if leaf == "":
                if query.get("recursive") == "true":
                    st.calls.record(template, "HTTP_200", {"path": path})
                    return self._send(200, {"aliases": ["default"], "email": st.sa_email,
                                            "scopes": [CLOUD_PLATFORM]}, "application/json",
                                      headers)
                text = "aliases\nemail\nidentity\nscopes\ntoken\n"
            elif leaf == "email":
                text = st.sa_email
            elif leaf == "scopes":
                text = CLOUD_PLATFORM + "\n"
            elif leaf == "token":
                token, expires_in = st.tokens.mds_token(st.sa_email, scopes)
                st.calls.record(template, "HTTP_200", {"path": path,
                                                       "principal": st.sa_email})
                self._log("metadata token for %s (scopes %s) -> 200" % (
                    st.sa_email, ",".join(scopes)))
                return self._send(200, {"access_token": token, "expires_in": expires_in,
                                        "token_type": "Bearer"}, "application/json", headers)
        if text is None:
            return self._metadata_404(template, path, headers)
        st.calls.record(template, "HTTP_200", {"path": path})
        self._log("metadata %s -> 200" % path)
        return self._send(200, text, "application/text", headers)

    def _metadata_404(self, template, path, headers):
        self.state.calls.record(template, "HTTP_404", {"path": path})
        self._log("metadata %s -> 404" % path)
        return self._send(404, HTML_404 % path, "text/html; charset=UTF-8", headers)

    # -- OAuth2 token endpoint --------------------------------------------------------------------
    def _oauth_token(self, method):
        st = self.state
        raw, _ = self._read_body()
        headers = {"Cache-Control": "no-cache, no-store, max-age=0, must-revalidate",
                   "Pragma": "no-cache"}
        grant = "?"
        try:
            if method != "POST":
                raise OAuthError("invalid_request", "Only POST is supported.", 405)
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype != "application/x-www-form-urlencoded":
                raise OAuthError("invalid_request",
                                 "Content-Type must be application/x-www-form-urlencoded.")
            try:
                form = dict(urllib.parse.parse_qsl(raw.decode("utf-8"), keep_blank_values=True,
                                                   strict_parsing=bool(raw)))
            except (ValueError, UnicodeDecodeError):
                raise OAuthError("invalid_request", "Malformed form body.")
            grant = form.get("grant_type", "")
            fault = st.faults.match("token", grant, "/token")
            if fault:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.action in ("drop",):
                    st.calls.record("token " + grant, "dropped", {})
                    raise DropConnection(fault.reset)
                if fault.action == "error":
                    err = fault.google_error()
                    raise OAuthError("temporarily_unavailable" if err.code >= 500 else
                                     "invalid_request", err.message, err.code)
            if grant == JWT_BEARER:
                assertion = form.get("assertion")
                if not assertion:
                    raise OAuthError("invalid_request", "Missing required parameter: assertion")
                host = self.headers.get("Host") or "127.0.0.1:%d" % st.port
                audiences = {"http://%s/token" % host, "http://127.0.0.1:%d/token" % st.port,
                             "http://localhost:%d/token" % st.port} | set(
                    st.args.accept_aud or [])
                _, claims = verify_jwt(assertion, st.sa_keys, audiences, time.time())
                principal = claims["iss"]
                scopes = claims["scope"].split()
            elif grant == "refresh_token":
                if form.get("client_id") != st.args.oauth_client_id:
                    raise OAuthError("invalid_client", "The OAuth client was not found.", 401)
                if form.get("client_secret") != st.args.oauth_client_secret:
                    raise OAuthError("invalid_client", "Unauthorized", 401)
                if form.get("refresh_token") != st.args.refresh_token:
                    raise OAuthError("invalid_grant", "Bad Request")
                principal = st.args.user_email
                scopes = (form.get("scope") or CLOUD_PLATFORM).split()
            else:
                raise OAuthError("unsupported_grant_type", "Invalid grant_type: %s" % grant)
            token, expires_in = st.tokens.mint(principal, scopes, grant)
            out = {"access_token": token, "expires_in": expires_in, "token_type": "Bearer"}
            if grant == "refresh_token":
                out["scope"] = " ".join(scopes)
            st.calls.record("token " + grant, "HTTP_200", {"principal": principal})
            self._log("token (%s) for %s -> 200" % (grant, principal))
            self._send(200, out, headers=headers)
        except OAuthError as e:
            st.calls.record("token " + grant, "HTTP_%d:%s" % (e.http_status, e.error), {})
            self._log("token (%s) -> %d %s: %s" % (grant, e.http_status, e.error, e.description))
            self._send(e.http_status, {"error": e.error, "error_description": e.description},
                       headers=headers)

    # -- admin ----------------------------------------------------------------------------------
    def _admin(self, method, path, raw_query):
        raw, _ = self._read_body()
        name = path[len("/__admin"):].strip("/")
        query = dict(urllib.parse.parse_qsl(raw_query, keep_blank_values=True))
        try:
            data = json.loads(raw) if raw.strip() else {}
            if not isinstance(data, dict):
                raise ValueError("the body must be a JSON object")
            result = self._admin_op(method, name, data, query)
        except (ValueError, KeyError, TypeError, re.error, slurm_sim.SimError) as e:
            self._log("admin %s %s -> 400 %s" % (method, path, e))
            return self._send(400, {"error": str(e)})
        if result is None:
            return self._send(404, {"error": "unknown admin endpoint %s %s" % (method, path),
                                    "endpoints": ADMIN_HELP})
        self._log("admin %s %s -> 200" % (method, path))
        self._send(200, result)

    def _admin_op(self, method, name, data, query):
        st = self.state
        if name in ("", "help"):
            return {"endpoints": ADMIN_HELP}
        if name == "state" and method == "GET":
            return {"response_form": st.response_form, "tokens": st.tokens.describe(),
                    "faults": st.faults.describe(), "calls": st.calls.describe(),
                    "clock": st.clock.describe(), "quota": self._quota_view(),
                    "access": self._access_view(),
                    "clusters": {c.key: (c.backend.params() if hasattr(c.backend, "params")
                                         else {"forward_to": c.backend.base_url})
                                 for c in st.clusters.values()}}
        if name == "faults":
            if method == "GET":
                return {"faults": st.faults.describe()}
            if method == "DELETE" or (method == "POST" and data.get("clear")):
                return {"cleared": st.faults.clear(), "faults": []}
            if method == "POST":
                specs = data["faults"] if "faults" in data else [data]
                if not isinstance(specs, list):
                    raise ValueError("faults must be a list")
                added = [st.faults.add(s).describe() for s in specs]
                return {"added": added, "faults": st.faults.describe()}
        if name == "response_form":
            if method == "POST":
                form = data.get("form")
                if form not in ("structuredBody", "body"):
                    raise ValueError('form must be "structuredBody" or "body"')
                st.response_form = form
            return {"form": st.response_form}
        if name == "token_lifetime":
            if method == "POST":
                seconds = float(data["seconds"])
                if seconds <= 0:
                    raise ValueError("seconds must be > 0")
                with st.tokens.lock:
                    st.tokens.lifetime = seconds
                    st.tokens.mds_cache.clear()  # the next metadata token gets the new lifetime
            return {"seconds": st.tokens.lifetime}
        if name == "issued_tokens" and method == "GET":
            return {"tokens": st.tokens.issued()}
        if name == "expire_all_tokens" and method == "POST":
            return {"expired": st.tokens.expire_all()}
        if name == "tokens":
            if method == "POST":
                principal = data["principal"]
                scopes = data.get("scopes") or [CLOUD_PLATFORM]
                token, expires_in = st.tokens.mint(principal, scopes, "admin",
                                                   data.get("lifetime"))
                return {"access_token": token, "expires_in": expires_in, "token_type": "Bearer",
                        "principal": principal}
            return st.tokens.describe()
        if name == "access":
            if method == "POST":
                principal = data["principal"]
                allowed = bool(data.get("allowed", False))
                cluster = data.get("cluster")
                with st.lock:
                    target = st.denied_per_cluster[st.sims(cluster)[0].key] if cluster \
                        else st.denied
                    if allowed:
                        target.discard(principal)
                    else:
                        target.add(principal)
            return self._access_view()
        if name == "jobs" and method == "GET":
            return self._jobs_view(query)
        if name.startswith("jobs/") and method == "GET":
            job_id = int(name.split("/", 1)[1])
            for job in self._jobs_view(query)["jobs"]:
                if job.get("job_id") == job_id:
                    return job
            raise ValueError("no job %d" % job_id)
        if name == "calls":
            if method == "POST":
                st.calls.reset()
            return st.calls.describe()
        if name == "clock":
            if method == "POST":
                st.clock.advance(data.get("advance", 0))
            return st.clock.describe()
        if name == "partitions":
            targets = st.sims(data.get("cluster") or query.get("cluster"))
            out = {}
            for c in targets:
                if not hasattr(c.backend, "set_params"):
                    continue
                if method == "POST":
                    c.backend.set_params(partitions=data.get("partitions"))
                out[c.key] = list(c.backend.partitions)
            return {"partitions": out}
        if name == "sim":
            targets = st.sims(data.get("cluster") or query.get("cluster"))
            out = {}
            for c in targets:
                if not hasattr(c.backend, "set_params"):
                    continue
                if method == "POST":
                    kw = {k: v for k, v in data.items() if k != "cluster"}
                    unknown = set(kw) - {"pending_seconds", "completing_seconds", "min_job_age",
                                         "accounting_delay", "partitions", "v0039_release",
                                         "next_job_id"}
                    if unknown:
                        raise ValueError("unknown simulator parameters %s" % sorted(unknown))
                    c.backend.set_params(**kw)
                out[c.key] = c.backend.params()
            return {"clusters": out}
        if name == "quota":
            if method == "POST":
                with st.lock:
                    st.quota_per_minute = int(data.get("per_minute") or 0)
                    if data.get("retry_delay") is not None:
                        st.quota_retry_delay = float(data["retry_delay"])
                    st.quota_window_seconds = float(data.get("window_seconds") or 60)
                    st.quota_windows.clear()
            return self._quota_view()
        if name == "reset" and method == "POST":
            for c in st.clusters.values():
                if hasattr(c.backend, "reset"):
                    c.backend.reset()
                else:
                    with c.backend.lock:
                        c.backend.submits.clear()
            st.faults.clear()
            st.calls.reset()
            with st.lock:
                st.quota_windows.clear()
                st.quota_per_minute = st.args.quota_per_minute
                st.denied = set(st.args.deny_principal or [])
                st.denied_per_cluster.clear()
            st.response_form = st.args.response_form
            st.tokens.lifetime = float(st.args.token_lifetime)
            if data.get("tokens"):
                st.tokens.clear()
            return {"reset": True}
        return None

    def _quota_view(self):
        st = self.state
        return {"per_minute": st.quota_per_minute, "retry_delay": st.quota_retry_delay,
                "window_seconds": st.quota_window_seconds}

    def _access_view(self):
        st = self.state
        with st.lock:
            return {"denied": sorted(st.denied),
                    "denied_per_cluster": {k: sorted(v) for k, v in
                                           st.denied_per_cluster.items() if v},
                    "default": "allowed"}

    def _jobs_view(self, query):
        st = self.state
        clusters, jobs, submits = {}, [], []
        for c in st.sims(query.get("cluster")):
            table = c.backend.job_table()
            clusters[c.key] = table["submit_counts"]
            for job in table["jobs"]:
                jobs.append(dict(job, cluster=c.key))
            for s in table["submits"]:
                submits.append(dict(s, cluster=c.key))
        if query.get("comment") is not None:
            jobs = [j for j in jobs if j.get("comment") == query["comment"]]
            submits = [s for s in submits if s.get("comment") == query["comment"]]
        if query.get("name") is not None:
            jobs = [j for j in jobs if j.get("name") == query["name"]]
            submits = [s for s in submits if s.get("name") == query["name"]]
        by_comment = collections.Counter(s["comment"] for s in submits
                                         if s["accepted"] and s.get("comment"))
        by_name = collections.Counter(s["name"] for s in submits
                                      if s["accepted"] and s.get("name"))
        return {"jobs": jobs, "submits": submits, "clusters": clusters,
                "submit_counts": {"total": len(submits),
                                  "accepted": sum(1 for s in submits if s["accepted"]),
                                  "rejected": sum(1 for s in submits if not s["accepted"]),
                                  "by_comment": dict(by_comment), "by_name": dict(by_name),
                                  "duplicates_by_comment": {k: v for k, v in by_comment.items()
                                                            if v > 1},
                                  "duplicates_by_name": {k: v for k, v in by_name.items()
                                                         if v > 1}}}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # a client that goes away is not an error worth a traceback
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionResetError, BrokenPipeError, socket.timeout)):
            return
        super().handle_error(request, client_address)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Strict stand-in for Agent Platform's callSlurmRestApi (+ metadata server, "
                    "OAuth2 token endpoint, admin API)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 = any free port")
    p.add_argument("--port-file", help="the port is written here once the server is ready")
    p.add_argument("--verbose", action="store_true", help="one line per call on stderr")
    p.add_argument("--project", default="demo-project")
    p.add_argument("--region", default="us-central1")
    p.add_argument("--cluster-id", "--cluster-name", dest="cluster_id", default="demo-cluster")
    p.add_argument("--cluster", action="append",
                   help="CLUSTER (in --project/--region) or PROJECT/REGION/CLUSTER, optionally "
                        "followed by =v0.0.40,v0.0.42 (the versions it serves); repeatable")
    p.add_argument("--slurm-api-version", dest="versions", action="append",
                   help="version(s) the clusters serve, repeatable or comma separated "
                        "(default v0.0.38..v0.0.44)")
    slurm_sim.add_sim_arguments(p)
    p.add_argument("--job-id-start", type=int, default=1000)
    p.add_argument("--forward-to", help="URL of a real slurmrestd to front instead of the "
                                        "simulator, e.g. http://127.0.0.1:6820")
    p.add_argument("--slurm-user", help="X-SLURM-USER-NAME sent with --forward-to")
    p.add_argument("--slurm-token-file", help="file holding X-SLURM-USER-TOKEN (re-read on "
                                              "every call; SLURM_JWT=... accepted)")
    p.add_argument("--response-form", choices=["structuredBody", "body"],
                   default="structuredBody")
    p.add_argument("--max-request-bytes", type=int, default=1_000_000,
                   help="requests (request line + headers + body) of this size or more are "
                        "rejected")
    p.add_argument("--token-lifetime", type=float, default=3600.0, help="seconds")
    p.add_argument("--sa-email", help="service account of the metadata server (default "
                                      "slurm-operator@PROJECT.iam.gserviceaccount.com)")
    p.add_argument("--metadata-project", help="project-id answered by the metadata server")
    p.add_argument("--sa-public-key", action="append",
                   help="PEM public key / certificate / private key or service-account JSON "
                        "used to verify jwt-bearer assertions (repeatable); without it only "
                        "structure and claims are checked")
    p.add_argument("--accept-aud", action="append",
                   help="extra accepted `aud` values for jwt-bearer assertions")
    p.add_argument("--accept-self-signed-jwt", action="store_true",
                   help="accept AIP-4111 self-signed JWTs as Bearer tokens (off: 401)")
    p.add_argument("--oauth-client-id", default="fake-client-id.apps.googleusercontent.com")
    p.add_argument("--oauth-client-secret", default="fake-client-secret")
    p.add_argument("--refresh-token", default="fake-refresh-token")
    p.add_argument("--user-email", default="dev-user@example.com",
                   help="principal of refresh_token grants")
    p.add_argument("--deny-principal", action="append",
                   help="principal without access to any cluster (403)")
    p.add_argument("--quota-per-minute", type=int, default=0,
                   help="callSlurmRestApi calls per minute per project+region (0 = unlimited)")
    args = p.parse_args(argv)
    if args.versions:
        args.versions = [v for item in args.versions for v in item.split(",") if v]
        for v in args.versions:
            if v not in slurm_sim.VERSIONS:
                p.error("unknown Slurm REST version %r" % v)
    if args.forward_to and not (args.slurm_user and args.slurm_token_file):
        p.error("--forward-to needs --slurm-user and --slurm-token-file")
    return args


def main(argv=None):
    args = parse_args(argv)
    state = State(args)
    Handler.state = state
    server = Server((args.host, args.port), Handler)
    state.port = server.server_address[1]

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.verbose:
        sys.stderr.write("agent_platform: listening on %s:%d, clusters %s, versions %s, %s\n" % (
            args.host, state.port, ", ".join(state.clusters[k].key for k in state.clusters),
            ",".join(state.versions), "forwarding to " + args.forward_to if args.forward_to
            else "simulator clock %s" % state.clock.describe()["mode"]))
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % state.port)
        os.replace(tmp, args.port_file)
    server.serve_forever(poll_interval=0.2)
    server.server_close()


if __name__ == "__main__":
    main()
