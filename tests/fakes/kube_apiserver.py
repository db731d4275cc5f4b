#!/usr/bin/env python3
"""A strict, single-file, in-memory stand-in for kube-apiserver (test fake).

Purpose: let the real ``kubectl`` (v1.32) and the operator's C++ client talk to
something that behaves like a real API server, including its sharp edges
(410 as a watch ERROR event, 422/409 on updates, status subresource rules,
finalizers, pruning, server-side printing, ...).  Standard library + PyYAML only.

Command line::

    /usr/bin/python3 tests/fakes/kube_apiserver.py --port 0 --port-file PORTFILE \
        [--host 127.0.0.1] [--kubeconfig-out KUBECONFIG] [--token TOKEN ...] \
        [--token-file FILE] [--admin-token TOKEN] [--tls-cert CERT --tls-key KEY] \
        [--history-size 1000] [--bookmark-interval SECONDS] [--min-request-timeout 1800] \
        [--crd FILE.yaml ...] [--verbose]

The port is written to --port-file (atomically) once the server accepts
connections.  See tests/fakes/README.md for the admin API (/__admin/...) and
the list of known deviations from the real API server.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import collections
import copy
import datetime
import gc
import hashlib
import http.server
import json
import os
import random
import re
import signal
import socket
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

try:  # PyYAML is needed for application/apply-patch+yaml bodies and --crd files
    import yaml
except ImportError:  # pragma: no cover
    yaml = None

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-fake",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z",
    "goVersion": "go1.23.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}

OPTIMISTIC_LOCK_MSG = ("the object has been modified; please apply your changes "
                       "to the latest version and try again")
NAME_DESC = ("Name must be unique within a namespace. Is required when creating resources, although "
             "some resources may allow a client to request the generation of an appropriate name "
             "automatically. Name is primarily intended for creation idempotence and configuration "
             "definition. Cannot be updated. More info: "
             "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
AGE_DESC = ("CreationTimestamp is a timestamp representing the server time when this object was "
            "created. It is not guaranteed to be set in happens-before order across separate "
            "operations. Clients may not set this value. It is represented in RFC3339 form and is "
            "in UTC.")
APIVERSION_DESC = ("APIVersion defines the versioned schema of this representation of an object. "
                   "Servers should convert recognized schemas to the latest internal value, and may "
                   "reject unrecognized values. More info: https://git.k8s.io/community/contributors/"
                   "devel/sig-architecture/api-conventions.md#resources")
KIND_DESC = ("Kind is a string value representing the REST resource this object represents. Servers "
             "may infer this from the endpoint the client submits requests to. Cannot be updated. "
             "In CamelCase. More info: https://git.k8s.io/community/contributors/devel/"
             "sig-architecture/api-conventions.md#types-kinds")
METADATA_DESC = ("Standard object's metadata. More info: https://git.k8s.io/community/contributors/"
                 "devel/sig-architecture/api-conventions.md#metadata")

OBJECT_META_FIELDS = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
}
GC_FINALIZERS = ("foregroundDeletion", "orphan")
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
MISSING = object()   # "no value" sentinel (distinct from JSON null)
OMIT = object()      # "do not print a value" in a field error
LIST_SNAPSHOTS = 8   # paged lists whose sorted snapshot is kept for their continue pages


# --------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------

def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def fmt_time(dt=None):
    """metav1.Time: RFC 3339, seconds precision, UTC."""
    return (dt or utcnow()).astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_micro(dt=None):
    """metav1.MicroTime: 2006-01-02T15:04:05.000000Z07:00, UTC."""
    return (dt or utcnow()).astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def parse_time(s, micro=False):
    """Parse an RFC 3339 time.  micro=True follows Go's time.Parse with the RFC3339Micro layout
    (exactly six fractional digits).  Returns an aware datetime or None."""
    if not isinstance(s, str):
        return None
    m = _RFC3339.match(s)
    if not m:
        return None
    frac = m.group(7) or ""
    if micro and len(frac) != 7:
        return None
    try:
        us = int((frac[1:] + "000000")[:6]) if frac else 0
        tz = m.group(8)
        if tz in ("Z", "z"):
            tzinfo = datetime.timezone.utc
        else:
            sign = 1 if tz[0] == "+" else -1
            tzinfo = datetime.timezone(sign * datetime.timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6])))
        return datetime.datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                                 int(m.group(5)), int(m.group(6)), us, tzinfo=tzinfo)
    except ValueError:
        return None


def human_duration(seconds):
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return "%ds" % s
    minutes = s // 60
    if minutes < 10:
        r = s % 60
        return "%dm" % minutes if r == 0 else "%dm%ds" % (minutes, r)
    if minutes < 180:
        return "%dm" % minutes
    hours = s // 3600
    if hours < 8:
        m = minutes % 60
        return "%dh" % hours if m == 0 else "%dh%dm" % (hours, m)
    if hours < 48:
        return "%dh" % hours
    if hours < 24 * 8:
        h = hours % 24
        return "%dd" % (hours // 24) if h == 0 else "%dd%dh" % (hours // 24, h)
    if hours < 24 * 365 * 2:
        return "%dd" % (hours // 24)
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return "%dy" % (hours // 24 // 365) if dy == 0 else "%dy%dd" % (hours // 24 // 365, dy)
    return "%dy" % (hours // 24 // 365)


def age_of(ts):
    t = parse_time(ts) if ts else None
    if t is None:
        return "<unknown>"
    return human_duration((utcnow() - t).total_seconds())


_ATOMS = (str, int, float, bool, type(None))


def json_copy(v):
    """copy.deepcopy for the JSON trees the store holds (dicts, lists and atoms): 4-6x faster,
    because it neither keeps a memo nor dispatches by type through copy's tables. A value of
    another type (a tuple, a sentinel) goes to copy.deepcopy. Every request copies its object
    several times (views, comparisons, patches), and with copy.deepcopy that cost grew with the
    object's size far more steeply than a real API server's does: a SlurmJob status with four
    conditions spent ~0.5 ms more per write here than a three-field one."""
    t = type(v)
    if t is dict:
        return {k: json_copy(x) for k, x in v.items()}
    if t is list:
        return [json_copy(x) for x in v]
    if t in _ATOMS:
        return v
    return copy.deepcopy(v)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def go_num(v):
    """Go's %v for a float64 / int64."""
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e21:
            return str(int(v))
        r = repr(v)
        return r.replace("e+", "e+").replace("e-0", "e-0")
    return str(v)


def go_repr(v):
    """Approximation of how field.Error.ErrorBody renders a bad value."""
    if isinstance(v, GoLiteral):
        return v.text
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if is_num(v):
        return go_num(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, dict):
        return "map[string]interface {}{" + ", ".join(
            "%s:%s" % (json.dumps(k), go_repr(x)) for k, x in sorted(v.items())) + "}"
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(go_repr(x) for x in v) + "}"
    return str(v)


class GoLiteral:
    def __init__(self, text):
        self.text = text


def json_type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if is_int(v):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


DUMPS_ITEMS_CHUNK = 500  # list items encoded per json.dumps call (see dumps)


def dumps(obj, pretty=False):
    if pretty:
        return json.dumps(obj, indent=2, ensure_ascii=False).encode() + b"\n"
    items = obj.get("items") if isinstance(obj, dict) else None
    if isinstance(items, list) and len(items) > DUMPS_ITEMS_CHUNK and next(reversed(obj)) == "items":
        # json's C encoder holds the GIL for a whole call: one call over a list of 100,000
        # SlurmJobs (83 MB) held every other thread (Lease renewals) for 1.6 s. The items are
        # encoded a chunk at a time instead, into the same bytes.
        head = json.dumps({k: v for k, v in obj.items() if k != "items"}, separators=(",", ":"), ensure_ascii=False)
        parts = [head[:-1] + (',"items":[' if len(obj) > 1 else '"items":[')]
        for i in range(0, len(items), DUMPS_ITEMS_CHUNK):
            if i:
                parts.append(",")
            parts.append(json.dumps(items[i:i + DUMPS_ITEMS_CHUNK], separators=(",", ":"), ensure_ascii=False)[1:-1])
        parts.append("]}")
        return "".join(parts).encode() + b"\n"
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def deep_equal(a, b):
    """JSON equality (1 == 1.0, but True != 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_num(a) and is_num(b):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def strip_meta_for_compare(obj):
    o = json_copy(obj)
    md = o.get("metadata") or {}
    md.pop("managedFields", None)
    md.pop("resourceVersion", None)
    return o


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

DNS_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                 "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
                 "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
                     "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
                     "regex used for validation is "
                     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
QUALIFIED_NAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
                      "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                      "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def dns_subdomain_errors(v):
    out = []
    if len(v) > 253:
        out.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(v):
        out.append(DNS_SUBDOMAIN_MSG)
    return out


def dns_label_errors(v):
    out = []
    if len(v) > 63:
        out.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(v):
        out.append(DNS_LABEL_MSG)
    return out


def qualified_name_errors(v):
    """k8s.io/apimachinery/pkg/util/validation.IsQualifiedName"""
    parts = v.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        errs = dns_subdomain_errors(prefix)
        if errs:
            return ["prefix part " + e for e in errs]
    else:
        return [QUALIFIED_NAME_MSG.replace("name part", "a qualified name")]
    if not name:
        return ["name part must be non-empty"]
    if len(name) > 63:
        return ["name part must be no more than 63 characters"]
    if not _QUALIFIED_NAME.match(name):
        return [QUALIFIED_NAME_MSG]
    return []


# --------------------------------------------------------------------------------------------
# errors (metav1.Status)
# --------------------------------------------------------------------------------------------

class FieldError:
    KINDS = {
        "invalid": ("FieldValueInvalid", "Invalid value"),
        "typeinvalid": ("FieldValueTypeInvalid", "Invalid value"),
        "required": ("FieldValueRequired", "Required value"),
        "notsupported": ("FieldValueNotSupported", "Unsupported value"),
        "forbidden": ("FieldValueForbidden", "Forbidden"),
        "toolong": ("FieldValueTooLong", "Too long"),
        "toomany": ("FieldValueTooMany", "Too many"),
        "duplicate": ("FieldValueDuplicate", "Duplicate value"),
    }

    def __init__(self, kind, field, value=OMIT, detail=""):
        self.kind, self.field, self.value, self.detail = kind, field, value, detail

    def body(self):
        _, label = self.KINDS[self.kind]
        if self.kind in ("required", "forbidden", "toolong") or self.value is OMIT:
            s = label
        else:
            s = "%s: %s" % (label, go_repr(self.value))
        if self.detail:
            s += ": " + self.detail
        return s

    def error(self):
        return "%s: %s" % (self.field, self.body())

    def cause(self):
        return {"reason": self.KINDS[self.kind][0], "message": self.body(), "field": self.field}


def immutable_error(field, value):
    return FieldError("invalid", field, value, "field is immutable")


class APIError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None, metadata=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details, self.headers, self.metadata = details, headers or [], metadata or {}

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": dict(self.metadata), "status": "Failure",
              "message": self.message}
        if self.reason:
            st["reason"] = self.reason
        if self.details is not None:
            st["details"] = self.details
        st["code"] = self.code
        return st


def gr_details(res, name, **extra):
    d = {}
    if name:
        d["name"] = name
    if res is not None and res.group:
        d["group"] = res.group
    if res is not None:
        d["kind"] = res.plural
    d.update(extra)
    return d


def err_not_found(res, name):
    return APIError(404, "NotFound", '%s "%s" not found' % (res.qualified, name), gr_details(res, name))


def err_path_not_found():
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def err_already_exists(res, name, terminating=False):
    msg = '%s "%s" already exists' % (res.qualified, name)
    if terminating:
        msg = "object is being deleted: " + msg
    return APIError(409, "AlreadyExists", msg, gr_details(res, name))


def err_conflict(res, name, msg=OPTIMISTIC_LOCK_MSG):
    return APIError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s' % (res.qualified, name, msg),
                    gr_details(res, name))


def err_invalid(group, kind, name, errs):
    gk = "%s.%s" % (kind, group) if group else kind
    msgs = [e.error() for e in errs]
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    message = '%s "%s" is invalid: %s' % (gk, name, agg) if msgs else '%s "%s" is invalid' % (gk, name)
    details = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [e.cause() for e in errs]
    return APIError(422, "Invalid", message, details)


def err_invalid_obj(res, name, errs):
    return err_invalid(res.group, res.kind, name, errs)


def err_bad_request(msg):
    return APIError(400, "BadRequest", msg)


def err_forbidden(res, name, msg, causes=None):
    d = gr_details(res, name)
    if causes:
        d["causes"] = causes
    what = '%s "%s"' % (res.qualified, name) if name else res.qualified
    return APIError(403, "Forbidden", "%s is forbidden: %s" % (what, msg), d)


def err_method_not_allowed():
    return APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def err_unauthorized():
    return APIError(401, "Unauthorized", "Unauthorized")


def err_internal(msg):
    return APIError(500, "InternalError", "Internal error occurred: %s" % msg, {"causes": [{"message": msg}]})


def err_expired(msg, metadata=None):
    return APIError(410, "Expired", msg, None, metadata=metadata)


def err_too_many(retry_after=1):
    return APIError(429, "TooManyRequests", "Too many requests, please try again later.",
                    {"retryAfterSeconds": int(retry_after)}, headers=[("Retry-After", str(int(retry_after)))])


def err_decode(res, msg):
    return err_bad_request('%s in version "%s" cannot be handled as a %s: %s' % (res.kind, res.version, res.kind, msg))


def err_unsupported_patch(ctype, allowed):
    return APIError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    + ", ".join(allowed), {})


# --------------------------------------------------------------------------------------------
# structural schema: pruning, defaulting, validation
# --------------------------------------------------------------------------------------------

def _child(path, key):
    return "%s.%s" % (path, key) if path else key


def prune(value, schema, path, unknown, root=False):
    """Drop fields the schema does not declare (unless x-kubernetes-preserve-unknown-fields);
    drop non-nullable nulls that have no default.  Records pruned paths in `unknown`."""
    if schema is None:
        return value
    if isinstance(value, dict):
        if root:
            # apiVersion/kind/metadata are always kept at the root of a custom resource.
            pass
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        for k in list(value.keys()):
            v = value[k]
            if root and k in ("apiVersion", "kind", "metadata"):
                continue
            if embedded and k in ("apiVersion", "kind", "metadata"):
                continue
            if k in props:
                ps = props[k]
                if v is None and not ps.get("nullable") and "default" not in ps:
                    del value[k]
                    continue
                value[k] = prune(v, ps, _child(path, k), unknown)
            elif isinstance(addl, dict):
                if v is None and not addl.get("nullable"):
                    del value[k]
                    continue
                value[k] = prune(v, addl, _child(path, k), unknown)
            elif addl is True or preserve:
                continue
            else:
                unknown.append(_child(path, k))
                del value[k]
        return value
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                value[i] = prune(v, items, "%s[%d]" % (path, i), unknown)
        return value
    return value


def apply_defaults(value, schema, root=False):
    if schema is None:
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for k, ps in props.items():
            if root and k == "metadata":
                continue
            if isinstance(ps, dict) and "default" in ps:
                if k not in value or (value[k] is None and not ps.get("nullable")):
                    value[k] = json_copy(ps["default"])
        for k, v in value.items():
            if root and k == "metadata":
                continue
            if k in props:
                apply_defaults(v, props[k])
            elif isinstance(addl, dict):
                apply_defaults(v, addl)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for v in value:
                apply_defaults(v, items)
    return value


def _type_ok(t, v):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "integer":
        return is_int(v) or (isinstance(v, float) and v.is_integer())
    if t == "number":
        return is_num(v)
    return True


def _list_key(item, keys):
    if not isinstance(item, dict):
        return None
    return tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)


def validate_schema(value, schema, path, errs, old=MISSING, cel=True):
    """Subset of OpenAPI v3 validation as done by apiextensions-apiserver (kube-openapi),
    producing field errors with the same wording."""
    if schema is None:
        return
    if value is None:
        if schema.get("nullable"):
            return
        t = schema.get("type")
        if t:
            errs.append(FieldError("typeinvalid", path, "null", '%s in body must be of type %s: "null"' % (path, t)))
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (is_int(value) or isinstance(value, str)):
            errs.append(FieldError("typeinvalid", path, json_type_name(value),
                                   '%s in body must be of type integer,string: "%s"' % (path, json_type_name(value))))
            return
    else:
        t = schema.get("type")
        if t and not _type_ok(t, value):
            errs.append(FieldError("typeinvalid", path, json_type_name(value),
                                   '%s in body must be of type %s: "%s"' % (path, t, json_type_name(value))))
            return
    if "enum" in schema and isinstance(schema["enum"], list):
        if not any(deep_equal(value, e) for e in schema["enum"]):
            allowed = ", ".join(json.dumps(e if isinstance(e, str) else go_repr(e)) for e in schema["enum"])
            errs.append(FieldError("notsupported", path, value, "supported values: " + allowed))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            n = schema["maxLength"]
            errs.append(FieldError("toolong", path, value, "may not be more than %d %s" % (n, "byte" if n == 1 else "bytes")))
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append(FieldError("invalid", path, value, "%s in body should be at least %d chars long" % (path, schema["minLength"])))
        if "pattern" in schema:
            try:
                ok = re.search(schema["pattern"], value) is not None
            except re.error:
                ok = True
            if not ok:
                errs.append(FieldError("invalid", path, value, "%s in body should match '%s'" % (path, schema["pattern"])))
        if schema.get("format") == "date-time" and parse_time(value) is None:
            errs.append(FieldError("invalid", path, value, '%s in body must be of type date-time: %s' % (path, json.dumps(value))))
    if is_num(value):
        if "minimum" in schema:
            m = schema["minimum"]
            if schema.get("exclusiveMinimum") and not value > m:
                errs.append(FieldError("invalid", path, value, "%s in body should be greater than %s" % (path, go_num(m))))
            elif value < m:
                errs.append(FieldError("invalid", path, value, "%s in body should be greater than or equal to %s" % (path, go_num(m))))
        if "maximum" in schema:
            m = schema["maximum"]
            if schema.get("exclusiveMaximum") and not value < m:
                errs.append(FieldError("invalid", path, value, "%s in body should be less than %s" % (path, go_num(m))))
            elif value > m:
                errs.append(FieldError("invalid", path, value, "%s in body should be less than or equal to %s" % (path, go_num(m))))
        if schema.get("multipleOf"):
            q = value / schema["multipleOf"]
            if abs(q - round(q)) > 1e-9:
                errs.append(FieldError("invalid", path, value, "%s in body should be a multiple of %s" % (path, go_num(schema["multipleOf"]))))
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(FieldError("toomany", path, len(value), "must have at most %d items" % schema["maxItems"]))
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append(FieldError("invalid", path, value, "%s in body should have at least %d items" % (path, schema["minItems"])))
        lt = schema.get("x-kubernetes-list-type")
        if lt == "set" or schema.get("uniqueItems"):
            seen = []
            for i, v in enumerate(value):
                if any(deep_equal(v, s) for s in seen):
                    errs.append(FieldError("duplicate", "%s[%d]" % (path, i), v))
                seen.append(v)
        old_by_key = {}
        keys = schema.get("x-kubernetes-list-map-keys") or []
        if lt == "map" and keys:
            seen = set()
            for i, v in enumerate(value):
                k = _list_key(v, keys)
                if k in seen:
                    errs.append(FieldError("duplicate", "%s[%d]" % (path, i), {kk: v.get(kk) for kk in keys} if isinstance(v, dict) else v))
                seen.add(k)
            if isinstance(old, list):
                for ov in old:
                    old_by_key[_list_key(ov, keys)] = ov
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                o = old_by_key.get(_list_key(v, keys), MISSING) if old_by_key else MISSING
                validate_schema(v, items, "%s[%d]" % (path, i), errs, o, cel)
    if isinstance(value, dict):
        for r in schema.get("required") or []:
            if r not in value:
                errs.append(FieldError("required", _child(path, r)))
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errs.append(FieldError("toomany", path, len(value), "must have at most %d items" % schema["maxProperties"]))
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            errs.append(FieldError("invalid", path, len(value), "%s in body should have at least %d properties" % (path, schema["minProperties"])))
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for k, v in value.items():
            if path == "" and k == "metadata":
                continue  # ObjectMeta is validated separately
            o = old.get(k, MISSING) if isinstance(old, dict) else MISSING
            if k in props:
                validate_schema(v, props[k], _child(path, k), errs, o, cel)
            elif isinstance(addl, dict):
                validate_schema(v, addl, _child(path, k), errs, o, cel)
    for sub in schema.get("allOf") or []:
        if isinstance(sub, dict):
            validate_schema(value, dict(sub, **{"x-kubernetes-validations": []}), path, errs, old, False)
    if cel:
        for rule in schema.get("x-kubernetes-validations") or []:
            run_cel_rule(rule, value, old, schema, path, errs)


# --------------------------------------------------------------------------------------------
# a tiny CEL subset for x-kubernetes-validations
# --------------------------------------------------------------------------------------------
# Supported: literals (int, float, 'str', "str", true, false, null, [lists]), `self`, `oldSelf`,
# field selection (self.a.b), has(self.a.b), size(x) / x.size(), !, unary -, * / % + - (int
# arithmetic truncating toward zero; + also joins strings and lists), ==, !=, <, <=, >, >=, `in`,
# &&, ||, the ternary `c ? a : b`, parentheses, the string functions startsWith, endsWith,
# contains, trim, split (Kubernetes' CEL strings library), and the macros filter, all, exists
# (`list.filter(x, pred)`).  This covers every rule of this project's CRDs.  A rule using
# anything else (other functions, messageExpression, optionalOldSelf, ...) is SKIPPED (treated
# as passing), and so is one whose evaluation meets a type this subset does not model.

class CelUnsupported(Exception):
    pass


class CelNoSuchKey(Exception):
    pass


_CEL_TOKEN = re.compile(r"\s*(?:(\d+\.\d+|\d+)|('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")|"
                        r"(==|!=|<=|>=|&&|\|\||[!<>().,*/%+\-?:\[\]])|([A-Za-z_][A-Za-z0-9_]*))")


def cel_tokenize(src):
    pos, out = 0, []
    src = src.strip()
    while pos < len(src):
        m = _CEL_TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise CelUnsupported(src[pos:])
        pos = m.end()
        num, st, op, ident = m.groups()
        if num is not None:
            out.append(("lit", float(num) if "." in num else int(num)))
        elif st is not None:
            out.append(("lit", st[1:-1]))
        elif op is not None:
            out.append(("op", op))
        elif ident == "in":
            out.append(("op", "in"))
        else:
            out.append(("id", ident))
        while pos < len(src) and src[pos].isspace():
            pos += 1
    return out


_CEL_METHODS = {"size": 0, "startsWith": 1, "endsWith": 1, "contains": 1, "trim": 0, "split": 1}
_CEL_MACROS = ("filter", "all", "exists")


class CelParser:
    """CEL's grammar (cel-spec langdef.md), for the subset above."""

    def __init__(self, src):
        self.toks = cel_tokenize(src)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, kind=None, val=None):
        t = self.peek()
        if t[0] is None or (kind and t[0] != kind) or (val is not None and t[1] != val):
            raise CelUnsupported("unexpected %r" % (t,))
        self.i += 1
        return t

    def parse(self):
        e = self.expr()
        if self.i != len(self.toks):
            raise CelUnsupported("trailing tokens")
        return e

    def expr(self):
        e = self.or_()
        if self.peek() == ("op", "?"):
            self.take()
            a = self.or_()
            self.take("op", ":")
            e = ("cond", e, a, self.expr())
        return e

    def or_(self):
        e = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            e = ("or", e, self.and_())
        return e

    def and_(self):
        e = self.rel()
        while self.peek() == ("op", "&&"):
            self.take()
            e = ("and", e, self.rel())
        return e

    def rel(self):
        e = self.add()
        t = self.peek()
        while t[0] == "op" and t[1] in ("==", "!=", "<", "<=", ">", ">=", "in"):
            self.take()
            e = ("in", e, self.add()) if t[1] == "in" else ("cmp", t[1], e, self.add())
            t = self.peek()
        return e

    def add(self):
        e = self.mul()
        while self.peek() in (("op", "+"), ("op", "-")):
            e = ("arith", self.take()[1], e, self.mul())
        return e

    def mul(self):
        e = self.unary()
        while self.peek() in (("op", "*"), ("op", "/"), ("op", "%")):
            e = ("arith", self.take()[1], e, self.unary())
        return e

    def unary(self):
        if self.peek() == ("op", "!"):
            self.take()
            return ("not", self.unary())
        if self.peek() == ("op", "-"):
            self.take()
            return ("neg", self.unary())
        return self.postfix()

    def args(self):
        self.take("op", "(")
        out = []
        if self.peek() != ("op", ")"):
            out.append(self.expr())
            while self.peek() == ("op", ","):
                self.take()
                out.append(self.expr())
        self.take("op", ")")
        return out

    def postfix(self):
        e = self.primary()
        while self.peek() == ("op", "."):
            self.take()
            name = self.take("id")[1]
            if self.peek() != ("op", "("):
                e = ("sel", e, name)
                continue
            args = self.args()
            if name in _CEL_MACROS:
                if len(args) != 2 or args[0][0] != "ident":
                    raise CelUnsupported(name + " needs (variable, predicate)")
                e = ("macro", name, e, args[0][1], args[1])
            elif _CEL_METHODS.get(name, -1) == len(args):
                e = ("call", name, e, args)
            else:
                raise CelUnsupported(name)
        return e

    def primary(self):
        t = self.peek()
        if t == ("op", "("):
            self.take()
            e = self.expr()
            self.take("op", ")")
            return e
        if t == ("op", "["):
            self.take()
            items = []
            if self.peek() != ("op", "]"):
                items.append(self.expr())
                while self.peek() == ("op", ","):
                    self.take()
                    items.append(self.expr())
            self.take("op", "]")
            return ("list", items)
        if t[0] == "lit":
            self.take()
            return ("lit", t[1])
        if t[0] == "id":
            self.take()
            name = t[1]
            if name in ("true", "false"):
                return ("lit", name == "true")
            if name == "null":
                return ("lit", None)
            if name in ("self", "oldSelf"):
                return ("var", name)
            if name in ("has", "size") and self.peek() == ("op", "("):
                args = self.args()
                if len(args) != 1:
                    raise CelUnsupported(name + " takes one argument")
                if name == "has":
                    if args[0][0] != "sel":
                        raise CelUnsupported("has() needs a field selection")
                    return ("has", args[0])
                return ("size", args[0])
            return ("ident", name)  # a macro's variable
        raise CelUnsupported("unexpected %r" % (t,))


def _cel_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _cel_arith(o, a, b):
    if o == "+" and ((isinstance(a, str) and isinstance(b, str)) or
                     (isinstance(a, list) and isinstance(b, list))):
        return a + b
    if not (_cel_int(a) and _cel_int(b)):
        raise CelUnsupported("arithmetic on %s, %s" % (type(a).__name__, type(b).__name__))
    if o in ("/", "%") and b == 0:
        raise CelUnsupported("division by zero")
    if o == "/":
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q  # CEL truncates toward zero
    if o == "%":
        return a - b * _cel_arith("/", a, b)
    return {"+": a + b, "-": a - b, "*": a * b}[o]


def _cel_call(name, target, args):
    if not isinstance(target, (str, list, dict)):
        raise CelUnsupported(name + " on " + type(target).__name__)
    if name == "size":
        return len(target)
    if not isinstance(target, str) or not all(isinstance(a, str) for a in args):
        raise CelUnsupported(name + " on non-strings")
    if name == "startsWith":
        return target.startswith(args[0])
    if name == "endsWith":
        return target.endswith(args[0])
    if name == "contains":
        return args[0] in target
    if name == "trim":
        return target.strip()  # Unicode white space, as strings.trim
    return target.split(args[0]) if args[0] else list(target)  # split("") splits characters


def _cel_macro(name, target, var, pred, env):
    if not isinstance(target, list):
        raise CelUnsupported(name + " on non-list")
    results = []
    for item in target:
        r = cel_eval(pred, dict(env, **{var: item}))
        if not isinstance(r, bool):
            raise CelUnsupported(name + " predicate is not bool")
        results.append(r)
    if name == "filter":
        return [item for item, keep in zip(target, results) if keep]
    return all(results) if name == "all" else any(results)


def cel_eval(node, env):
    op = node[0]
    if op == "lit":
        return node[1]
    if op in ("var", "ident"):
        v = env.get(node[1], MISSING)
        if v is MISSING:
            raise CelUnsupported("unbound " + node[1])
        return v
    if op == "list":
        return [cel_eval(e, env) for e in node[1]]
    if op == "sel":
        base = cel_eval(node[1], env)
        if not isinstance(base, dict):
            raise CelUnsupported("select on non-object")
        if node[2] not in base:
            raise CelNoSuchKey(node[2])
        return base[node[2]]
    if op == "has":
        base = cel_eval(node[1][1], env)
        if not isinstance(base, dict):
            raise CelUnsupported("has on non-object")
        return node[1][2] in base
    if op == "size":
        return _cel_call("size", cel_eval(node[1], env), [])
    if op == "call":
        return _cel_call(node[1], cel_eval(node[2], env), [cel_eval(a, env) for a in node[3]])
    if op == "macro":
        return _cel_macro(node[1], cel_eval(node[2], env), node[3], node[4], env)
    if op == "not":
        v = cel_eval(node[1], env)
        if not isinstance(v, bool):
            raise CelUnsupported("! on non-bool")
        return not v
    if op == "neg":
        v = cel_eval(node[1], env)
        if not is_num(v) or isinstance(v, bool):
            raise CelUnsupported("- on non-number")
        return -v
    if op == "arith":
        return _cel_arith(node[1], cel_eval(node[2], env), cel_eval(node[3], env))
    if op == "cond":
        c = cel_eval(node[1], env)
        if not isinstance(c, bool):
            raise CelUnsupported("?: on non-bool")
        return cel_eval(node[2] if c else node[3], env)
    if op == "in":
        a, b = cel_eval(node[1], env), cel_eval(node[2], env)
        if isinstance(b, list):
            return any(deep_equal(a, x) for x in b)
        if isinstance(b, dict):
            return a in b
        raise CelUnsupported("in on " + type(b).__name__)
    if op in ("and", "or"):
        a = cel_eval(node[1], env)
        if op == "and" and a is False:
            return False
        if op == "or" and a is True:
            return True
        b = cel_eval(node[2], env)
        if not isinstance(a, bool) or not isinstance(b, bool):
            raise CelUnsupported("logic on non-bool")
        return (a and b) if op == "and" else (a or b)
    if op == "cmp":
        a, b = cel_eval(node[2], env), cel_eval(node[3], env)
        o = node[1]
        if o == "==":
            return deep_equal(a, b)
        if o == "!=":
            return not deep_equal(a, b)
        if not ((is_num(a) and is_num(b)) or (isinstance(a, str) and isinstance(b, str))):
            raise CelUnsupported("ordering on mixed types")
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[o]
    raise CelUnsupported(op)


_CEL_CACHE = {}


def run_cel_rule(rule, value, old, schema, path, errs):
    src = rule.get("rule") if isinstance(rule, dict) else None
    if not isinstance(src, str) or rule.get("optionalOldSelf"):
        return
    try:
        ast = _CEL_CACHE.get(src)
        if ast is None:
            ast = CelParser(src).parse()
            _CEL_CACHE[src] = ast
    except CelUnsupported:
        _CEL_CACHE[src] = ("unsupported",)
        return
    if ast == ("unsupported",):
        return
    uses_old = "oldSelf" in src
    if uses_old and old is MISSING:
        return  # transition rules only run on update with a correlatable old value
    env = {"self": value}
    if uses_old:
        env["oldSelf"] = old
    fpath = path
    if rule.get("fieldPath"):
        fp = rule["fieldPath"]
        fpath = path + fp if fp.startswith(".") or fp.startswith("[") else _child(path, fp)
    stype = schema.get("type") or ("integer-or-string" if schema.get("x-kubernetes-int-or-string") else "object")
    try:
        ok = cel_eval(ast, env)
    except CelUnsupported:
        return
    except CelNoSuchKey as e:
        errs.append(FieldError("invalid", fpath, stype, "no such key: %s evaluating rule: %s" % (e, src)))
        return
    if ok is True:
        return
    msg = rule.get("message") or "failed rule: %s" % src
    reason = rule.get("reason") or "FieldValueInvalid"
    if reason == "FieldValueForbidden":
        errs.append(FieldError("forbidden", fpath, OMIT, msg))
    elif reason == "FieldValueRequired":
        errs.append(FieldError("required", fpath, OMIT, msg))
    elif reason == "FieldValueDuplicate":
        errs.append(FieldError("duplicate", fpath, stype, msg))
    else:
        errs.append(FieldError("invalid", fpath, stype, msg))


# --------------------------------------------------------------------------------------------
# JSONPath subset for printer columns and field access
# --------------------------------------------------------------------------------------------

_JP_FILTER = re.compile(r"^\?\(@((?:\.[A-Za-z0-9_\-]+)+)\s*(==|!=)\s*(?:\"([^\"]*)\"|'([^']*)'|(-?\d+(?:\.\d+)?)|(true|false))\)$")


def jsonpath_parse(expr):
    e = expr.strip()
    if e.startswith("{") and e.endswith("}"):
        e = e[1:-1]
    if e.startswith("$"):
        e = e[1:]
    steps, i = [], 0
    while i < len(e):
        c = e[i]
        if c == ".":
            i += 1
            j = i
            name = ""
            while j < len(e) and e[j] not in ".[":
                if e[j] == "\\" and j + 1 < len(e):
                    name += e[j + 1]
                    j += 2
                    continue
                name += e[j]
                j += 1
            if name:
                steps.append(("key", name))
            i = j
        elif c == "[":
            j = e.index("]", i) if "?(" not in e[i:i + 3] else e.index(")]", i) + 1
            inner = e[i + 1:j].strip()
            i = j + 1
            if inner == "*":
                steps.append(("all",))
            elif re.match(r"^-?\d+$", inner):
                steps.append(("idx", int(inner)))
            elif (inner.startswith("'") and inner.endswith("'")) or (inner.startswith('"') and inner.endswith('"')):
                steps.append(("key", inner[1:-1]))
            else:
                m = _JP_FILTER.match(inner)
                if not m:
                    raise ValueError("unsupported jsonpath: %s" % expr)
                fpath = [p for p in m.group(1).split(".") if p]
                if m.group(3) is not None:
                    lit = m.group(3)
                elif m.group(4) is not None:
                    lit = m.group(4)
                elif m.group(5) is not None:
                    lit = float(m.group(5)) if "." in m.group(5) else int(m.group(5))
                else:
                    lit = m.group(6) == "true"
                steps.append(("filter", fpath, m.group(2), lit))
        else:
            raise ValueError("unsupported jsonpath: %s" % expr)
    return steps


def jsonpath_eval(obj, expr):
    """Returns the list of matching values."""
    try:
        steps = jsonpath_parse(expr)
    except (ValueError, IndexError):
        return []
    cur = [obj]
    for st in steps:
        nxt = []
        for v in cur:
            if st[0] == "key":
                if isinstance(v, dict) and st[1] in v:
                    nxt.append(v[st[1]])
            elif st[0] == "idx":
                if isinstance(v, list) and -len(v) <= st[1] < len(v):
                    nxt.append(v[st[1]])
            elif st[0] == "all":
                if isinstance(v, list):
                    nxt.extend(v)
                elif isinstance(v, dict):
                    nxt.extend(v.values())
            elif st[0] == "filter":
                if isinstance(v, list):
                    for it in v:
                        x = it
                        for p in st[1]:
                            x = x.get(p, MISSING) if isinstance(x, dict) else MISSING
                        if x is MISSING:
                            continue
                        eq = deep_equal(x, st[3])
                        if (st[2] == "==" and eq) or (st[2] == "!=" and not eq):
                            nxt.append(it)
        cur = nxt
    return cur


# --------------------------------------------------------------------------------------------
# patches
# --------------------------------------------------------------------------------------------

def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = json_copy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def strategic_merge_lite(target, patch):
    """Strategic merge patch approximated as a JSON merge patch; `$patch`, `$retainKeys`,
    `$setElementOrder/...` and `$deleteFromPrimitiveList/...` directives are honoured only
    trivially (removed / delete / replace)."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    if patch.get("$patch") == "delete":
        return None
    if patch.get("$patch") == "replace":
        return {k: json_copy(v) for k, v in patch.items() if not k.startswith("$")}
    result = json_copy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(v, list):
                result[field] = [x for x in result[field] if x not in v]
            continue
        if k.startswith("$"):
            continue
        if v is None:
            result.pop(k, None)
        else:
            r = strategic_merge_lite(result.get(k), v)
            if r is None:
                result.pop(k, None)
            else:
                result[k] = r
    return result


class JSONPatchError(Exception):
    pass


def _ptr_parse(ptr):
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise JSONPatchError("invalid JSON pointer %r" % ptr)
    return [p.replace("~1", "/").replace("~0", "~") for p in ptr[1:].split("/")]


def _ptr_get(doc, parts, ptr):
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise JSONPatchError("doc is missing path: %s" % ptr)
            cur = cur[p]
        elif isinstance(cur, list):
            if not re.match(r"^\d+$", p) or int(p) >= len(cur):
                raise JSONPatchError("doc is missing path: %s" % ptr)
            cur = cur[int(p)]
        else:
            raise JSONPatchError("doc is missing path: %s" % ptr)
    return cur


def _ptr_parent(doc, parts, ptr):
    if not parts:
        raise JSONPatchError("cannot operate on the document root: %s" % ptr)
    return _ptr_get(doc, parts[:-1], ptr), parts[-1]


def json_patch(doc, ops):
    """RFC 6902 JSON patch; raises JSONPatchError (-> 422) on failure."""
    doc = json_copy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise JSONPatchError("invalid operation %r" % (op,))
        kind, path = op["op"], op.get("path")
        if not isinstance(path, str):
            raise JSONPatchError("operation %s: missing path" % kind)
        parts = _ptr_parse(path)
        if kind in ("add", "replace", "test") and "value" not in op:
            raise JSONPatchError("operation %s: missing value" % kind)
        if kind == "test":
            try:
                cur = _ptr_get(doc, parts, path)
            except JSONPatchError:
                cur = MISSING
                # The API server applies JSON patches with gopkg.in/evanphx/json-patch.v4, where a
                # member missing from an object that exists reads as null (partialDoc.get answers
                # nil): `test` against null succeeds for it. A missing parent still fails.
                if op["value"] is None and parts:
                    try:
                        parent = _ptr_get(doc, parts[:-1], path)
                    except JSONPatchError:
                        parent = MISSING
                    if isinstance(parent, dict):
                        cur = None
            if cur is MISSING or not deep_equal(cur, op["value"]):
                raise JSONPatchError("testing value %s failed: test failed" % path)
            continue
        if kind in ("move", "copy"):
            frm = op.get("from")
            if not isinstance(frm, str):
                raise JSONPatchError("operation %s: missing from" % kind)
            fparts = _ptr_parse(frm)
            val = json_copy(_ptr_get(doc, fparts, frm))
            if kind == "move":
                doc = json_patch(doc, [{"op": "remove", "path": frm}])
            doc = json_patch(doc, [{"op": "add", "path": path, "value": val}])
            continue
        if not parts:
            if kind in ("add", "replace"):
                doc = json_copy(op["value"])
                continue
            raise JSONPatchError("cannot remove the document root")
        parent, last = _ptr_parent(doc, parts, path)
        if kind == "add":
            if isinstance(parent, dict):
                parent[last] = json_copy(op["value"])
            elif isinstance(parent, list):
                if last == "-":
                    parent.append(json_copy(op["value"]))
                elif re.match(r"^\d+$", last) and int(last) <= len(parent):
                    parent.insert(int(last), json_copy(op["value"]))
                else:
                    raise JSONPatchError("add operation does not apply: doc is missing path: %s" % path)
            else:
                raise JSONPatchError("add operation does not apply: doc is missing path: %s" % path)
        elif kind == "remove":
            if isinstance(parent, dict) and last in parent:
                del parent[last]
            elif isinstance(parent, list) and re.match(r"^\d+$", last) and int(last) < len(parent):
                del parent[int(last)]
            else:
                raise JSONPatchError("remove operation does not apply: doc is missing path: %s" % path)
        elif kind == "replace":
            if isinstance(parent, dict) and last in parent:
                parent[last] = json_copy(op["value"])
            elif isinstance(parent, list) and re.match(r"^\d+$", last) and int(last) < len(parent):
                parent[int(last)] = json_copy(op["value"])
            else:
                raise JSONPatchError("replace operation does not apply: doc is missing key: %s" % path)
        else:
            raise JSONPatchError("unexpected kind: %s" % kind)
    return doc


def apply_merge(live, applied):
    """Server-side apply approximated as a recursive merge (maps merge, everything else is
    replaced by the applied value; fields are never removed).  No ownership/conflicts."""
    if isinstance(live, dict) and isinstance(applied, dict):
        out = json_copy(live)
        for k, v in applied.items():
            out[k] = apply_merge(live.get(k, MISSING), v)
        return out
    return json_copy(applied)


def fieldset(value, depth=0):
    """A (simplified) FieldsV1 set for managedFields."""
    if isinstance(value, dict) and depth < 12:
        return {"f:" + k: fieldset(v, depth + 1) for k, v in value.items()}
    return {}


def changed_fields(old, new, depth=0):
    if isinstance(old, dict) and isinstance(new, dict) and depth < 12:
        out = {}
        for k, v in new.items():
            if k not in old:
                out["f:" + k] = fieldset(v, depth + 1)
            elif not deep_equal(old[k], v):
                out["f:" + k] = changed_fields(old[k], v, depth + 1)
        return out
    return {}


def merge_fieldsets(a, b):
    out = json_copy(a)
    for k, v in b.items():
        out[k] = merge_fieldsets(out.get(k, {}), v)
    return out


# --------------------------------------------------------------------------------------------
# label / field selectors
# --------------------------------------------------------------------------------------------

class SelectorError(Exception):
    pass


def parse_label_selector(s):
    """Returns a list of (key, op, values); op in =, !=, in, notin, exists, !exists."""
    reqs = []
    if not s:
        return reqs
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in parts:
        p = p.strip()
        if not p:
            raise SelectorError("found '', expected: identifier")
        m = re.match(r"^([A-Za-z0-9./_-]+)\s+(in|notin)\s+\(([^)]*)\)$", p)
        if m:
            vals = [v.strip() for v in m.group(3).split(",") if v.strip()]
            reqs.append((m.group(1), m.group(2), vals))
            continue
        m = re.match(r"^!\s*([A-Za-z0-9./_-]+)$", p)
        if m:
            reqs.append((m.group(1), "!exists", []))
            continue
        m = re.match(r"^([A-Za-z0-9./_-]+)\s*(==|!=|=)\s*([A-Za-z0-9._-]*)$", p)
        if m:
            reqs.append((m.group(1), "!=" if m.group(2) == "!=" else "=", [m.group(3)]))
            continue
        m = re.match(r"^([A-Za-z0-9./_-]+)$", p)
        if m:
            reqs.append((m.group(1), "exists", []))
            continue
        raise SelectorError("unable to parse requirement: %s" % p)
    for k, _, vals in reqs:
        if qualified_name_errors(k):
            raise SelectorError("unable to parse requirement: key: Invalid value: %s: %s"
                                % (json.dumps(k), qualified_name_errors(k)[0]))
    return reqs


def label_match(reqs, labels):
    labels = labels or {}
    for k, op, vals in reqs:
        has = k in labels
        v = labels.get(k)
        if op == "=" and not (has and v == vals[0]):
            return False
        if op == "!=" and has and v == vals[0]:
            return False
        if op == "in" and not (has and v in vals):
            return False
        if op == "notin" and has and v in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!exists" and has:
            return False
    return True


def parse_field_selector(s, allowed, res):
    reqs = []
    if not s:
        return reqs
    for p in s.split(","):
        p = p.strip()
        m = re.match(r"^([A-Za-z0-9._/-]+)\s*(==|!=|=)\s*(.*)$", p)
        if not m:
            raise SelectorError('invalid selector: \'%s\'; can\'t understand \'%s\'' % (s, p))
        key = m.group(1)
        if key not in allowed:
            raise SelectorError("field label not supported: %s" % key)
        reqs.append((key, m.group(2) != "!=", m.group(3)))
    return reqs


def field_match(reqs, fields):
    for k, eq, v in reqs:
        if (fields.get(k, "") == v) != eq:
            return False
    return True


# --------------------------------------------------------------------------------------------
# resources
# --------------------------------------------------------------------------------------------

STR = {"type": "string"}
INT = {"type": "integer"}
BOOL = {"type": "boolean"}
MICRO = {"type": "string", "x-fake-format": "micro"}
TIME = {"type": "string", "x-fake-format": "time"}
PRESERVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def OBJ(props=None, **kw):
    d = {"type": "object", "properties": props or {}}
    d.update(kw)
    return d


def MAP(v):
    return {"type": "object", "additionalProperties": v}


def ARR(items):
    return {"type": "array", "items": items}


OBJREF = OBJ({k: STR for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")})

BUILTIN_SCHEMAS = {
    "ConfigMap": OBJ({"data": MAP(STR), "binaryData": MAP({"type": "string", "x-fake-format": "byte"}),
                      "immutable": BOOL}),
    "Secret": OBJ({"data": MAP({"type": "string", "x-fake-format": "byte"}), "stringData": MAP(STR),
                   "type": STR, "immutable": BOOL}),
    "Namespace": OBJ({"spec": OBJ({"finalizers": ARR(STR)}),
                      "status": OBJ({"phase": STR, "conditions": ARR(PRESERVE)})}),
    "ServiceAccount": OBJ({"secrets": ARR(OBJREF), "imagePullSecrets": ARR(OBJ({"name": STR})),
                           "automountServiceAccountToken": BOOL}),
    "Lease": OBJ({"spec": OBJ({"holderIdentity": STR, "leaseDurationSeconds": INT, "acquireTime": MICRO,
                               "renewTime": MICRO, "leaseTransitions": INT, "strategy": STR,
                               "preferredHolder": STR})}),
    "Event": OBJ({"involvedObject": OBJREF, "reason": STR, "message": STR,
                  "source": OBJ({"component": STR, "host": STR}), "firstTimestamp": TIME,
                  "lastTimestamp": TIME, "count": INT, "type": STR, "eventTime": MICRO,
                  "series": OBJ({"count": INT, "lastObservedTime": MICRO}), "action": STR, "related": OBJREF,
                  "reportingComponent": STR, "reportingInstance": STR}),
    "Event.events.k8s.io": OBJ({"eventTime": MICRO, "series": OBJ({"count": INT, "lastObservedTime": MICRO}),
                                "reportingController": STR, "reportingInstance": STR, "action": STR,
                                "reason": STR, "regarding": OBJREF, "related": OBJREF, "note": STR,
                                "type": STR, "deprecatedSource": OBJ({"component": STR, "host": STR}),
                                "deprecatedFirstTimestamp": TIME, "deprecatedLastTimestamp": TIME,
                                "deprecatedCount": INT}),
    "CustomResourceDefinition": OBJ({"spec": PRESERVE, "status": PRESERVE}),
}


class Resource:
    def __init__(self, group, version, plural, kind, namespaced, singular=None, short_names=(),
                 categories=(), has_status=False, schema=None, builtin=True, store_key=None,
                 columns=None, generation=False, crd_name=None, unconditional_update=True,
                 schema_key=None, smp=True, field_labels=()):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced = namespaced
        self.singular = singular or kind.lower()
        self.short_names = list(short_names)
        self.categories = list(categories)
        self.has_status = has_status
        self.builtin = builtin
        self.schema = schema if schema is not None else BUILTIN_SCHEMAS.get(schema_key or kind)
        self.store_key = store_key or (group, plural)
        self.columns = columns
        self.generation = generation
        self.crd_name = crd_name
        self.unconditional_update = unconditional_update
        self.smp = smp
        self.field_labels = {"metadata.name", "metadata.namespace"} | set(field_labels)
        self.api_version = "%s/%s" % (group, version) if group else version
        self.qualified = "%s.%s" % (plural, group) if group else plural
        self.list_kind = kind + "List"
        self.is_events_v1 = (group == "events.k8s.io")
        self.is_storage = False

    def __repr__(self):
        return "<Resource %s %s>" % (self.api_version, self.plural)

    # ---- conversions between the stored form and this view ----
    def shared_view(self, obj):
        """to_view(obj) for serialization only (the caller must not change it), cached per stored
        object: a stored object is never changed in place (every write stores a new one), so its
        view (a deep copy with schema defaults applied) is computed once, not once per list item
        and per watcher (a list of 10,000 SlurmJobs spent seconds here). Built-in kinds are not
        cached: callers edit their views."""
        if obj is None or self.builtin or self.is_events_v1:
            return self.to_view(obj)
        cache = self.__dict__.get("_views")
        if cache is None:
            cache = self.__dict__.setdefault("_views", {})
        hit = cache.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        view = self.to_view(obj)
        if len(cache) >= 100000:  # it holds old versions alive: start over now and then
            cache.clear()
        cache[id(obj)] = (obj, view)
        return view

    def to_view(self, obj):
        if obj is None:
            return None
        if self.is_events_v1:
            return core_event_to_v1(obj)
        o = json_copy(obj)
        if not self.builtin:
            o["apiVersion"] = self.api_version
            if self.schema:
                apply_defaults(o, self.schema, root=True)
        return o

    def from_view(self, obj):
        if self.is_events_v1:
            return v1_event_to_core(obj)
        return obj

    def verbs(self):
        return ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def core_event_to_v1(o):
    e = {"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": json_copy(o.get("metadata", {}))}
    e["eventTime"] = o.get("eventTime")
    if o.get("series"):
        e["series"] = json_copy(o["series"])
    for src, dst in (("reportingComponent", "reportingController"), ("reportingInstance", "reportingInstance"),
                     ("action", "action"), ("reason", "reason"), ("involvedObject", "regarding"),
                     ("related", "related"), ("message", "note"), ("type", "type")):
        if o.get(src) not in (None, "", {}):
            e[dst] = json_copy(o[src])
    e["deprecatedSource"] = json_copy(o.get("source") or {})
    e["deprecatedFirstTimestamp"] = o.get("firstTimestamp")
    e["deprecatedLastTimestamp"] = o.get("lastTimestamp")
    if o.get("count"):
        e["deprecatedCount"] = o["count"]
    return e


def v1_event_to_core(e):
    o = {"kind": "Event", "apiVersion": "v1", "metadata": json_copy(e.get("metadata", {}))}
    o["involvedObject"] = json_copy(e.get("regarding") or {})
    for src, dst in (("reason", "reason"), ("note", "message")):
        if e.get(src) not in (None, ""):
            o[dst] = e[src]
    o["source"] = json_copy(e.get("deprecatedSource") or {})
    o["firstTimestamp"] = e.get("deprecatedFirstTimestamp")
    o["lastTimestamp"] = e.get("deprecatedLastTimestamp")
    if e.get("deprecatedCount"):
        o["count"] = e["deprecatedCount"]
    if e.get("type"):
        o["type"] = e["type"]
    o["eventTime"] = e.get("eventTime")
    if e.get("series"):
        o["series"] = json_copy(e["series"])
    if e.get("related"):
        o["related"] = json_copy(e["related"])
    if e.get("action"):
        o["action"] = e["action"]
    o["reportingComponent"] = e.get("reportingController") or ""
    o["reportingInstance"] = e.get("reportingInstance") or ""
    return o


def normalize_core_event(o):
    """Fields a real server always renders for a core/v1 Event."""
    o.setdefault("involvedObject", {})
    o.setdefault("source", {})
    o.setdefault("firstTimestamp", None)
    o.setdefault("lastTimestamp", None)
    o.setdefault("eventTime", None)
    o.setdefault("reportingComponent", "")
    o.setdefault("reportingInstance", "")
    return o


EVENT_FIELD_LABELS = {
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
    "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
    "reason", "reportingComponent", "source", "type",
}
EVENT_V1_FIELD_ALIASES = {
    "regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath", "reportingController": "reportingComponent",
}


def object_fields(res, obj):
    """Field-selector values of a stored object."""
    md = obj.get("metadata") or {}
    f = {"metadata.name": md.get("name", ""), "metadata.namespace": md.get("namespace", "")}
    if res.store_key == ("", "events"):
        io = obj.get("involvedObject") or {}
        for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
            f["involvedObject." + k] = io.get(k, "")
            f["regarding." + k] = io.get(k, "")
        f["reason"] = obj.get("reason", "")
        f["reportingComponent"] = obj.get("reportingComponent", "")
        f["reportingController"] = obj.get("reportingComponent", "")
        f["source"] = (obj.get("source") or {}).get("component", "")
        f["type"] = obj.get("type", "")
    elif res.kind == "Secret":
        f["type"] = obj.get("type", "")
    elif res.kind == "Namespace":
        f["status.phase"] = (obj.get("status") or {}).get("phase", "")
    return f


def builtin_resources():
    ev_labels = EVENT_FIELD_LABELS
    return [
        Resource("", "v1", "namespaces", "Namespace", False, short_names=["ns"], has_status=True,
                 field_labels=["status.phase"]),
        Resource("", "v1", "configmaps", "ConfigMap", True, short_names=["cm"]),
        Resource("", "v1", "secrets", "Secret", True, field_labels=["type"]),
        Resource("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=["sa"]),
        Resource("", "v1", "events", "Event", True, short_names=["ev"], field_labels=ev_labels),
        Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
        Resource("events.k8s.io", "v1", "events", "Event", True, short_names=["ev"],
                 store_key=("", "events"), schema_key="Event.events.k8s.io",
                 field_labels=set(ev_labels) | set(EVENT_V1_FIELD_ALIASES)),
        Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
                 short_names=["crd", "crds"], has_status=True, generation=True, categories=["api-extensions"],
                 smp=False),
    ]


def version_priority(v):
    """Kubernetes version ordering (v1 > v1beta2 > v1beta1 > v1alpha1 > other)."""
    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", v)
    if not m:
        return (0, 0, 0, v)
    major = int(m.group(1))
    stage = {"alpha": 1, "beta": 2, None: 3}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, major, minor, "")


class Registry:
    def __init__(self):
        self.builtins = builtin_resources()
        self.custom = {}            # (group, version, plural) -> Resource
        self.lock = threading.RLock()

    def all(self):
        with self.lock:
            return self.builtins + list(self.custom.values())

    def lookup(self, group, version, plural):
        for r in self.all():
            if r.group == group and r.version == version and r.plural == plural:
                return r
        return None

    def storage_resource(self, skey):
        """The canonical resource of a storage key (core events for the shared event store)."""
        best = None
        for r in self.all():
            if r.store_key == skey:
                if best is None or (r.group == skey[0] and best.group != skey[0]) or r.is_storage:
                    best = r
        return best

    def groups(self):
        """group -> sorted versions (preferred first)."""
        out = collections.OrderedDict()
        for r in self.all():
            out.setdefault(r.group, set()).add(r.version)
        return collections.OrderedDict((g, sorted(vs, key=version_priority, reverse=True)) for g, vs in out.items())

    def set_crd(self, crd):
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, plural = spec.get("group"), names.get("plural")
        with self.lock:
            for k in [k for k, r in self.custom.items() if r.crd_name == crd["metadata"]["name"]]:
                del self.custom[k]
            for v in spec.get("versions") or []:
                if not v.get("served", True):
                    continue
                subres = v.get("subresources") or {}
                r = Resource(group, v["name"], plural, names.get("kind"), spec.get("scope") == "Namespaced",
                             singular=names.get("singular"), short_names=names.get("shortNames") or [],
                             categories=names.get("categories") or [], has_status="status" in subres,
                             schema=((v.get("schema") or {}).get("openAPIV3Schema")) or
                             {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                             builtin=False, store_key=(group, plural),
                             columns=v.get("additionalPrinterColumns"), generation=True,
                             crd_name=crd["metadata"]["name"], unconditional_update=False, smp=False)
                r.is_storage = bool(v.get("storage"))
                self.custom[(group, v["name"], plural)] = r

    def remove_crd(self, name):
        with self.lock:
            for k in [k for k, r in self.custom.items() if r.crd_name == name]:
                del self.custom[k]



# --------------------------------------------------------------------------------------------
# server-side printing (meta.k8s.io/v1 Table)
# --------------------------------------------------------------------------------------------

def _col(name, typ="string", fmt="", desc="", priority=0):
    return {"name": name, "type": typ, "format": fmt, "description": desc, "priority": priority}


def _event_last_seen(o):
    for k in ("lastTimestamp", "eventTime", "firstTimestamp"):
        if o.get(k):
            return age_of(o[k])
    series = o.get("series") or {}
    if series.get("lastObservedTime"):
        return age_of(series["lastObservedTime"])
    return age_of((o.get("metadata") or {}).get("creationTimestamp"))


def _event_object(o):
    io = o.get("involvedObject") or {}
    return "%s/%s" % ((io.get("kind") or "").lower(), io.get("name", ""))


BUILTIN_TABLES = {
    "Namespace": [(_col("Status", desc="The status of the namespace"),
                   lambda o: (o.get("status") or {}).get("phase", ""))],
    "ConfigMap": [(_col("Data", "string", desc="Number of data entries"),
                   lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}))],
    "Secret": [(_col("Type", desc="The type of the secret"), lambda o: o.get("type", "")),
               (_col("Data", "string", desc="Number of data entries"), lambda o: len(o.get("data") or {}))],
    "ServiceAccount": [(_col("Secrets", "string"), lambda o: len(o.get("secrets") or []))],
    "Lease": [(_col("Holder", desc="The holder of the lease"),
               lambda o: (o.get("spec") or {}).get("holderIdentity", ""))],
    "CustomResourceDefinition": [(_col("Created At", "date"),
                                  lambda o: (o.get("metadata") or {}).get("creationTimestamp"))],
}


def table_columns(res):
    """[(definition, cell-function(stored object))]"""
    name_col = (_col("Name", "string", "name", NAME_DESC), lambda o: (o.get("metadata") or {}).get("name", ""))
    age_col = (_col("Age", "string", "", AGE_DESC), lambda o: age_of((o.get("metadata") or {}).get("creationTimestamp")))
    if res.store_key == ("", "events"):
        return [
            (_col("Last Seen", desc="Time when last event from this group was observed."), _event_last_seen),
            (_col("Type", desc="Type of this event."), lambda o: o.get("type", "")),
            (_col("Reason", desc="Reason of this event."), lambda o: o.get("reason", "")),
            (_col("Object", desc="Object this event is about."), _event_object),
            (_col("Subobject", priority=1), lambda o: (o.get("involvedObject") or {}).get("fieldPath", "")),
            (_col("Source", priority=1), lambda o: (o.get("source") or {}).get("component", "")
             or o.get("reportingComponent", "")),
            (_col("Message", desc="A human-readable description of the status of this operation."),
             lambda o: (o.get("message") or "").strip()),
            (_col("First Seen", priority=1), lambda o: age_of(o.get("firstTimestamp") or o.get("eventTime"))),
            (_col("Count", priority=1), lambda o: str(o.get("count") or (o.get("series") or {}).get("count") or 1)),
            (_col("Name", priority=1), lambda o: (o.get("metadata") or {}).get("name", "")),
        ]
    if res.builtin:
        return [name_col] + BUILTIN_TABLES.get(res.kind, []) + ([age_col] if res.kind != "CustomResourceDefinition" else [])
    cols = [name_col]
    pcs = res.columns
    if not pcs:
        pcs = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    for pc in pcs:
        desc = pc.get("description") or ("Custom resource definition column (in JSONPath format): %s" % pc.get("jsonPath"))
        d = _col(pc.get("name", ""), pc.get("type", "string"), pc.get("format", ""), desc, int(pc.get("priority", 0) or 0))
        cols.append((d, _cr_cell(pc.get("type", "string"), pc.get("jsonPath", ""), res)))
    return cols


def _cr_cell(typ, path, res):
    def cell(o):
        view = res.to_view(o)
        vals = jsonpath_eval(view, path)
        if not vals:
            return None
        v = vals[0]
        if v is None:
            return None
        if typ == "string":
            if isinstance(v, str):
                return v
            if isinstance(v, bool):
                return "true" if v else "false"
            if is_num(v):
                return go_num(v)
            return json.dumps(v, separators=(",", ":"))
        if typ == "integer":
            return int(v) if is_num(v) else None
        if typ == "number":
            return float(v) if is_num(v) else None
        if typ == "boolean":
            return v if isinstance(v, bool) else None
        if typ == "date":
            if isinstance(v, str):
                return age_of(v) if parse_time(v) else "<invalid>"
            return None
        return None
    return cell


def partial_metadata(res, o):
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": json_copy(o.get("metadata") or {})}


def build_table(res, objs, include_object="Metadata", list_meta=None, with_columns=True):
    cols = table_columns(res)
    t = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta or {}}
    t["columnDefinitions"] = [c[0] for c in cols] if with_columns else None
    rows = []
    for o in objs:
        cells = []
        for _, fn in cols:
            try:
                cells.append(fn(o))
            except Exception:  # a printer must never fail the request
                cells.append(None)
        row = {"cells": cells}
        if include_object == "Object":
            row["object"] = res.to_view(o)
        elif include_object != "None":
            row["object"] = partial_metadata(res, o)
        rows.append(row)
    t["rows"] = rows
    return t


# --------------------------------------------------------------------------------------------
# OpenAPI v3 (for kubectl explain / apply / field-validation detection)
# --------------------------------------------------------------------------------------------

_OPENAPI_PREFIX = {
    "": "io.k8s.api.core.",
    "coordination.k8s.io": "io.k8s.api.coordination.",
    "events.k8s.io": "io.k8s.api.events.",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.",
}
META = "io.k8s.apimachinery.pkg.apis.meta.v1."


def openapi_name(group, version, kind):
    prefix = _OPENAPI_PREFIX.get(group)
    if prefix is None:
        prefix = ".".join(reversed(group.split("."))) + "."
    return "%s%s.%s" % (prefix, version, kind)


def _strip_fake(schema):
    if isinstance(schema, dict):
        return {k: _strip_fake(v) for k, v in schema.items() if not k.startswith("x-fake-")}
    if isinstance(schema, list):
        return [_strip_fake(v) for v in schema]
    return schema


def _meta_schemas():
    s = lambda d: {"type": "string", "description": d}
    return {
        META + "ObjectMeta": {
            "description": "ObjectMeta is metadata that all persisted resources must have, which includes all "
                           "objects users must create.",
            "type": "object",
            "properties": {
                "name": s(NAME_DESC), "generateName": s("GenerateName is an optional prefix, used by the server, "
                                                       "to generate a unique name ONLY IF the Name field has not "
                                                       "been provided."),
                "namespace": s("Namespace defines the space within which each name must be unique."),
                "uid": s("UID is the unique in time and space value for this object."),
                "resourceVersion": s("An opaque value that represents the internal version of this object."),
                "generation": {"type": "integer", "format": "int64",
                               "description": "A sequence number representing a specific generation of the "
                                              "desired state. Populated by the system. Read-only."},
                "creationTimestamp": {"type": "string", "format": "date-time", "description": AGE_DESC},
                "deletionTimestamp": {"type": "string", "format": "date-time",
                                      "description": "RFC 3339 date and time at which this resource will be "
                                                     "deleted."},
                "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""},
                           "description": "Map of string keys and values that can be used to organize and "
                                          "categorize (scope and select) objects."},
                "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""},
                                "description": "Annotations is an unstructured key value map stored with a "
                                               "resource."},
                "finalizers": {"type": "array", "items": {"type": "string", "default": ""},
                               "x-kubernetes-list-type": "set",
                               "description": "Must be empty before the object is deleted from the registry."},
                "ownerReferences": {"type": "array", "items": {"type": "object",
                                                               "x-kubernetes-preserve-unknown-fields": True},
                                    "description": "List of objects depended by this object."},
                "managedFields": {"type": "array", "items": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True},
                                  "description": "ManagedFields maps workflow-id and version to the set of "
                                                 "fields that are managed by that workflow."},
            },
        },
        META + "ListMeta": {"type": "object", "description": "ListMeta describes metadata that synthetic "
                                                            "resources must have.",
                            "properties": {"resourceVersion": s("String that identifies the server's internal "
                                                                "version of this object."),
                                           "continue": s("continue may be set if the user set a limit."),
                                           "remainingItemCount": {"type": "integer", "format": "int64"}}},
        META + "Patch": {"type": "object", "description": "Patch is provided to give a concrete name and type "
                                                         "to the Kubernetes PATCH request body."},
        META + "Status": {"type": "object", "description": "Status is a return value for calls that don't "
                                                          "return other objects.",
                          "properties": {"apiVersion": s(APIVERSION_DESC), "kind": s(KIND_DESC),
                                         "code": {"type": "integer"}, "message": s("message"),
                                         "reason": s("reason"), "status": s("status"),
                                         "details": {"type": "object",
                                                     "x-kubernetes-preserve-unknown-fields": True}}},
        META + "DeleteOptions": {"type": "object", "description": "DeleteOptions may be provided when deleting "
                                                                 "an API object.",
                                 "properties": {"propagationPolicy": s("Whether and how garbage collection "
                                                                       "will be performed."),
                                                "gracePeriodSeconds": {"type": "integer"},
                                                "preconditions": {"type": "object",
                                                                  "properties": {"uid": s("uid"),
                                                                                 "resourceVersion": s("rv")}},
                                                "dryRun": {"type": "array", "items": {"type": "string"}}}},
    }


def _ref(name):
    return {"$ref": "#/components/schemas/" + name}


def _qparam(name, typ="string", desc=""):
    return {"name": name, "in": "query", "description": desc, "schema": {"type": typ, "uniqueItems": True}}


def openapi_v3_doc(resources, group, version):
    schemas = _meta_schemas()
    paths = {}
    for r in resources:
        name = openapi_name(group, version, r.kind)
        gvk = {"group": group, "version": version, "kind": r.kind}
        if r.builtin:
            base = _strip_fake(json_copy(r.schema or {"type": "object"}))
        else:
            base = json_copy(r.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
        base.setdefault("type", "object")
        props = base.setdefault("properties", {})
        props["apiVersion"] = {"type": "string", "description": APIVERSION_DESC}
        props["kind"] = {"type": "string", "description": KIND_DESC}
        props["metadata"] = {"allOf": [_ref(META + "ObjectMeta")], "default": {}, "description": METADATA_DESC}
        base["x-kubernetes-group-version-kind"] = [gvk]
        if name in schemas:   # events.k8s.io and core events have different schemas but never share a doc
            pass
        schemas[name] = base
        schemas[name + "List"] = {
            "type": "object", "required": ["items"],
            "description": "%s is a list of %s" % (r.list_kind, r.kind),
            "properties": {"apiVersion": {"type": "string", "description": APIVERSION_DESC},
                           "kind": {"type": "string", "description": KIND_DESC},
                           "metadata": {"allOf": [_ref(META + "ListMeta")], "default": {}},
                           "items": {"type": "array", "items": _ref(name)}},
            "x-kubernetes-group-version-kind": [dict(gvk, kind=r.list_kind)],
        }
        root = "/api/%s" % version if not group else "/apis/%s/%s" % (group, version)
        coll = "%s/namespaces/{namespace}/%s" % (root, r.plural) if r.namespaced else "%s/%s" % (root, r.plural)
        item = coll + "/{name}"
        ok = lambda ref: {"200": {"description": "OK", "content": {"application/json": {"schema": _ref(ref)}}}}
        common = [{"name": "pretty", "in": "query", "schema": {"type": "string"}}]
        if r.namespaced:
            common.append({"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}})
        write_params = [_qparam("dryRun"), _qparam("fieldManager"), _qparam("fieldValidation")]
        patch_ct = ["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"]
        if r.builtin and r.smp:
            pass  # strategic merge is accepted by the server but not advertised (kubectl then uses its scheme)

        def op(action, oid, params=(), body=None, resp=name, content=None):
            o = {"operationId": oid, "parameters": list(params), "responses": ok(resp),
                 "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk}
            if body:
                o["requestBody"] = {"content": {ct: {"schema": _ref(body)} for ct in (content or ["application/json"])},
                                    "required": True}
            return o
        paths[coll] = {"get": op("list", "list" + r.kind, [_qparam("labelSelector"), _qparam("fieldSelector"),
                                                           _qparam("limit", "integer"), _qparam("continue"),
                                                           _qparam("resourceVersion"), _qparam("watch", "boolean")],
                                 resp=name + "List"),
                       "post": op("post", "create" + r.kind, write_params, body=name),
                       "delete": op("deletecollection", "deletecollection" + r.kind, [],
                                    body=META + "DeleteOptions", resp=META + "Status"),
                       "parameters": common}
        iparams = common + [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
        paths[item] = {"get": op("get", "read" + r.kind),
                       "put": op("put", "replace" + r.kind, write_params, body=name),
                       "patch": op("patch", "patch" + r.kind, write_params + [_qparam("force", "boolean")],
                                   body=META + "Patch", content=patch_ct),
                       "delete": op("delete", "delete" + r.kind, [_qparam("gracePeriodSeconds", "integer"),
                                                                 _qparam("propagationPolicy")],
                                    body=META + "DeleteOptions", resp=META + "Status"),
                       "parameters": iparams}
        if r.has_status:
            paths[item + "/status"] = {"get": op("get", "read%sStatus" % r.kind),
                                       "put": op("put", "replace%sStatus" % r.kind, write_params, body=name),
                                       "patch": op("patch", "patch%sStatus" % r.kind,
                                                   write_params + [_qparam("force", "boolean")],
                                                   body=META + "Patch", content=patch_ct),
                                       "parameters": iparams}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": SERVER_VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": schemas}}


# --------------------------------------------------------------------------------------------
# protobuf request bodies (kubectl sends built-in kinds as application/vnd.kubernetes.protobuf)
# --------------------------------------------------------------------------------------------
# Field numbers from k8s.io/api/*/generated.proto and apimachinery's meta/v1 & runtime protos.
# Only what is needed to decode the built-in kinds this server serves; responses are always JSON.

_PB_TIME = ("msg", "Time")
_PB_MICRO = ("msg", "MicroTime")
PB_SCHEMAS = {
    "Unknown": {1: ("typeMeta", ("msg", "TypeMeta")), 2: ("raw", "bytes"), 3: ("contentEncoding", "string"),
                4: ("contentType", "string")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "MicroTime": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "ObjectMeta": {1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
                   4: ("selfLink", "string"), 5: ("uid", "string"), 6: ("resourceVersion", "string"),
                   7: ("generation", "int"), 8: ("creationTimestamp", _PB_TIME),
                   9: ("deletionTimestamp", _PB_TIME), 10: ("deletionGracePeriodSeconds", "int"),
                   11: ("labels", ("map", "string")), 12: ("annotations", ("map", "string")),
                   13: ("ownerReferences", ("rep", ("msg", "OwnerReference"))), 14: ("finalizers", ("rep", "string"))},
    "OwnerReference": {1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"), 5: ("apiVersion", "string"),
                       6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")},
    "ObjectReference": {1: ("kind", "string"), 2: ("namespace", "string"), 3: ("name", "string"), 4: ("uid", "string"),
                        5: ("apiVersion", "string"), 6: ("resourceVersion", "string"), 7: ("fieldPath", "string")},
    "LocalObjectReference": {1: ("name", "string")},
    "Namespace": {1: ("metadata", ("msg", "ObjectMeta")), 2: ("spec", ("msg", "NamespaceSpec")),
                  3: ("status", ("msg", "NamespaceStatus"))},
    "NamespaceSpec": {1: ("finalizers", ("rep", "string"))},
    "NamespaceStatus": {1: ("phase", "string")},
    "ConfigMap": {1: ("metadata", ("msg", "ObjectMeta")), 2: ("data", ("map", "string")),
                  3: ("binaryData", ("map", "bytes")), 4: ("immutable", "bool")},
    "Secret": {1: ("metadata", ("msg", "ObjectMeta")), 2: ("data", ("map", "bytes")), 3: ("type", "string"),
               4: ("stringData", ("map", "string")), 5: ("immutable", "bool")},
    "ServiceAccount": {1: ("metadata", ("msg", "ObjectMeta")), 2: ("secrets", ("rep", ("msg", "ObjectReference"))),
                       3: ("imagePullSecrets", ("rep", ("msg", "LocalObjectReference"))),
                       4: ("automountServiceAccountToken", "bool")},
    "Event": {1: ("metadata", ("msg", "ObjectMeta")), 2: ("involvedObject", ("msg", "ObjectReference")),
              3: ("reason", "string"), 4: ("message", "string"), 5: ("source", ("msg", "EventSource")),
              6: ("firstTimestamp", _PB_TIME), 7: ("lastTimestamp", _PB_TIME), 8: ("count", "int"),
              9: ("type", "string"), 10: ("eventTime", _PB_MICRO), 11: ("series", ("msg", "EventSeries")),
              12: ("action", "string"), 13: ("related", ("msg", "ObjectReference")),
              14: ("reportingComponent", "string"), 15: ("reportingInstance", "string")},
    "EventSource": {1: ("component", "string"), 2: ("host", "string")},
    "EventSeries": {1: ("count", "int"), 2: ("lastObservedTime", _PB_MICRO)},
    "Event.events.k8s.io": {1: ("metadata", ("msg", "ObjectMeta")), 2: ("eventTime", _PB_MICRO),
                            3: ("series", ("msg", "EventSeries")), 4: ("reportingController", "string"),
                            5: ("reportingInstance", "string"), 6: ("action", "string"), 7: ("reason", "string"),
                            8: ("regarding", ("msg", "ObjectReference")), 9: ("related", ("msg", "ObjectReference")),
                            10: ("note", "string"), 11: ("type", "string"),
                            12: ("deprecatedSource", ("msg", "EventSource")),
                            13: ("deprecatedFirstTimestamp", _PB_TIME), 14: ("deprecatedLastTimestamp", _PB_TIME),
                            15: ("deprecatedCount", "int")},
    "Lease": {1: ("metadata", ("msg", "ObjectMeta")), 2: ("spec", ("msg", "LeaseSpec"))},
    "LeaseSpec": {1: ("holderIdentity", "string"), 2: ("leaseDurationSeconds", "int"), 3: ("acquireTime", _PB_MICRO),
                  4: ("renewTime", _PB_MICRO), 5: ("leaseTransitions", "int"), 6: ("strategy", "string"),
                  7: ("preferredHolder", "string")},
    "DeleteOptions": {1: ("gracePeriodSeconds", "int"), 2: ("preconditions", ("msg", "Preconditions")),
                      3: ("orphanDependents", "bool"), 4: ("propagationPolicy", "string"), 5: ("dryRun", ("rep", "string"))},
    "Preconditions": {1: ("uid", "string"), 2: ("resourceVersion", "string")},
}


class ProtoError(Exception):
    pass


def _pb_varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf):
            raise ProtoError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 70:
            raise ProtoError("varint too long")


def _pb_fields(buf):
    i, out = 0, []
    while i < len(buf):
        key, i = _pb_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _pb_varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = _pb_varint(buf, i)
            if i + n > len(buf):
                raise ProtoError("truncated field")
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ProtoError("unsupported wire type %d" % wt)
        out.append((num, wt, v))
    return out


def _pb_scalar(typ, wt, v):
    if typ == "string":
        return bytes(v).decode("utf-8")
    if typ == "bytes":
        return base64.b64encode(bytes(v)).decode()
    if typ == "bool":
        return bool(v)
    if typ == "int":
        return v - (1 << 64) if v >= (1 << 63) else v
    raise ProtoError(typ)


def pb_decode(buf, schema_name):
    schema = PB_SCHEMAS[schema_name]
    out = {}
    for num, wt, v in _pb_fields(buf):
        if num not in schema:
            continue
        name, typ = schema[num]
        if isinstance(typ, tuple) and typ[0] == "msg":
            if typ[1] in ("Time", "MicroTime"):
                t = pb_decode(v, typ[1])
                dt = datetime.datetime.fromtimestamp(t.get("seconds", 0), datetime.timezone.utc) + \
                    datetime.timedelta(microseconds=t.get("nanos", 0) // 1000)
                out[name] = fmt_time(dt) if typ[1] == "Time" else fmt_micro(dt)
            else:
                out[name] = pb_decode(v, typ[1])
        elif isinstance(typ, tuple) and typ[0] == "rep":
            inner = typ[1]
            if isinstance(inner, tuple):
                out.setdefault(name, []).append(pb_decode(v, inner[1]))
            else:
                out.setdefault(name, []).append(_pb_scalar(inner, wt, v))
        elif isinstance(typ, tuple) and typ[0] == "map":
            entry = {n: vv for n, _, vv in _pb_fields(v)}
            k = bytes(entry.get(1, b"")).decode("utf-8")
            out.setdefault(name, {})[k] = _pb_scalar(typ[1], 2, entry.get(2, b""))
        else:
            val = _pb_scalar(typ, wt, v)
            if val != "" or typ != "string":   # gogo-proto writes empty optional strings; JSON omits them
                out[name] = val
    return out


def decode_k8s_protobuf(data, schema_name=None):
    """Decode a `k8s\\x00` + runtime.Unknown envelope into a JSON-like dict."""
    if not data.startswith(b"k8s\x00"):
        raise ProtoError("missing protobuf magic number")
    unk = pb_decode(data[4:], "Unknown")
    tm = unk.get("typeMeta") or {}
    kind, av = tm.get("kind", ""), tm.get("apiVersion", "")
    name = schema_name or kind
    if kind == "Event" and av == "events.k8s.io/v1":
        name = "Event.events.k8s.io"
    if name not in PB_SCHEMAS:
        raise ProtoError("no protobuf support for kind %r" % kind)
    obj = pb_decode(base64.b64decode(unk.get("raw", "")) if isinstance(unk.get("raw"), str) else b"", name)
    out = {"kind": kind, "apiVersion": av} if kind else {}
    out.update(obj)
    return out


# --------------------------------------------------------------------------------------------
# YAML loading without implicit timestamps (sigs.k8s.io/yaml keeps them as strings)
# --------------------------------------------------------------------------------------------

if yaml is not None:
    class _KubeYAMLLoader(yaml.SafeLoader):
        pass

    _KubeYAMLLoader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def load_yaml(text):
    if yaml is None:
        return json.loads(text)
    return yaml.load(text, Loader=_KubeYAMLLoader)


def load_yaml_all(text):
    if yaml is None:
        return [json.loads(text)]
    return [d for d in yaml.load_all(text, Loader=_KubeYAMLLoader) if d is not None]


# --------------------------------------------------------------------------------------------
# storage, history and watchers
# --------------------------------------------------------------------------------------------

class HistEvent:
    __slots__ = ("rv", "skey", "type", "obj", "old")

    def __init__(self, rv, skey, etype, obj, old):
        self.rv, self.skey, self.type, self.obj, self.old = rv, skey, etype, obj, old


class Watcher:
    def __init__(self, res, ns, label_reqs, field_reqs, bookmarks, fmt, include_object, pretty, timeout):
        self.res, self.ns = res, ns
        self.label_reqs, self.field_reqs = label_reqs, field_reqs
        self.bookmarks, self.fmt, self.include_object, self.pretty = bookmarks, fmt, include_object, pretty
        self.cond = threading.Condition()
        self.items = collections.deque()
        self.dropped = False
        self.started = time.time()
        self.timeout = timeout
        self.sent = 0
        self.table_header_sent = False
        self.id = uuid.uuid4().hex[:8]
        # As the request gave them (admin "watches": which client watches what).
        self.label_selector_text = ""
        self.user_agent = ""

    def matches(self, obj):
        md = obj.get("metadata") or {}
        if self.ns is not None and md.get("namespace", "") != self.ns:
            return False
        if self.label_reqs and not label_match(self.label_reqs, md.get("labels")):
            return False
        if self.field_reqs and not field_match(self.field_reqs, object_fields(self.res, obj)):
            return False
        return True

    def offer(self, ev):
        if ev.skey != self.res.store_key:
            return
        new_m = self.matches(ev.obj)
        if ev.type == "ADDED":
            t = "ADDED" if new_m else None
        elif ev.type == "DELETED":
            t = "DELETED" if new_m else None
        else:
            old_m = ev.old is not None and self.matches(ev.old)
            t = "MODIFIED" if (new_m and old_m) else "ADDED" if new_m else "DELETED" if old_m else None
        if t:
            self.push(("event", t, ev.obj))

    def push(self, item):
        with self.cond:
            self.items.append(item)
            self.cond.notify_all()

    def push_bookmark(self, rv, initial_end=False):
        self.push(("bookmark", rv, initial_end))

    def drop(self):
        with self.cond:
            self.dropped = True
            self.cond.notify_all()

    def describe(self):
        return {"id": self.id, "resource": self.res.plural, "group": self.res.group, "version": self.res.version,
                "namespace": self.ns, "labelSelector": bool(self.label_reqs), "fieldSelector": bool(self.field_reqs),
                "labelSelectorText": self.label_selector_text, "userAgent": self.user_agent,
                "allowWatchBookmarks": self.bookmarks, "format": self.fmt, "eventsSent": self.sent,
                "ageSeconds": round(time.time() - self.started, 3)}


class Store:
    def __init__(self, history_limit):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.rv = 0
        self.data = {}
        self.history = collections.deque()
        self.compacted = 0
        self.watchers = set()
        self.history_limit = max(1, int(history_limit))
        # What APIServer.tick() has not looked at yet: (skey, event type, object) per write.
        # tick_full asks for a pass over every object (too many writes went unseen).
        self.tick_dirty = []
        self.tick_full = True
        self.owned = set()  # (skey, key) of the objects that have ownerReferences

    def bucket(self, skey):
        return self.data.setdefault(skey, {})

    def get(self, skey, ns, name):
        return self.data.get(skey, {}).get((ns or "", name))

    def write(self, skey, obj, old, etype):
        """Store a new version (or delete), stamping the next resourceVersion; emits the event."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        md = obj["metadata"]
        key = (md.get("namespace", "") or "", md["name"])
        if etype == "DELETED":
            self.bucket(skey).pop(key, None)
        else:
            self.bucket(skey)[key] = obj
        ev = HistEvent(self.rv, skey, etype, obj, old)
        if len(self.tick_dirty) < 100000:
            self.tick_dirty.append((skey, etype, obj))
        else:
            self.tick_full = True
        if etype != "DELETED" and md.get("ownerReferences"):
            self.owned.add((skey, key))
        else:
            self.owned.discard((skey, key))
        self.history.append(ev)
        while len(self.history) > self.history_limit:
            self.compacted = self.history.popleft().rv
        for w in list(self.watchers):
            w.offer(ev)
        self.changed.notify_all()
        return obj

    def compact(self):
        with self.lock:
            self.history.clear()
            self.compacted = self.rv
            return self.compacted

    def state_at(self, skey, rv):
        """The objects of skey as they were at resourceVersion rv (needs rv >= compacted)."""
        objs = dict(self.data.get(skey, {}))
        for ev in reversed(self.history):
            if ev.rv <= rv:
                break
            if ev.skey != skey:
                continue
            md = ev.obj["metadata"]
            key = (md.get("namespace", "") or "", md["name"])
            if ev.type == "ADDED":
                objs.pop(key, None)
            else:
                objs[key] = ev.old
        return objs


class GCStats:
    """Pauses of Python's cyclic garbage collector, by generation (gc.callbacks).

    A collection holds the GIL from its "start" to its "stop": every thread of the stand-in
    waits meanwhile. A full (generation 2) collection walks every tracked container, and with
    100,000 SlurmJobs and a watch history of hundreds of thousands of object versions that is
    tens of millions of them. Admin "gc" reports these."""

    def __init__(self):
        self.lock = threading.Lock()
        self.started = None
        self.reset()

    def reset(self):
        with self.lock:
            self.count = [0, 0, 0]
            self.total = [0.0, 0.0, 0.0]
            self.max = [0.0, 0.0, 0.0]
            self.long = collections.deque(maxlen=50)  # (time, generation, seconds, collected) of pauses >= 50 ms
            self.freezes = 0
            self.freeze_seconds = 0.0

    def callback(self, phase, info):
        if phase == "start":
            self.started = time.perf_counter()
            return
        if self.started is None:
            return
        d = time.perf_counter() - self.started
        self.started = None
        g = info.get("generation", 0)
        # No lock: the collector runs with the GIL held, and a lock taken here could be held by
        # the thread the collection interrupted (reset, snapshot). Lists are updated in place.
        self.count[g] += 1
        self.total[g] += d
        if d > self.max[g]:
            self.max[g] = d
        if d >= 0.05:
            self.long.append((round(time.time(), 3), g, round(d, 4), info.get("collected", 0)))

    def install(self):
        if self.callback not in gc.callbacks:
            gc.callbacks.append(self.callback)

    def snapshot(self):
        with self.lock:
            out = {"generations": [{"generation": g, "collections": self.count[g],
                                    "totalSeconds": round(self.total[g], 4), "maxSeconds": round(self.max[g], 4)}
                                   for g in range(3)],
                   "pausesOver50ms": [{"time": t, "generation": g, "seconds": d, "collected": c}
                                      for t, g, d, c in list(self.long)],
                   "threshold": list(gc.get_threshold()), "count": list(gc.get_count()),
                   "frozen": gc.get_freeze_count(), "freezes": self.freezes,
                   "freezeSeconds": round(self.freeze_seconds, 4)}
        return out

    def freeze(self):
        """Move every object the collector tracks to the permanent generation, where no collection
        looks. The stored objects are JSON trees (no reference cycles): reference counting frees
        them when they leave the store or the history, frozen or not. What is frozen is only
        never collected as a cycle; young cycles (a request's) are collected by the young
        generations first."""
        t0 = time.perf_counter()
        gc.collect(1)
        gc.freeze()
        d = time.perf_counter() - t0
        with self.lock:
            self.freezes += 1
            self.freeze_seconds += d


GC_STATS = GCStats()


def encode_continue(rv, start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(tok):
    try:
        pad = "=" * (-len(tok) % 4)
        d = json.loads(base64.urlsafe_b64decode(tok + pad).decode())
        if d.get("v") != "meta.k8s.io/v1" or not isinstance(d.get("rv"), int) or not isinstance(d.get("start"), str):
            raise ValueError
        return d["rv"], d["start"]
    except Exception:
        raise err_bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")


def list_key(key):
    """The string a continue token's start holds for a store key (namespace, name): "ns/name"
    ("/name" cluster-scoped). Lists are in the order of this string, as etcd orders its keys:
    not that of the tuple (namespace "a-b" sorts before "a/..." here, after it as a tuple)."""
    return "%s/%s" % key


class ListSnapshot:
    """The objects of one resource at one resourceVersion, sorted by list_key once: a continue
    page bisects to its start and walks forward, as etcd serves a page by key range."""
    __slots__ = ("keys", "objs")

    def __init__(self, objs):
        items = sorted((list_key(k), o) for k, o in objs.items())
        self.keys = [k for k, _ in items]
        self.objs = [o for _, o in items]

    def bounds(self, ns):
        """[lo, hi) of the keys in namespace ns (all of them when ns is None)."""
        if ns is None:
            return 0, len(self.keys)
        # "ns/..." and only it lies in ["ns/", "ns0"): "/" and "0" are neighbours.
        return bisect.bisect_left(self.keys, ns + "/"), bisect.bisect_left(self.keys, ns + "0")


# --------------------------------------------------------------------------------------------
# validation of built-in kinds and object metadata
# --------------------------------------------------------------------------------------------

LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                   "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                   "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
                  "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")


def validate_object_meta(res, obj):
    errs = []
    md = obj.get("metadata") or {}
    name = md.get("name") or ""
    if not name:
        errs.append(FieldError("required", "metadata.name", OMIT, "name or generateName is required"))
    elif res.store_key == ("", "events"):
        if name in (".", "..") or "/" in name or "%" in name:
            errs.append(FieldError("invalid", "metadata.name", name, "may not contain '/' or '%'"))
    else:
        for m in (dns_label_errors(name) if res.kind == "Namespace" and not res.group else dns_subdomain_errors(name)):
            errs.append(FieldError("invalid", "metadata.name", name, m))
    labels = md.get("labels") or {}
    for k, v in labels.items():
        for m in qualified_name_errors(k):
            errs.append(FieldError("invalid", "metadata.labels", k, m))
        if not isinstance(v, str):
            continue
        if len(v) > 63:
            errs.append(FieldError("invalid", "metadata.labels", v, "must be no more than 63 characters"))
        elif not _LABEL_VALUE.match(v):
            errs.append(FieldError("invalid", "metadata.labels", v, LABEL_VALUE_MSG))
    ann = md.get("annotations") or {}
    total = 0
    for k, v in ann.items():
        for m in qualified_name_errors(k.lower()):
            errs.append(FieldError("invalid", "metadata.annotations", k, m))
        total += len(k) + len(v if isinstance(v, str) else "")
    if total > 262144:
        errs.append(FieldError("toolong", "metadata.annotations", OMIT, "may not be more than 262144 bytes"))
    for i, f in enumerate(md.get("finalizers") or []):
        if not isinstance(f, str):
            continue
        for m in qualified_name_errors(f):
            errs.append(FieldError("invalid", "metadata.finalizers[%d]" % i, f, m))
    ctrl = []
    for i, ref in enumerate(md.get("ownerReferences") or []):
        p = "metadata.ownerReferences[%d]" % i
        if not isinstance(ref, dict):
            continue
        for k in ("apiVersion", "kind", "name"):
            if not ref.get(k):
                errs.append(FieldError("invalid", "%s.%s" % (p, k), ref.get(k, ""), "%s must not be empty" % k))
        if not ref.get("uid"):
            errs.append(FieldError("invalid", p + ".uid", ref.get("uid", ""), "uid must not be empty"))
        if ref.get("controller") is True:
            ctrl.append(ref)
    if len(ctrl) > 1:
        errs.append(FieldError("invalid", "metadata.ownerReferences", md.get("ownerReferences"),
                               "Only one reference can have Controller set to true. Found \"true\" in references "
                               "for %s" % " and ".join("%s/%s" % (r.get("kind"), r.get("name")) for r in ctrl)))
    return errs


def validate_object_meta_update(res, new, old):
    errs = validate_object_meta(res, new)
    nmd, omd = new.get("metadata") or {}, old.get("metadata") or {}
    if omd.get("deletionTimestamp"):
        oldf = set(omd.get("finalizers") or [])
        added = [f for f in (nmd.get("finalizers") or []) if f not in oldf]
        if added:
            errs.append(FieldError("forbidden", "metadata.finalizers", OMIT,
                                   "no new finalizers can be added if the object is being deleted, found new "
                                   "finalizers []string{%s}" % ", ".join(json.dumps(f) for f in added)))
    if nmd.get("deletionTimestamp") != omd.get("deletionTimestamp"):
        errs.append(immutable_error("metadata.deletionTimestamp", nmd.get("deletionTimestamp")))
    return errs


def validate_kind(res, obj, old):
    """Kind-specific validation of built-in resources (a subset of the real rules)."""
    errs = []
    k = res.kind
    if res.builtin and k in ("ConfigMap", "Secret"):
        total = 0
        for field in (("data", "binaryData") if k == "ConfigMap" else ("data",)):
            for key, v in (obj.get(field) or {}).items():
                if not _CONFIG_KEY.match(key) or key in (".", "..") or len(key) > 253:
                    errs.append(FieldError("invalid", "%s[%s]" % (field, key), key, CONFIG_KEY_MSG))
                total += len(v or "")
        if total > 1024 * 1024 * (4 if k == "Secret" else 1):
            errs.append(FieldError("toolong", "data", OMIT, "may not be more than 1048576 bytes"))
        if old is not None and old.get("immutable") is True:
            if obj.get("immutable") is not True:
                errs.append(FieldError("forbidden", "immutable", OMIT, "field is immutable when `immutable` is set"))
            if not deep_equal(obj.get("data"), old.get("data")) or not deep_equal(obj.get("binaryData"), old.get("binaryData")):
                errs.append(FieldError("forbidden", "data", OMIT, "field is immutable when `immutable` is set"))
        if k == "Secret" and old is not None and obj.get("type") != old.get("type"):
            errs.append(immutable_error("type", obj.get("type")))
    elif k == "Lease":
        spec = obj.get("spec") or {}
        if "leaseDurationSeconds" in spec and spec["leaseDurationSeconds"] is not None and spec["leaseDurationSeconds"] <= 0:
            errs.append(FieldError("invalid", "spec.leaseDurationSeconds", spec["leaseDurationSeconds"], "must be greater than 0"))
        if "leaseTransitions" in spec and spec["leaseTransitions"] is not None and spec["leaseTransitions"] < 0:
            errs.append(FieldError("invalid", "spec.leaseTransitions", spec["leaseTransitions"], "must be greater than or equal to 0"))
    elif res.store_key == ("", "events"):
        errs += validate_event(res, obj, old)
    elif k == "CustomResourceDefinition":
        errs += validate_crd(obj, old)
    return errs


def validate_event(res, ev, old):
    """pkg/apis/core/validation/events.go (obj is in core/v1 form)."""
    errs = []
    strict = res.is_events_v1
    ns = (ev.get("metadata") or {}).get("namespace", "")
    io = ev.get("involvedObject") or {}
    rc_field = "reportingController" if strict else "reportingComponent"
    if not ev.get("eventTime"):
        if not io.get("namespace"):
            if ns not in ("", "default"):
                errs.append(FieldError("invalid", "involvedObject.namespace", io.get("namespace", ""), "does not match event.namespace"))
        elif ns != io.get("namespace"):
            errs.append(FieldError("invalid", "involvedObject.namespace", io.get("namespace", ""), "does not match event.namespace"))
    else:
        if not io.get("namespace") and ns not in ("default", "kube-system"):
            errs.append(FieldError("invalid", "involvedObject.namespace", io.get("namespace", ""), "does not match event.namespace"))
        rc = ev.get("reportingComponent") or ""
        if not rc:
            errs.append(FieldError("required", rc_field))
        else:
            for m in qualified_name_errors(rc):
                errs.append(FieldError("invalid", rc_field, rc, m))
        ri = ev.get("reportingInstance") or ""
        if not ri:
            errs.append(FieldError("required", "reportingInstance"))
        if len(ri) > 128:
            errs.append(FieldError("invalid", "reportingInstance", "", "can have at most 128 characters"))
        act = ev.get("action") or ""
        if not act:
            errs.append(FieldError("required", "action"))
        if len(act) > 128:
            errs.append(FieldError("invalid", "action", "", "can have at most 128 characters"))
        if not ev.get("reason"):
            errs.append(FieldError("required", "reason"))
        if len(ev.get("reason") or "") > 128:
            errs.append(FieldError("invalid", "reason", "", "can have at most 128 characters"))
        if len(ev.get("message") or "") > 1024:
            errs.append(FieldError("invalid", "message", "", "can have at most 1024 characters"))
    if not strict:
        return errs
    if old is None:
        if not ev.get("eventTime"):
            errs.append(FieldError("required", "eventTime"))
        if ev.get("type") not in ("Normal", "Warning"):
            errs.append(FieldError("invalid", "type", "", "has invalid value: %s" % (ev.get("type") or "")))
        if ev.get("firstTimestamp"):
            errs.append(FieldError("invalid", "deprecatedFirstTimestamp", "", "needs to be unset"))
        if ev.get("lastTimestamp"):
            errs.append(FieldError("invalid", "deprecatedLastTimestamp", "", "needs to be unset"))
        if ev.get("count"):
            errs.append(FieldError("invalid", "deprecatedCount", "", "needs to be unset"))
        if (ev.get("source") or {}).get("component") or (ev.get("source") or {}).get("host"):
            errs.append(FieldError("invalid", "deprecatedSource", "", "needs to be unset"))
        errs += _event_series_errors(ev)
    else:
        if not deep_equal(ev.get("series"), old.get("series")):
            errs += _event_series_errors(ev)
        for f in ("involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count",
                  "type", "eventTime", "action", "related", "reportingComponent", "reportingInstance"):
            a, b = ev.get(f), old.get(f)
            if a in ({}, "") and b is None or b in ({}, "") and a is None:
                continue
            if not deep_equal(a, b):
                errs.append(immutable_error(f, a))
    return errs


def _event_series_errors(ev):
    s = ev.get("series")
    if not s:
        return []
    errs = []
    if (s.get("count") or 0) < 2:
        errs.append(FieldError("invalid", "series.count", "", "should be at least 2"))
    if not s.get("lastObservedTime"):
        errs.append(FieldError("required", "series.lastObservedTime"))
    return errs


def structural_errors(s, path, errs, root=False):
    if not isinstance(s, dict):
        return
    t = s.get("type")
    if not t and not s.get("x-kubernetes-preserve-unknown-fields") and not s.get("x-kubernetes-int-or-string"):
        errs.append(FieldError("required", path + ".type", OMIT, "must not be empty for specified object fields"))
    if root and t and t != "object":
        errs.append(FieldError("invalid", path + ".type", t, "must be object at the root"))
    if t and t not in ("object", "array", "string", "integer", "number", "boolean"):
        errs.append(FieldError("notsupported", path + ".type", t,
                               'supported values: "array", "boolean", "integer", "number", "object", "string"'))
    if t == "array" and "items" not in s:
        errs.append(FieldError("required", path + ".items", OMIT, "must be specified"))
    for k, v in (s.get("properties") or {}).items():
        if root and k == "metadata" and isinstance(v, dict):
            extra = set((v.get("properties") or {}).keys()) - {"name", "generateName"}
            if extra:
                errs.append(FieldError("forbidden", "%s.properties[metadata]" % path, OMIT,
                                       "must not specify anything other than name and generateName, but metadata "
                                       "is implicitly specified"))
        structural_errors(v, "%s.properties[%s]" % (path, k), errs)
    if isinstance(s.get("items"), dict):
        structural_errors(s["items"], path + ".items", errs)
    if isinstance(s.get("additionalProperties"), dict):
        structural_errors(s["additionalProperties"], path + ".additionalProperties", errs)


def validate_crd(crd, old):
    errs = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = (crd.get("metadata") or {}).get("name", "")
    group = spec.get("group") or ""
    if not group:
        errs.append(FieldError("required", "spec.group"))
    elif "." not in group:
        errs.append(FieldError("invalid", "spec.group", group, "should be a domain with at least one dot"))
    plural, kind = names.get("plural") or "", names.get("kind") or ""
    if not plural:
        errs.append(FieldError("required", "spec.names.plural"))
    else:
        for m in dns_label_errors(plural):
            errs.append(FieldError("invalid", "spec.names.plural", plural, m))
    if not kind:
        errs.append(FieldError("required", "spec.names.kind"))
    if plural and group and name != "%s.%s" % (plural, group):
        errs.append(FieldError("invalid", "metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        errs.append(FieldError("notsupported", "spec.scope", spec.get("scope", ""),
                               'supported values: "Cluster", "Namespaced"'))
    versions = spec.get("versions") or []
    if not versions:
        errs.append(FieldError("invalid", "spec.versions", versions, "must have exactly one version marked as storage version"))
    elif sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
        errs.append(FieldError("invalid", "spec.versions", versions, "must have exactly one version marked as storage version"))
    seen = set()
    for i, v in enumerate(versions):
        p = "spec.versions[%d]" % i
        if not isinstance(v, dict):
            continue
        vn = v.get("name") or ""
        if not vn:
            errs.append(FieldError("required", p + ".name"))
        elif dns_label_errors(vn):
            errs.append(FieldError("invalid", p + ".name", vn, dns_label_errors(vn)[0]))
        if vn in seen:
            errs.append(FieldError("duplicate", p + ".name", vn))
        seen.add(vn)
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            errs.append(FieldError("required", p + ".schema.openAPIV3Schema", OMIT, "schemas are required"))
        else:
            structural_errors(schema, p + ".schema.openAPIV3Schema", errs, root=True)
        for j, c in enumerate(v.get("additionalPrinterColumns") or []):
            cp = "%s.additionalPrinterColumns[%d]" % (p, j)
            if not c.get("name"):
                errs.append(FieldError("required", cp + ".name"))
            if c.get("type") not in ("integer", "number", "string", "boolean", "date"):
                errs.append(FieldError("notsupported", cp + ".type", c.get("type", ""),
                                       'supported values: "boolean", "date", "integer", "number", "string"'))
            if not c.get("jsonPath"):
                errs.append(FieldError("required", cp + ".JSONPath"))
    if old is not None:
        ospec = old.get("spec") or {}
        if spec.get("scope") != ospec.get("scope"):
            errs.append(immutable_error("spec.scope", spec.get("scope")))
        if group != ospec.get("group"):
            errs.append(immutable_error("spec.group", group))
    return errs


def default_crd(crd):
    spec = crd.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if names.get("kind"):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec.setdefault("conversion", {"strategy": "None"})


def crd_status(crd, old_status=None):
    spec = crd.get("spec") or {}
    names = json_copy(spec.get("names") or {})
    now = fmt_time()
    stored = list((old_status or {}).get("storedVersions") or [])
    for v in spec.get("versions") or []:
        if v.get("storage") and v.get("name") not in stored:
            stored.append(v.get("name"))
    old_conds = {c.get("type"): c for c in (old_status or {}).get("conditions") or []}

    def cond(t, reason, msg):
        c = old_conds.get(t)
        if c and c.get("status") == "True":
            return c
        return {"type": t, "status": "True", "lastTransitionTime": now, "reason": reason, "message": msg}
    return {"acceptedNames": names,
            "conditions": [cond("NamesAccepted", "NoConflicts", "no conflicts found"),
                           cond("Established", "InitialNamesAccepted", "the initial names have been accepted")],
            "storedVersions": stored}


# --------------------------------------------------------------------------------------------
# the API server logic
# --------------------------------------------------------------------------------------------

class Req:
    def __init__(self, method, path, query, headers, body):
        self.method, self.path, self.query, self.headers, self.body = method, path, query, headers, body
        self.res = None
        self.ns = None
        self.name = None
        self.sub = None
        self.verb = None
        self.watch = False

    def q(self, key, default=None):
        v = self.query.get(key)
        return v[-1] if v else default

    def qbool(self, key):
        return (self.q(key, "") or "").lower() in ("1", "true", "yes")

    @property
    def content_type(self):
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()

    @property
    def user_agent(self):
        return self.headers.get("User-Agent") or ""


def _ctype_for(fmt):
    if fmt == "table":
        return "application/json;as=Table;v=v1;g=meta.k8s.io"
    if fmt == "partial":
        return "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
    if fmt == "partiallist":
        return "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    return "application/json"


def parse_accept(h):
    """-> 'table' | 'partial' | 'json'; raises 406 if only unsupported `as=` forms are acceptable."""
    if not h:
        return "json"
    saw_plain = False
    for part in h.split(","):
        items = [x.strip() for x in part.split(";")]
        mt = items[0].lower()
        params = {}
        for kv in items[1:]:
            if "=" in kv:
                a, b = kv.split("=", 1)
                params[a.strip()] = b.strip()
        as_ = params.get("as")
        if as_:
            if params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
                if as_ == "Table":
                    return "table"
                if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                    return "partial"
            continue
        if mt in ("application/json", "*/*", "application/*", "application/vnd.kubernetes.protobuf",
                  "application/yaml", "application/json;stream=watch", ""):
            saw_plain = True
            return "json"
    if not saw_plain:
        raise APIError(406, "NotAcceptable", "only the following media types are accepted: application/json, "
                       "application/yaml, application/vnd.kubernetes.protobuf", {})
    return "json"


class APIServer:
    def __init__(self, args):
        self.args = args
        self.registry = Registry()
        self.store = Store(args.history_size)
        self.token_lock = threading.Lock()
        self.tokens = list(args.token or []) or ["fake-" + uuid.uuid4().hex]
        self.admin_token = args.admin_token
        self.fault_lock = threading.Lock()
        self.faults = []
        self.latencies = []
        self.fault_seq = 0
        self.stats_lock = threading.Lock()
        self.counters = collections.Counter()
        self.req_log = collections.deque(maxlen=5000)
        self.chunking = {"split": False, "coalesce": False, "seed": 0, "split_delay_ms": 0, "max_coalesce": 4}
        self.rand = random.Random(0)
        self.rand_lock = threading.Lock()
        # (store key, resourceVersion) -> ListSnapshot of the paged lists served last (LRU): their
        # continue pages are O(limit), not a copy of the state at that resourceVersion, a sort
        # and a filter of every object (O(N) per page, O(N^2 / limit) per list, under the lock).
        self.list_snapshots = collections.OrderedDict()
        self.list_snapshots_lock = threading.Lock()
        self.list_snapshots_max = LIST_SNAPSHOTS
        self.list_snapshot_hits = self.list_snapshot_misses = 0
        self.bookmark_interval = float(args.bookmark_interval)
        self.shutting_down = False
        self.port = None
        self.scheme = "https" if args.tls_cert else "http"
        self.bootstrap()

    # ------------------------------------------------------------------ bootstrap / system writes
    def bootstrap(self):
        ns_res = self.registry.lookup("", "v1", "namespaces")
        with self.store.lock:
            for n in ("default", "kube-system", "kube-public", "kube-node-lease"):
                obj = {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": n}}
                self.system_create(ns_res, obj)
            for path in self.args.crd or []:
                with open(path) as f:
                    for doc in load_yaml_all(f.read()):
                        if doc.get("kind") == "CustomResourceDefinition":
                            crd_res = self.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
                            self.system_create(crd_res, doc)

    def system_create(self, res, obj):
        obj = json_copy(obj)
        self.default_builtin(res, obj, None)
        if res.kind == "CustomResourceDefinition":
            errs = validate_crd(obj, None)
            if errs:
                raise SystemExit("invalid CRD %s: %s" % (obj["metadata"].get("name"), errs[0].error()))
            obj["status"] = crd_status(obj)
        self.fill_create_meta(res, obj, "kube-apiserver", res.api_version)
        self.store.write(res.store_key, obj, None, "ADDED")
        if res.kind == "CustomResourceDefinition":
            self.registry.set_crd(obj)
        return obj

    # ------------------------------------------------------------------ helpers
    def valid_token(self, tok):
        with self.token_lock:
            return tok in self.tokens

    def count(self, req, code, elapsed):
        with self.stats_lock:
            verb = req.verb or "nonresource"
            resl = ""
            if req.res is not None:
                resl = req.res.plural + ("/" + req.sub if req.sub else "")
                if req.res.group:
                    resl = "%s.%s" % (req.res.plural, req.res.group) + ("/" + req.sub if req.sub else "")
            self.counters["total"] += 1
            self.counters["verb:" + verb] += 1
            if resl:
                self.counters["resource:" + resl] += 1
                self.counters["%s %s" % (verb, resl)] += 1
            self.req_log.append({"method": req.method, "path": req.path, "verb": verb, "resource": resl,
                                 "namespace": req.ns, "name": req.name, "code": code,
                                 "ms": round(elapsed * 1000, 1), "userAgent": req.user_agent})

    def record_access(self, req):
        """--access-log: one JSON line per authenticated resource request, written when it is
        routed (a watch is recorded when it starts), as RBAC sees it: the attributes an authorizer
        is asked about (verb, API group, resource, subresource, namespaced or not), with the
        User-Agent so that a test can pick one client's requests."""
        path = self.args.access_log
        if not path or req.res is None:
            return
        line = json.dumps({"verb": req.verb, "group": req.res.group, "resource": req.res.plural,
                           "subresource": req.sub or "", "namespaced": req.ns is not None,
                           "namespace": req.ns or "", "name": req.name or "",
                           "userAgent": req.user_agent}, sort_keys=True)
        with self.stats_lock:
            with open(path, "a") as f:
                f.write(line + "\n")

    def field_validation(self, req):
        fv = req.q("fieldValidation", "Warn") or "Warn"
        if fv not in ("Ignore", "Warn", "Strict"):
            raise err_bad_request('fieldValidation: Unsupported value: "%s": supported values: "Ignore", "Strict", "Warn"' % fv)
        return fv

    def dry_run(self, req, opts=None):
        vals = list(req.query.get("dryRun") or []) + list((opts or {}).get("dryRun") or [])
        for v in vals:
            if v != "All":
                raise err_invalid("meta.k8s.io", "CreateOptions", "", [FieldError("notsupported", "dryRun", vals, 'supported values: "All"')])
        return bool(vals)

    def field_manager(self, req, default_op="Update"):
        fm = req.q("fieldManager")
        if fm:
            if len(fm) > 128:
                raise err_invalid("meta.k8s.io", "UpdateOptions", "", [FieldError("toolong", "fieldManager", OMIT, "may not be more than 128 bytes")])
            return fm
        ua = req.user_agent.split("/")[0] if req.user_agent else "unknown"
        return ua or "unknown"

    def parse_json_body(self, req, allow_yaml=False):
        raw = req.body or b""
        if req.content_type == "application/vnd.kubernetes.protobuf":
            try:
                return decode_k8s_protobuf(raw)
            except (ProtoError, ValueError, UnicodeDecodeError) as e:
                raise APIError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                               "accepted media types include: application/json, application/yaml (protobuf: %s)" % e, {})
        if not raw.strip():
            raise err_bad_request("the body of the request was empty")
        try:
            if allow_yaml or req.content_type in ("application/yaml", "application/apply-patch+yaml"):
                obj = load_yaml(raw.decode("utf-8"))
            else:
                obj = json.loads(raw.decode("utf-8"))
        except Exception as e:
            if req.res is not None:
                raise err_decode(req.res, "couldn't get version/kind; json parse error: %s" % str(e).splitlines()[0])
            raise err_bad_request("json parse error: %s" % e)
        return obj

    def check_type_meta(self, res, obj, require):
        if not isinstance(obj, dict):
            raise err_decode(res, "couldn't get version/kind; json parse error: json: cannot unmarshal %s into Go "
                             "value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind "
                             "string \"json:\\\"kind,omitempty\\\"\" }" % json_type_name(obj))
        kind, av = obj.get("kind"), obj.get("apiVersion")
        if require:
            if not kind:
                raise err_bad_request("Object 'Kind' is missing in '%s'" % json.dumps(obj, separators=(",", ":"))[:2000])
            if not av:
                raise err_bad_request("Object 'apiVersion' is missing in '%s'" % json.dumps(obj, separators=(",", ":"))[:2000])
        if kind and kind != res.kind:
            raise err_bad_request("%s in version \"%s\" cannot be handled as a %s: no kind \"%s\" is registered "
                                  "for version \"%s\" in scheme" % (res.kind, res.version, res.kind, kind,
                                                                     av or res.api_version))
        if av and av != res.api_version:
            if res.builtin or av.split("/")[0] != res.group:
                raise err_bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                                      % (av, res.api_version))
            r2 = self.registry.lookup(res.group, av.split("/")[-1], res.plural)
            if r2 is None:
                raise err_bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                                      % (av, res.api_version))
        obj["kind"] = res.kind
        obj["apiVersion"] = res.api_version

    def decode_object(self, res, obj, fv, warnings):
        """Request decoding: metadata + schema pruning (unknown-field handling per fieldValidation),
        Go-style type checks of built-in kinds, defaulting of custom resources.  Returns the object in
        storage form (core/v1 for events.k8s.io events)."""
        unknown = []
        md = obj.get("metadata")
        if md is None:
            md = obj["metadata"] = {}
        if not isinstance(md, dict):
            raise err_decode(res, "json: cannot unmarshal %s into Go struct field %s.metadata of type v1.ObjectMeta"
                             % (json_type_name(md), res.kind))
        for k in list(md.keys()):
            if k not in OBJECT_META_FIELDS:
                unknown.append("metadata." + k)
                del md[k]
        for k, typ in (("labels", dict), ("annotations", dict), ("finalizers", list), ("ownerReferences", list),
                       ("managedFields", list), ("name", str), ("namespace", str), ("generateName", str),
                       ("resourceVersion", str), ("uid", str)):
            if k in md and md[k] is not None and not isinstance(md[k], typ):
                raise err_decode(res, "json: cannot unmarshal %s into Go struct field ObjectMeta.metadata.%s of type %s"
                                 % (json_type_name(md[k]), k, {dict: "map[string]string", list: "[]", str: "string"}[typ]))
            if k in md and md[k] is None:
                del md[k]
        for k in ("labels", "annotations"):
            for kk, vv in (md.get(k) or {}).items():
                if not isinstance(vv, str):
                    raise err_decode(res, "json: cannot unmarshal %s into Go struct field ObjectMeta.metadata.%s of type string"
                                     % (json_type_name(vv), k))
        for f in md.get("finalizers") or []:
            if not isinstance(f, str):
                raise err_decode(res, "json: cannot unmarshal %s into Go struct field ObjectMeta.metadata.finalizers of type string" % json_type_name(f))
        schema = res.schema
        prune(obj, schema, "", unknown, root=True)
        if unknown:
            if fv == "Strict":
                raise err_bad_request("strict decoding error: " + ", ".join('unknown field "%s"' % u for u in unknown))
            if fv == "Warn":
                warnings.extend('unknown field "%s"' % u for u in unknown)
        if res.builtin:
            errs = []
            validate_schema(obj, schema, "", errs, cel=False)
            for e in errs:
                if e.kind == "typeinvalid":
                    gotype = {"string": "string", "integer": "int32", "boolean": "bool", "object": "map[string]string",
                              "array": "[]string", "number": "float64"}
                    want = re.search(r"must be of type (\w+)", e.detail)
                    raise err_decode(res, "json: cannot unmarshal %s into Go struct field %s.%s of type %s"
                                     % (e.value, res.kind, e.field, gotype.get(want.group(1) if want else "", "string")))
            self.normalize_formats(res, obj, schema, "")
        else:
            apply_defaults(obj, schema, root=True)
        return res.from_view(obj)

    def normalize_formats(self, res, value, schema, path):
        if not isinstance(schema, dict):
            return value
        if isinstance(value, dict):
            props = schema.get("properties") or {}
            addl = schema.get("additionalProperties")
            for k in list(value.keys()):
                s = props.get(k) if k in props else addl if isinstance(addl, dict) else None
                if s is None:
                    continue
                fmt = s.get("x-fake-format")
                v = value[k]
                if fmt and isinstance(v, str):
                    if fmt == "micro":
                        dt = parse_time(v, micro=True)
                        if dt is None:
                            raise err_decode(res, 'parsing time "%s" as "2006-01-02T15:04:05.000000Z07:00": cannot '
                                                  'parse "%s" as ".000000"' % (v, v[19:] if len(v) > 19 else v))
                        value[k] = fmt_micro(dt)
                    elif fmt == "time":
                        dt = parse_time(v)
                        if dt is None:
                            raise err_decode(res, 'parsing time "%s" as "2006-01-02T15:04:05Z07:00": cannot parse '
                                                  '"%s" as "2006"' % (v, v))
                        value[k] = fmt_time(dt)
                    elif fmt == "byte":
                        try:
                            base64.b64decode(v, validate=True)
                        except Exception:
                            raise err_decode(res, "illegal base64 data at input byte %d" % max(0, len(v) - 1))
                else:
                    self.normalize_formats(res, v, s, _child(path, k))
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for v in value:
                self.normalize_formats(res, v, schema["items"], path)
        return value

    def default_builtin(self, res, obj, old):
        """Registry strategies' PrepareForCreate/Update defaults for built-in kinds."""
        k = res.kind
        if not res.builtin:
            return
        if k == "Namespace":
            name = obj["metadata"].get("name", "")
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
            spec = obj.setdefault("spec", {})
            if old is None:
                spec["finalizers"] = ["kubernetes"]
                obj["status"] = {"phase": "Active"}
            else:
                obj["spec"] = json_copy(old.get("spec") or {})
        elif k == "Secret":
            sd = obj.pop("stringData", None) or {}
            if sd:
                data = obj.setdefault("data", {})
                for kk, vv in sd.items():
                    data[kk] = base64.b64encode(vv.encode()).decode()
            if not obj.get("type"):
                obj["type"] = "Opaque"
        elif res.store_key == ("", "events"):
            normalize_core_event(obj)
        elif k == "CustomResourceDefinition":
            default_crd(obj)

    def fill_create_meta(self, res, obj, manager, api_version, operation="Update"):
        md = obj["metadata"]
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink", "generation"):
            md.pop(k, None)
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = fmt_time()
        if res.generation:
            md["generation"] = 1
        md.pop("managedFields", None)
        fs = fieldset(self.fields_of(obj))
        if fs:
            md["managedFields"] = [{"manager": manager, "operation": operation, "apiVersion": api_version,
                                    "time": fmt_time(), "fieldsType": "FieldsV1", "fieldsV1": fs}]

    @staticmethod
    def fields_of(obj):
        o = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        md = obj.get("metadata") or {}
        m = {k: md[k] for k in ("labels", "annotations", "finalizers", "ownerReferences") if md.get(k)}
        if m:
            o["metadata"] = m
        return o

    def update_managed_fields(self, old, new, manager, operation, sub, api_version, applied=None):
        entries = json_copy((old.get("metadata") or {}).get("managedFields") or [])
        if operation == "Apply":
            fs = fieldset(self.fields_of(applied or {}))
        else:
            fs = changed_fields(self.fields_of(old), self.fields_of(new))
        if not fs and operation != "Apply":
            new["metadata"]["managedFields"] = entries
            if not entries:
                new["metadata"].pop("managedFields", None)
            return
        for e in entries:
            if e.get("manager") == manager and e.get("operation") == operation and e.get("subresource", "") == (sub or ""):
                e["fieldsV1"] = fs if operation == "Apply" else merge_fieldsets(e.get("fieldsV1") or {}, fs)
                e["time"] = fmt_time()
                e["apiVersion"] = api_version
                break
        else:
            e = {"manager": manager, "operation": operation, "apiVersion": api_version, "time": fmt_time(),
                 "fieldsType": "FieldsV1", "fieldsV1": fs}
            if sub:
                e["subresource"] = sub
            entries.append(e)
        new["metadata"]["managedFields"] = entries

    def validate_full(self, res, obj, old):
        errs = validate_object_meta(res, obj) if old is None else validate_object_meta_update(res, obj, old)
        errs += validate_kind(res, obj, old)
        if not res.builtin and res.schema:
            view = res.to_view(obj)
            oview = res.to_view(old) if old is not None else MISSING
            validate_schema(view, res.schema, "", errs, oview)
        return errs

    def crd_terminating(self, res):
        if res.builtin:
            return False
        crd_res = self.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        crd = self.store.get(crd_res.store_key, "", res.crd_name)
        return crd is None or bool(crd["metadata"].get("deletionTimestamp"))

    def ns_check(self, res, ns, name):
        if not res.namespaced:
            return
        ns_res = self.registry.lookup("", "v1", "namespaces")
        nso = self.store.get(ns_res.store_key, "", ns)
        if nso is None:
            raise APIError(404, "NotFound", 'namespaces "%s" not found' % ns, {"name": ns, "kind": "namespaces"})
        if nso["metadata"].get("deletionTimestamp"):
            msg = "unable to create new content in namespace %s because it is being terminated" % ns
            raise err_forbidden(res, name, msg, [{"reason": "NamespaceTerminating", "message": msg,
                                                  "field": "metadata.namespace"}])

    def respond_obj(self, res, obj, fmt, req, code=200):
        if fmt == "table":
            return code, build_table(res, [obj], req.q("includeObject", "Metadata"),
                                     {"resourceVersion": obj["metadata"].get("resourceVersion", "")}), "table"
        if fmt == "partial":
            return code, partial_metadata(res, obj), "partial"
        return code, res.to_view(obj), "json"

    # ------------------------------------------------------------------ verbs
    def op_get(self, req, fmt):
        res = req.res
        with self.store.lock:
            obj = self.store.get(res.store_key, req.ns, req.name)
        if obj is None:
            raise err_not_found(res, req.name)
        return self.respond_obj(res, obj, fmt, req)

    def list_options(self, req):
        rv = req.q("resourceVersion", "")
        rvm = req.q("resourceVersionMatch", "")
        errs = []
        if rvm and rvm not in ("Exact", "NotOlderThan"):
            errs.append(FieldError("notsupported", "resourceVersionMatch", rvm, 'supported values: "Exact", "NotOlderThan", ""'))
        if rvm and not rv:
            errs.append(FieldError("forbidden", "resourceVersionMatch", OMIT, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if rvm == "Exact" and rv == "0":
            errs.append(FieldError("forbidden", "resourceVersionMatch", OMIT, "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""))
        if req.q("continue") and rvm:
            errs.append(FieldError("forbidden", "resourceVersionMatch", OMIT, "resourceVersionMatch is forbidden when continue is provided"))
        limit = req.q("limit")
        if limit not in (None, ""):
            try:
                limit = int(limit)
                if limit < 0:
                    raise ValueError
            except ValueError:
                errs.append(FieldError("invalid", "limit", limit, "must be a non-negative integer"))
                limit = 0
        else:
            limit = 0
        if errs:
            raise err_invalid("meta.k8s.io", "ListOptions", "", errs)
        if rv and not re.match(r"^\d+$", rv):
            raise err_bad_request('resourceVersion: Invalid value: "%s": strconv.ParseUint: parsing "%s": invalid syntax'
                                  % (rv, rv))
        try:
            lreqs = parse_label_selector(req.q("labelSelector", ""))
            freqs = parse_field_selector(req.q("fieldSelector", ""), req.res.field_labels, req.res)
        except SelectorError as e:
            raise err_bad_request(str(e))
        freqs = [(EVENT_V1_FIELD_ALIASES.get(k, k) if req.res.is_events_v1 else k, eq, v) for k, eq, v in freqs]
        return rv, rvm, limit, lreqs, freqs

    def wait_for_rv(self, rv, timeout):
        deadline = time.time() + timeout
        with self.store.lock:
            while self.store.rv < rv:
                left = deadline - time.time()
                if left <= 0:
                    return False
                self.store.changed.wait(left)
        return True

    def too_large(self, rv):
        return APIError(504, "Timeout", "Too large resource version: %d, current: %d" % (rv, self.store.rv),
                        {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                         "retryAfterSeconds": 1})

    def op_list(self, req, fmt):
        res = req.res
        rv, rvm, limit, lreqs, freqs = self.list_options(req)
        cont = req.q("continue", "")
        if cont and rv and rv != "0":
            raise err_bad_request("specifying resource version is not allowed when using continue")
        if rv and rv != "0" and int(rv) > self.store.rv and (rvm != "Exact"):
            if not self.wait_for_rv(int(rv), self.args.too_large_wait):
                raise self.too_large(int(rv))
        start = None
        skey = res.store_key
        snap = objs = None
        with self.store.lock:
            if cont:
                crv, start = decode_continue(cont)
                if crv == -1:
                    list_rv = self.store.rv
                elif crv < self.store.compacted or crv > self.store.rv:
                    newtok = encode_continue(-1, start)
                    raise err_expired("The provided continue parameter is too old to display a consistent list "
                                      "result. You can start a new list without the continue parameter, or use the "
                                      "continue token in this response to retrieve the remainder of the results. "
                                      "Continuing with the provided token results in an inconsistent list - objects "
                                      "that were created, modified, or deleted between the time the first chunk was "
                                      "returned and now may show up in the list.", {"continue": newtok})
                else:
                    list_rv = crv
            elif rv and rv != "0" and (rvm == "Exact" or (limit and rvm != "NotOlderThan")):
                x = int(rv)
                if x < self.store.compacted:
                    raise err_expired("too old resource version: %d (%d)" % (x, self.store.compacted))
                if x > self.store.rv:
                    raise self.too_large(x)
                list_rv = x
            else:
                list_rv = self.store.rv
            snap = self.cached_list(skey, list_rv)
            if snap is None:
                # Under the lock only the copy (and, at an older resourceVersion, the walk back
                # through the newer history); the sort and the filter come after it.
                if list_rv == self.store.rv:
                    objs = dict(self.store.data.get(skey, {}))
                else:
                    objs = self.store.state_at(skey, list_rv)
        cached = snap is not None
        if snap is None:
            snap = ListSnapshot(objs)
            del objs
        lo, hi = snap.bounds(req.ns)
        pos = lo if start is None else max(lo, bisect.bisect_right(snap.keys, start, lo, hi))
        use_limit = limit and not (rv == "0" and not cont)
        items = []
        keys, sobjs = snap.keys, snap.objs
        i = pos
        while i < hi:
            o = sobjs[i]
            if lreqs or freqs:
                md = o["metadata"]
                if lreqs and not label_match(lreqs, md.get("labels")):
                    i += 1
                    continue
                if freqs and not field_match(freqs, object_fields(res, o)):
                    i += 1
                    continue
            items.append(i)
            if use_limit and len(items) > limit:
                break
            i += 1
        meta = {"resourceVersion": str(list_rv)}
        if use_limit and len(items) > limit:
            items = items[:limit]
            meta["continue"] = encode_continue(list_rv, keys[items[-1]])
            if not lreqs and not freqs:
                # every key in [pos, hi) is in the namespace and matches
                meta["remainingItemCount"] = (hi - pos) - limit
            if not cached:
                self.cache_list(skey, list_rv, snap)
        objs = [sobjs[j] for j in items]
        if fmt == "table":
            return 200, build_table(res, objs, req.q("includeObject", "Metadata"), meta), "table"
        if fmt == "partial":
            return 200, {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                         "items": [partial_metadata(res, o) for o in objs]}, "partiallist"
        out = []
        for o in objs:
            v = res.shared_view(o)
            if res.builtin:
                v.pop("kind", None)
                v.pop("apiVersion", None)
            out.append(v)
        return 200, {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta, "items": out}, "json"

    def cached_list(self, skey, rv):
        with self.list_snapshots_lock:
            snap = self.list_snapshots.get((skey, rv))
            if snap is not None:
                self.list_snapshots.move_to_end((skey, rv))
                self.list_snapshot_hits += 1
            else:
                self.list_snapshot_misses += 1
            return snap

    def cache_list(self, skey, rv, snap):
        with self.list_snapshots_lock:
            self.list_snapshots[(skey, rv)] = snap
            self.list_snapshots.move_to_end((skey, rv))
            while len(self.list_snapshots) > max(0, self.list_snapshots_max):
                self.list_snapshots.popitem(last=False)

    def op_create(self, req, fmt):
        res = req.res
        fv = self.field_validation(req)
        dry = self.dry_run(req)
        warnings = []
        obj = self.parse_json_body(req)
        self.check_type_meta(res, obj, require=not res.builtin)
        md = obj.get("metadata")
        if md is None:
            md = obj["metadata"] = {}
        if not isinstance(md, dict):
            raise err_decode(res, "json: cannot unmarshal %s into Go struct field %s.metadata of type v1.ObjectMeta"
                             % (json_type_name(md), res.kind))
        if res.namespaced:
            bns = md.get("namespace")
            if bns and bns != req.ns:
                raise err_bad_request("the namespace of the provided object does not match the namespace sent on the request")
            md["namespace"] = req.ns
        else:
            md.pop("namespace", None)
        if md.get("resourceVersion"):
            raise err_internal("resourceVersion should not be set on objects to be created")
        if not md.get("name") and md.get("generateName"):
            alphabet = "bcdfghjklmnpqrstvwxz2456789"
            with self.rand_lock:
                suffix = "".join(random.choice(alphabet) for _ in range(5))
            md["name"] = md["generateName"][:58] + suffix
        manager = self.field_manager(req)
        obj = self.decode_object(res, obj, fv, warnings)
        name = obj["metadata"].get("name", "")
        with self.store.lock:
            self.ns_check(res, req.ns, name)
            if not res.builtin and self.crd_terminating(res):
                raise APIError(405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating", {})
            self.default_builtin(res, obj, None)
            if res.has_status and not res.builtin:
                obj.pop("status", None)  # "create cannot set status"
            errs = self.validate_full(res, obj, None)
            if errs:
                raise err_invalid_obj(res, name, errs)
            existing = self.store.get(res.store_key, req.ns, name)
            if existing is not None:
                raise err_already_exists(res, name, bool(existing["metadata"].get("deletionTimestamp")))
            self.fill_create_meta(res, obj, manager, res.api_version)
            if res.kind == "CustomResourceDefinition":
                obj["status"] = crd_status(obj)
                obj["metadata"].setdefault("finalizers", [])
                if CRD_CLEANUP_FINALIZER not in obj["metadata"]["finalizers"]:
                    obj["metadata"]["finalizers"].append(CRD_CLEANUP_FINALIZER)
            if not dry:
                self.store.write(res.store_key, obj, None, "ADDED")
                if res.kind == "CustomResourceDefinition":
                    self.registry.set_crd(obj)
        code, body, f = self.respond_obj(res, obj, fmt, req, 201)
        return code, body, f, warnings

    def prepare_update(self, res, old, new, sub):
        omd = old["metadata"]
        if res.has_status and sub == "status":
            result = json_copy(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            result["metadata"]["resourceVersion"] = new["metadata"].get("resourceVersion", omd.get("resourceVersion"))
            return result
        if res.has_status:
            if "status" in old:
                new["status"] = json_copy(old["status"])
            else:
                new.pop("status", None)
        nmd = new["metadata"]
        if "generation" in omd:
            nmd["generation"] = omd["generation"]
        else:
            nmd.pop("generation", None)
        if not nmd.get("uid"):
            nmd["uid"] = omd["uid"]
        nmd["creationTimestamp"] = omd.get("creationTimestamp")
        nmd["name"] = omd["name"]
        if "namespace" in omd:
            nmd["namespace"] = omd["namespace"]
        if omd.get("deletionTimestamp"):
            nmd["deletionTimestamp"] = omd["deletionTimestamp"]
            if nmd.get("deletionGracePeriodSeconds") is None and "deletionGracePeriodSeconds" in omd:
                nmd["deletionGracePeriodSeconds"] = omd["deletionGracePeriodSeconds"]
        nmd.pop("selfLink", None)
        self.default_builtin(res, new, old)
        if res.generation:
            skip = ("metadata", "status") if res.has_status else ("metadata",)
            a = {k: v for k, v in new.items() if k not in skip and k not in ("apiVersion", "kind")}
            b = {k: v for k, v in old.items() if k not in skip and k not in ("apiVersion", "kind")}
            if not deep_equal(a, b):
                nmd["generation"] = int(omd.get("generation") or 0) + 1
        return new

    def update_locked(self, req, res, old, new, sub, operation, dry, manager, applied=None):
        nmd, omd = new["metadata"], old["metadata"]
        rv = nmd.get("resourceVersion")
        name = omd["name"]
        if not rv:
            if not res.unconditional_update:
                raise err_invalid(res.group, res.plural, name, [FieldError("invalid", "metadata.resourceVersion",
                                                                           GoLiteral("0x0"), "must be specified for an update")])
        else:
            if not re.match(r"^\d+$", rv):
                raise err_bad_request('resourceVersion: Invalid value: "%s": strconv.ParseUint: parsing "%s": invalid '
                                      'syntax' % (rv, rv))
            if rv != omd["resourceVersion"]:
                raise err_conflict(res, name)
        if nmd.get("uid") and nmd["uid"] != omd["uid"]:
            raise err_conflict(res, name, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                               % (nmd["uid"], omd["uid"]))
        if nmd.get("deletionTimestamp") and not omd.get("deletionTimestamp"):
            raise err_invalid_obj(res, name, [immutable_error("metadata.deletionTimestamp", nmd["deletionTimestamp"])])
        result = self.prepare_update(res, old, new, sub)
        errs = self.validate_full(res, result, old)
        if errs:
            raise err_invalid_obj(res, name, errs)
        result["metadata"]["resourceVersion"] = omd["resourceVersion"]
        if deep_equal(strip_meta_for_compare(result), strip_meta_for_compare(old)):
            return old   # no-op: no resourceVersion bump, no watch event
        self.update_managed_fields(old, result, manager, operation, sub if res.has_status else None,
                                   res.api_version, applied)
        if res.kind == "CustomResourceDefinition" and sub != "status":
            result["status"] = crd_status(result, old.get("status"))
        if dry:
            return result
        if result["metadata"].get("deletionTimestamp") and not result["metadata"].get("finalizers") \
                and not (res.kind == "Namespace" and not res.group):
            result["metadata"].pop("finalizers", None)
            self.store.write(res.store_key, result, old, "DELETED")
            self.after_delete(res, result)
            return result
        self.store.write(res.store_key, result, old, "MODIFIED")
        if res.kind == "CustomResourceDefinition":
            self.registry.set_crd(result)
        return result

    def after_delete(self, res, obj):
        if res.kind == "CustomResourceDefinition":
            self.registry.remove_crd(obj["metadata"]["name"])
            spec = obj.get("spec") or {}
            skey = (spec.get("group"), (spec.get("names") or {}).get("plural"))
            for key, o in list(self.store.data.get(skey, {}).items()):
                self.store.write(skey, json_copy(o), o, "DELETED")

    def check_name_ns(self, req, obj):
        md = obj.get("metadata") or {}
        if md.get("name") and md["name"] != req.name:
            raise err_bad_request("the name of the object (%s) does not match the name on the URL (%s)" % (md["name"], req.name))
        if req.res.namespaced and md.get("namespace") and md["namespace"] != req.ns:
            raise err_bad_request("the namespace of the provided object does not match the namespace sent on the request")
        obj.setdefault("metadata", {})["name"] = req.name
        if req.res.namespaced:
            obj["metadata"]["namespace"] = req.ns
        else:
            obj["metadata"].pop("namespace", None)

    def op_update(self, req, fmt):
        res = req.res
        fv = self.field_validation(req)
        dry = self.dry_run(req)
        warnings = []
        obj = self.parse_json_body(req)
        self.check_type_meta(res, obj, require=not res.builtin)
        if not isinstance(obj.get("metadata", {}), dict):
            raise err_decode(res, "json: cannot unmarshal into Go struct field %s.metadata of type v1.ObjectMeta" % res.kind)
        self.check_name_ns(req, obj)
        manager = self.field_manager(req)
        obj = self.decode_object(res, obj, fv, warnings)
        with self.store.lock:
            old = self.store.get(res.store_key, req.ns, req.name)
            if old is None:
                raise err_not_found(res, req.name)
            result = self.update_locked(req, res, old, obj, req.sub, "Update", dry, manager)
        code, body, f = self.respond_obj(res, result, fmt, req)
        return code, body, f, warnings

    PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                   "application/strategic-merge-patch+json", "application/apply-patch+yaml")

    def op_patch(self, req, fmt):
        res = req.res
        ct = req.content_type
        allowed = [t for t in self.PATCH_TYPES if res.smp or "strategic" not in t]
        if ct not in allowed:
            raise err_unsupported_patch(ct, allowed)
        fv = self.field_validation(req)
        dry = self.dry_run(req)
        warnings = []
        is_apply = ct == "application/apply-patch+yaml"
        force = req.qbool("force")
        if req.q("force") and not is_apply:
            raise err_invalid("meta.k8s.io", "PatchOptions", "", [FieldError("forbidden", "force", OMIT, "may not be specified for non-apply patch")])
        if is_apply and not req.q("fieldManager"):
            raise err_invalid("meta.k8s.io", "PatchOptions", "", [FieldError("required", "fieldManager", OMIT, "is required for apply patch")])
        manager = self.field_manager(req)
        patch = self.parse_json_body(req, allow_yaml=is_apply)
        if ct == "application/json-patch+json":
            if not isinstance(patch, list):
                raise err_bad_request("json: cannot unmarshal %s into Go value of type jsonpatch.Patch" % json_type_name(patch))
        elif not isinstance(patch, dict):
            raise err_bad_request("json: cannot unmarshal %s into Go value of type map[string]interface {}" % json_type_name(patch))
        if is_apply:
            if not patch.get("apiVersion") or not patch.get("kind"):
                raise err_bad_request("error decoding YAML: Object 'Kind' is missing in '%s'" % json.dumps(patch)[:500])
            if (patch.get("metadata") or {}).get("managedFields"):
                raise err_bad_request("metadata.managedFields must be nil")
        _ = force  # no ownership tracking, hence no apply conflicts to force through
        with self.store.lock:
            old = self.store.get(res.store_key, req.ns, req.name)
            if old is None:
                if not is_apply or req.sub:
                    raise err_not_found(res, req.name)
                obj = json_copy(patch)
                self.check_type_meta(res, obj, require=True)
                self.check_name_ns(req, obj)
                if obj["metadata"].get("resourceVersion"):
                    raise err_not_found(res, req.name)
                obj = self.decode_object(res, obj, fv, warnings)
                self.ns_check(res, req.ns, req.name)
                if not res.builtin and self.crd_terminating(res):
                    raise APIError(405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating", {})
                self.default_builtin(res, obj, None)
                if res.has_status and not res.builtin:
                    obj.pop("status", None)
                errs = self.validate_full(res, obj, None)
                if errs:
                    raise err_invalid_obj(res, req.name, errs)
                self.fill_create_meta(res, obj, manager, res.api_version, "Apply")
                if res.kind == "CustomResourceDefinition":
                    obj["status"] = crd_status(obj)
                    obj["metadata"].setdefault("finalizers", []).append(CRD_CLEANUP_FINALIZER)
                if not dry:
                    self.store.write(res.store_key, obj, None, "ADDED")
                    if res.kind == "CustomResourceDefinition":
                        self.registry.set_crd(obj)
                code, body, f = self.respond_obj(res, obj, fmt, req, 201)
                return code, body, f, warnings
            base = res.to_view(old)
            if ct == "application/merge-patch+json":
                patched = merge_patch(base, patch)
            elif ct == "application/strategic-merge-patch+json":
                patched = strategic_merge_lite(base, patch)
            elif ct == "application/json-patch+json":
                try:
                    patched = json_patch(base, patch)
                except JSONPatchError as e:
                    raise APIError(422, "Invalid", "the server rejected our request due to an error in our request",
                                   {"causes": [{"reason": "UnexpectedServerResponse", "message": str(e)}]})
            else:
                applied = json_copy(patch)
                self.check_type_meta(res, applied, require=True)
                patched = apply_merge(base, applied)
            if not isinstance(patched, dict):
                raise err_bad_request("the patch did not result in an object")
            self.check_type_meta(res, patched, require=False)
            if not isinstance(patched.get("metadata"), dict):
                patched["metadata"] = {}
            self.check_name_ns(req, patched)
            new = self.decode_object(res, patched, fv, warnings)
            if "resourceVersion" not in new["metadata"] and not res.unconditional_update:
                pass  # removing the RV through a patch makes the update unconditional on a real server
            if not new["metadata"].get("resourceVersion"):
                new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            result = self.update_locked(req, res, old, new, req.sub, "Apply" if is_apply else "Update", dry,
                                        manager, applied=patch if is_apply else None)
        code, body, f = self.respond_obj(res, result, fmt, req)
        return code, body, f, warnings

    def delete_options(self, req):
        opts = {}
        if req.body and req.content_type == "application/vnd.kubernetes.protobuf":
            try:
                opts = decode_k8s_protobuf(req.body, "DeleteOptions")
            except (ProtoError, ValueError) as e:
                raise err_bad_request("unable to decode DeleteOptions: %s" % e)
        elif req.body and req.body.strip():
            try:
                opts = json.loads(req.body.decode())
            except Exception as e:
                raise err_bad_request("json parse error: %s" % e)
            if not isinstance(opts, dict):
                raise err_bad_request("json: cannot unmarshal into DeleteOptions")
        for k in ("propagationPolicy", "gracePeriodSeconds", "orphanDependents"):
            if req.q(k) is not None:
                opts[k] = req.q(k)
        pp = opts.get("propagationPolicy")
        if pp and pp not in ("Foreground", "Background", "Orphan"):
            raise err_invalid("meta.k8s.io", "DeleteOptions", "", [FieldError("notsupported", "propagationPolicy", pp, 'supported values: "Foreground", "Background", "Orphan", "nil"')])
        if str(opts.get("orphanDependents", "")).lower() == "true":
            opts["propagationPolicy"] = opts.get("propagationPolicy") or "Orphan"
        return opts

    def delete_locked(self, res, obj, opts, dry=False):
        """Returns (deleted_now, object)."""
        md = obj["metadata"]
        if md.get("deletionTimestamp"):
            return False, obj
        fins = list(md.get("finalizers") or [])
        pp = opts.get("propagationPolicy")
        if pp == "Foreground" and "foregroundDeletion" not in fins:
            fins.append("foregroundDeletion")
        elif pp == "Orphan" and "orphan" not in fins:
            fins.append("orphan")
        is_ns = res.kind == "Namespace" and not res.group
        if fins or is_ns:
            new = json_copy(obj)
            nmd = new["metadata"]
            if fins:
                nmd["finalizers"] = fins
            nmd["deletionTimestamp"] = fmt_time()
            nmd["deletionGracePeriodSeconds"] = 0
            if int(nmd.get("generation") or 0) > 0:
                nmd["generation"] = int(nmd["generation"]) + 1
            if is_ns:
                new.setdefault("status", {})["phase"] = "Terminating"
            if res.kind == "CustomResourceDefinition":
                st = new.setdefault("status", {})
                st.setdefault("conditions", []).append({"type": "Terminating", "status": "True",
                                                        "lastTransitionTime": fmt_time(),
                                                        "reason": "InstanceDeletionInProgress",
                                                        "message": "CustomResource deletion is in progress"})
            if not dry:
                self.store.write(res.store_key, new, obj, "MODIFIED")
            return False, new
        final = json_copy(obj)
        if not dry:
            self.store.write(res.store_key, final, obj, "DELETED")
            self.after_delete(res, final)
        return True, final

    def op_delete(self, req, fmt):
        res = req.res
        opts = self.delete_options(req)
        dry = self.dry_run(req, opts)
        with self.store.lock:
            obj = self.store.get(res.store_key, req.ns, req.name)
            if obj is None:
                raise err_not_found(res, req.name)
            pre = opts.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
                raise err_conflict(res, req.name, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                                   % (pre["uid"], obj["metadata"]["uid"]))
            if pre.get("resourceVersion") and pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise err_conflict(res, req.name, "Precondition failed: ResourceVersion in precondition: %s, "
                                   "ResourceVersion in meta: %s" % (pre["resourceVersion"], obj["metadata"]["resourceVersion"]))
            if res.kind == "Namespace" and not res.group and req.name in ("default", "kube-system", "kube-public"):
                raise err_forbidden(res, req.name, "this namespace may not be deleted")
            deleted, result = self.delete_locked(res, obj, opts, dry)
        if deleted:
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": gr_details(res, req.name, uid=result["metadata"]["uid"])}, "json"
        return self.respond_obj(res, result, fmt, req)

    def op_deletecollection(self, req, fmt):
        res = req.res
        opts = self.delete_options(req)
        dry = self.dry_run(req, opts)
        _, _, _, lreqs, freqs = self.list_options(req)
        out = []
        with self.store.lock:
            for key in sorted(self.store.data.get(res.store_key, {})):
                o = self.store.data[res.store_key][key]
                md = o["metadata"]
                if req.ns is not None and md.get("namespace", "") != req.ns:
                    continue
                if lreqs and not label_match(lreqs, md.get("labels")):
                    continue
                if freqs and not field_match(freqs, object_fields(res, o)):
                    continue
                if res.kind == "Namespace" and md["name"] in ("default", "kube-system", "kube-public"):
                    continue
                _, r = self.delete_locked(res, o, opts, dry)
                out.append(res.to_view(r))
            rv = self.store.rv
        return 200, {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": {"resourceVersion": str(rv)},
                     "items": out}, "json"

    def op_watch(self, req, fmt):
        """Returns (watcher, initial_error_status or None)."""
        res = req.res
        rv, rvm, _, lreqs, freqs = self.list_options(req)
        sie = req.q("sendInitialEvents")
        bookmarks = req.qbool("allowWatchBookmarks")
        errs = []
        if sie is not None:
            if not bookmarks:
                errs.append(FieldError("forbidden", "allowWatchBookmarks", OMIT, "allowWatchBookmarks must be set to true when sendInitialEvents option is set"))
            if rvm != "NotOlderThan":
                errs.append(FieldError("forbidden", "resourceVersionMatch", OMIT, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        elif rvm:
            errs.append(FieldError("forbidden", "resourceVersionMatch", OMIT, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
        ts = req.q("timeoutSeconds")
        if ts not in (None, ""):
            try:
                timeout = float(int(ts))
            except ValueError:
                errs.append(FieldError("invalid", "timeoutSeconds", ts, "must be an integer"))
                timeout = 0
        else:
            m = float(self.args.min_request_timeout)
            timeout = m * (1 + random.random())
        if errs:
            raise err_invalid("meta.k8s.io", "ListOptions", "", errs)
        if timeout <= 0:
            timeout = float(self.args.min_request_timeout) * (1 + random.random())
        w = Watcher(res, req.ns, lreqs, freqs, bookmarks, fmt, req.q("includeObject", "Metadata"),
                    req.qbool("pretty"), timeout)
        w.label_selector_text = req.q("labelSelector", "") or ""
        w.user_agent = req.user_agent
        initial_error = None
        send_initial = (sie or "").lower() == "true"
        if rv and rv != "0" and int(rv) > self.store.rv:
            if not self.wait_for_rv(int(rv), self.args.too_large_wait):
                return w, self.too_large(int(rv)).status()
        with self.store.lock:
            if not rv or rv == "0" or send_initial:
                cur = self.store.data.get(res.store_key, {})
                for key in sorted(cur):
                    o = cur[key]
                    if w.matches(o):
                        w.push(("event", "ADDED", o))
                if send_initial:
                    w.push_bookmark(self.store.rv, initial_end=True)
            else:
                x = int(rv)
                if x < self.store.compacted:
                    initial_error = err_expired("too old resource version: %d (%d)" % (x, self.store.compacted)).status()
                else:
                    # Only the events after x, found from the end (the history is in rv order):
                    # a walk over all of it cost seconds under the lock with 10^6 events.
                    newer = []
                    for ev in reversed(self.store.history):
                        if ev.rv <= x:
                            break
                        newer.append(ev)
                    for ev in reversed(newer):
                        w.offer(ev)
            if initial_error is None:
                self.store.watchers.add(w)
        return w, initial_error

    # ------------------------------------------------------------------ background work
    def tick(self):
        """Simulated controllers: garbage-collector finalizers, namespace and CRD cleanup, ownerRef GC.

        Each pass looks only at what was written since the previous pass (Store.tick_dirty): an
        object nobody wrote since was already looked at, with the same content, and needed nothing
        (or its change would be a write). A pass over every object used to take 120-220 ms with
        10,000 SlurmJobs and their Events, every 100 ms, under the store lock. A whole pass still
        runs after a wholesale change: the first pass, a replaced store (--state-file), a CRD
        change (objects may change resource), or more unseen writes than the list keeps."""
        with self.store.lock:
            st = self.store
            dirty, st.tick_dirty = st.tick_dirty, []
            crd_skey = ("apiextensions.k8s.io", "customresourcedefinitions")
            full = st.tick_full or getattr(self, "_tick_data", None) is not st.data or any(
                d[0] == crd_skey for d in dirty)
            st.tick_full = False
            self._tick_data = st.data
            if not full and not dirty:
                return
            reg = self.registry
            # GC-owned finalizers (foregroundDeletion/orphan) are removed at once (no dependents tracked).
            if full:
                candidates = [(skey, list(bucket)) for skey, bucket in list(st.data.items())]
            else:
                by_skey = {}
                for skey, _, o in dirty:
                    md = o["metadata"]
                    by_skey.setdefault(skey, {})[(md.get("namespace", "") or "", md["name"])] = None
                candidates = list(by_skey.items())
            for skey, keys in candidates:
                res = reg.storage_resource(skey)
                if res is None:
                    continue
                bucket = st.data.get(skey, {})
                for key in keys:
                    o = bucket.get(key)
                    if o is None:
                        continue
                    md = o["metadata"]
                    if md.get("deletionTimestamp") and any(f in GC_FINALIZERS for f in md.get("finalizers") or []):
                        new = json_copy(o)
                        new["metadata"]["finalizers"] = [f for f in md["finalizers"] if f not in GC_FINALIZERS]
                        if not new["metadata"]["finalizers"]:
                            del new["metadata"]["finalizers"]
                            self.store.write(skey, new, o, "DELETED")
                            self.after_delete(res, new)
                        else:
                            self.store.write(skey, new, o, "MODIFIED")
            # terminating namespaces
            ns_res = reg.lookup("", "v1", "namespaces")
            for key, nso in list(self.store.data.get(ns_res.store_key, {}).items()):
                if not nso["metadata"].get("deletionTimestamp"):
                    continue
                ns = nso["metadata"]["name"]
                remaining = 0
                for skey, bucket in list(self.store.data.items()):
                    res = reg.storage_resource(skey)
                    if res is None or not res.namespaced:
                        continue
                    for k2, o in list(bucket.items()):
                        if k2[0] != ns:
                            continue
                        remaining += 1
                        self.delete_locked(res, o, {})
                if remaining == 0:
                    self.store.write(ns_res.store_key, json_copy(nso), nso, "DELETED")
            # terminating CRDs
            crd_res = reg.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            for key, crd in list(self.store.data.get(crd_res.store_key, {}).items()):
                if not crd["metadata"].get("deletionTimestamp"):
                    continue
                spec = crd.get("spec") or {}
                skey = (spec.get("group"), (spec.get("names") or {}).get("plural"))
                res = reg.storage_resource(skey)
                bucket = self.store.data.get(skey, {})
                for k2, o in list(bucket.items()):
                    if res is not None:
                        self.delete_locked(res, o, {})
                if not self.store.data.get(skey) and CRD_CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or []):
                    new = json_copy(crd)
                    new["metadata"]["finalizers"] = [f for f in crd["metadata"]["finalizers"] if f != CRD_CLEANUP_FINALIZER]
                    if not new["metadata"]["finalizers"]:
                        del new["metadata"]["finalizers"]
                        self.store.write(crd_res.store_key, new, crd, "DELETED")
                        self.after_delete(crd_res, new)
                    else:
                        self.store.write(crd_res.store_key, new, crd, "MODIFIED")
            # ownerReference garbage collection (background propagation): only a deletion (an owner
            # may be gone) or a written object with owners can change its outcome.
            if full:  # the store may have been replaced: rebuild the index of owned objects
                st.owned = {(skey, key) for skey, bucket in st.data.items()
                            for key, o in bucket.items() if o["metadata"].get("ownerReferences")}
            if not st.owned or (not full and not any(
                    etype == "DELETED" or o["metadata"].get("ownerReferences")
                    for _, etype, o in dirty)):
                return
            uids = set()
            for bucket in self.store.data.values():
                for o in bucket.values():
                    uids.add(o["metadata"].get("uid"))
            for skey, bucket in list(self.store.data.items()):
                res = reg.storage_resource(skey)
                if res is None:
                    continue
                for key, o in list(bucket.items()):
                    refs = o["metadata"].get("ownerReferences") or []
                    if refs and not o["metadata"].get("deletionTimestamp") and \
                            all(isinstance(r, dict) and r.get("uid") not in uids for r in refs):
                        self.delete_locked(res, o, {})


# --------------------------------------------------------------------------------------------
# HTTP layer
# --------------------------------------------------------------------------------------------

class AbortConnection(Exception):
    """Close the socket without a (complete) response."""


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"
    sys_version = ""
    # TCP_NODELAY, as Go's net package sets on every connection: the headers and the body are
    # written separately, and with Nagle the body waited for the client's delayed ACK (40 ms).
    disable_nagle_algorithm = True

    def setup(self):
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.settimeout(10)
            try:
                self.connection.do_handshake()
            except (ssl.SSLError, OSError):
                self.close_connection = True
                raise AbortConnection()
            self.connection.settimeout(None)

    def handle(self):
        try:
            super().handle()
        except (ConnectionError, ssl.SSLError, socket.timeout, OSError):
            pass

    def log_message(self, fmt, *args):
        if self.server.api.args.verbose:
            sys.stderr.write("[fake-apiserver] %s %s\n" % (self.address_string(), fmt % args))

    def log_request(self, code="-", size="-"):
        pass  # one line per request is written by dispatch()

    @property
    def api(self):
        return self.server.api

    # -------------------------------------------------- body / responses
    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = b""
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise AbortConnection()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while True:
                        t = self.rfile.readline(65537)
                        if t in (b"\r\n", b"\n", b""):
                            break
                    return out
                out += self.rfile.read(size)
                self.rfile.readline(65537)
                if len(out) > 3 * 1024 * 1024:
                    raise APIError(413, "RequestEntityTooLarge", "the request is too large", {})
        n = self.headers.get("Content-Length")
        if n:
            n = int(n)
            if n > 3 * 1024 * 1024:
                self.close_connection = True
                raise APIError(413, "RequestEntityTooLarge", "the request is too large", {})
            return self.rfile.read(n)
        return b""

    def send_bytes(self, code, data, ctype="application/json", headers=()):
        self.resp_code = code
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_obj(self, code, obj, ctype="application/json", headers=(), pretty=False):
        self.send_bytes(code, dumps(obj, pretty), ctype, headers)

    def send_error_status(self, e):
        hdrs = list(e.headers)
        self.send_obj(e.code, e.status(), "application/json", hdrs)

    # -------------------------------------------------- verbs
    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_HEAD(self):
        self.dispatch("HEAD")

    def do_OPTIONS(self):
        self.dispatch("OPTIONS")

    def dispatch(self, method):
        t0 = time.time()
        self.resp_code = None
        req = None
        try:
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            path = urllib.parse.unquote(url.path)
            body = self.read_body()
            req = Req(method, path, query, self.headers, body)
            req.raw_target = self.path
            self._dispatch(req)
        except AbortConnection:
            self.close_connection = True
            self.resp_code = "aborted"
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except APIError as e:
            try:
                self.send_error_status(e)
            except OSError:
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # never let a bad request kill the server
            traceback.print_exc()
            try:
                self.send_error_status(err_internal("%s: %s" % (type(e).__name__, e)))
            except OSError:
                self.close_connection = True
        finally:
            elapsed = time.time() - t0
            if req is not None and getattr(req, "counted", False):
                self.api.count(req, self.resp_code, elapsed)
            if self.api.args.verbose:
                sys.stderr.write("[fake-apiserver] %s %s -> %s (%.1f ms)\n"
                                 % (method, self.path, self.resp_code, elapsed * 1000))
                sys.stderr.flush()

    def _dispatch(self, req):
        api = self.api
        path = req.path
        if path in ("/healthz", "/readyz", "/livez") or re.match(r"^/(healthz|readyz|livez)/", path):
            return self.send_bytes(200, b"ok", "text/plain; charset=utf-8")
        if path.startswith("/__admin/") or path == "/__admin":
            return self.handle_admin(req)
        auth = self.headers.get("Authorization") or ""
        tok = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        if not tok or not api.valid_token(tok):
            req.counted = True
            req.verb = "unauthorized"
            raise err_unauthorized()
        self.route(req)
        req.counted = True
        api.record_access(req)
        self.inject(req)
        if req.res is None:
            return self.nonresource(req)
        return self.resource(req)

    # -------------------------------------------------- faults
    def inject(self, req):
        api = self.api
        target = req.raw_target
        delay = 0.0
        fault = None
        with api.fault_lock:
            for l in api.latencies:
                if l["remaining"] != 0 and re.search(l["method"], req.method) and re.search(l["path"], target):
                    delay += l["delay_ms"] / 1000.0
                    if l["remaining"] > 0:
                        l["remaining"] -= 1
            for f in api.faults:
                if f["remaining"] != 0 and re.search(f["method"], req.method) and re.search(f["path"], target) \
                        and re.search(f.get("user_agent") or "", req.user_agent):
                    if f["remaining"] > 0:
                        f["remaining"] -= 1
                    f["hits"] += 1
                    fault = f
                    break
        if delay:
            time.sleep(delay)
        if fault is None:
            return
        if fault.get("after"):
            req.after_fault = fault
            return
        self.raise_fault(req, fault)

    def raise_fault(self, req, f):
        code = int(f.get("status", 500))
        if f.get("drop"):
            raise AbortConnection()
        msg = f.get("message")
        if code == 429:
            e = err_too_many(f.get("retry_after", 1))
        elif code == 401:
            e = err_unauthorized()
        elif code == 409:
            if req.res is not None and req.name:
                e = err_conflict(req.res, req.name, msg or OPTIMISTIC_LOCK_MSG)
            else:
                e = APIError(409, "Conflict", msg or "Operation cannot be fulfilled: " + OPTIMISTIC_LOCK_MSG, {})
        elif code == 500:
            e = err_internal(msg or "injected fault")
        elif code == 503:
            e = APIError(503, "ServiceUnavailable", msg or "the server is currently unable to handle the request", {},
                         headers=[("Retry-After", str(int(f.get("retry_after", 1))))])
        elif code == 504:
            e = APIError(504, "Timeout", msg or "the server was unable to return a response in the time allotted, "
                                                "but may still be processing the request", {})
        elif code == 404 and req.res is not None:
            e = err_not_found(req.res, req.name or "")
        elif code == 410:
            e = err_expired(msg or "too old resource version: 1 (%d)" % self.api.store.compacted)
        else:
            e = APIError(code, f.get("reason") or "Unknown", msg or "injected fault", {})
        if f.get("reason"):
            e.reason = f["reason"]
        raise e

    # -------------------------------------------------- routing
    def route(self, req):
        parts = [p for p in req.path.split("/") if p]
        api = self.api
        if not parts:
            return
        if parts[0] == "api":
            if len(parts) < 3:
                return
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis":
            if len(parts) < 4:
                return
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return
        if rest and rest[0] == "watch":
            req.watch = True
            rest = rest[1:]
            if not rest:
                raise err_path_not_found()
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and not (group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")):
            ns = rest[1]
            rest = rest[2:]
        if len(rest) > 3:
            raise err_path_not_found()
        res = api.registry.lookup(group, version, rest[0])
        if res is None:
            raise err_path_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if res.namespaced and ns is None and name is not None:
            raise err_path_not_found()
        if not res.namespaced and ns is not None:
            raise err_path_not_found()
        if sub is not None and not (sub == "status" and res.has_status):
            raise err_path_not_found()
        req.res, req.ns, req.name, req.sub = res, ns, name, sub
        if req.qbool("watch"):
            req.watch = True
        m = req.method
        if m == "GET":
            req.verb = "get" if name and not req.watch else ("watch" if req.watch else "list")
            if req.watch and name:
                # legacy /watch/.../name form: watch a single object
                req.query.setdefault("fieldSelector", ["metadata.name=%s" % name])
                req.name = None
        elif m == "POST":
            req.verb = "create"
        elif m == "PUT":
            req.verb = "update"
        elif m == "PATCH":
            req.verb = "patch"
        elif m == "DELETE":
            req.verb = "delete" if name else "deletecollection"
        else:
            req.verb = m.lower()

    def resource(self, req):
        api = self.api
        m = req.method
        fmt = parse_accept(self.headers.get("Accept"))
        pretty = req.qbool("pretty")
        if req.verb == "watch":
            w, err = api.op_watch(req, fmt)
            return self.stream_watch(w, err)
        if m == "GET":
            out = api.op_get(req, fmt) if req.name else api.op_list(req, fmt)
        elif m == "POST" and not req.name:
            out = api.op_create(req, fmt)
        elif m == "PUT" and req.name:
            out = api.op_update(req, fmt)
        elif m == "PATCH" and req.name:
            out = api.op_patch(req, fmt)
        elif m == "DELETE" and req.name:
            if req.sub:
                raise err_method_not_allowed()
            out = api.op_delete(req, fmt)
        elif m == "DELETE":
            out = api.op_deletecollection(req, fmt)
        else:
            raise err_method_not_allowed()
        code, body, f = out[0], out[1], out[2]
        warnings = out[3] if len(out) > 3 else []
        if getattr(req, "after_fault", None):
            self.raise_fault(req, req.after_fault)
        hdrs = [("Warning", '299 - %s' % json.dumps(w)) for w in warnings]
        self.send_obj(code, body, _ctype_for(f), hdrs, pretty)

    # -------------------------------------------------- watch streaming
    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def send_payloads(self, payloads):
        api = self.api
        cfg = api.chunking
        groups = []
        if cfg.get("coalesce"):
            i = 0
            while i < len(payloads):
                with api.rand_lock:
                    n = api.rand.randint(1, max(1, int(cfg.get("max_coalesce", 4))))
                groups.append(b"".join(payloads[i:i + n]))
                i += n
        else:
            groups = payloads
        for g in groups:
            if cfg.get("split") and len(g) > 1:
                with api.rand_lock:
                    k = api.rand.randint(1, min(4, len(g) - 1))
                    cuts = sorted(api.rand.sample(range(1, len(g)), k))
                prev = 0
                for c in cuts + [len(g)]:
                    self.write_chunk(g[prev:c])
                    prev = c
                    if cfg.get("split_delay_ms"):
                        time.sleep(cfg["split_delay_ms"] / 1000.0)
            else:
                self.write_chunk(g)

    def client_gone(self):
        import select
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return True
        if not r:
            return False
        if isinstance(self.connection, ssl.SSLSocket):
            return True
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def encode_event(self, w, etype, obj):
        res = w.res
        if w.fmt == "table":
            t = build_table(res, [obj], w.include_object, {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                            with_columns=not w.table_header_sent)
            w.table_header_sent = True
            o = t
        elif w.fmt == "partial":
            o = partial_metadata(res, obj)
        else:
            o = res.shared_view(obj)
        return dumps({"type": etype, "object": o}, False)

    def encode_bookmark(self, w, rv, initial_end):
        res = w.res
        md = {"resourceVersion": str(rv)}
        if initial_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        if w.fmt == "partial":
            o = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md}
        elif w.fmt == "table":
            o = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": md, "columnDefinitions": None, "rows": []}
        else:
            o = {"kind": res.kind, "apiVersion": res.api_version, "metadata": md}
        return dumps({"type": "BOOKMARK", "object": o}, False)

    def stream_watch(self, w, initial_error):
        api = self.api
        self.resp_code = 200
        self.send_response(200)
        self.send_header("Content-Type", _ctype_for(w.fmt) if w.fmt != "partial" else _ctype_for("partial"))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.end_headers()
        try:
            if initial_error is not None:
                self.write_chunk(dumps({"type": "ERROR", "object": initial_error}, False))
                self.wfile.write(b"0\r\n\r\n")
                return
            deadline = w.started + w.timeout
            next_bm = None
            last_alive_check = time.time()
            while True:
                interval = api.bookmark_interval
                now = time.time()
                if w.bookmarks and interval > 0 and next_bm is None:
                    next_bm = now + interval
                with w.cond:
                    while not w.items and not w.dropped and not api.shutting_down:
                        now = time.time()
                        wake = deadline
                        if next_bm is not None:
                            wake = min(wake, next_bm)
                        if now >= wake:
                            break
                        w.cond.wait(min(wake - now, 0.25))
                        if time.time() - last_alive_check > 0.5:
                            break
                    items = list(w.items)
                    w.items.clear()
                    dropped = w.dropped
                if dropped or api.shutting_down:
                    raise AbortConnection()
                if items and api.chunking.get("coalesce"):
                    time.sleep(0.005)
                    with w.cond:
                        items += list(w.items)
                        w.items.clear()
                if items:
                    payloads = []
                    for it in items:
                        if it[0] == "event":
                            payloads.append(self.encode_event(w, it[1], it[2]))
                        else:
                            if w.bookmarks:
                                payloads.append(self.encode_bookmark(w, it[1], it[2]))
                    if payloads:
                        self.send_payloads(payloads)
                        w.sent += len(payloads)
                now = time.time()
                if now - last_alive_check > 0.5:
                    last_alive_check = now
                    if self.client_gone():
                        self.close_connection = True
                        return
                if now >= deadline:
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if next_bm is not None and now >= next_bm:
                    with api.store.lock:
                        w.push_bookmark(api.store.rv)
                    next_bm = None
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            with api.store.lock:
                api.store.watchers.discard(w)

    # -------------------------------------------------- non-resource endpoints
    def nonresource(self, req):
        api = self.api
        path = req.path.rstrip("/") or "/"
        if req.method != "GET":
            raise err_method_not_allowed() if path in ("/api", "/apis", "/version") else err_path_not_found()
        req.verb = "get"
        parts = [p for p in path.split("/") if p]
        if path == "/version":
            return self.send_obj(200, SERVER_VERSION)
        if path == "/api":
            return self.send_obj(200, {"kind": "APIVersions", "versions": ["v1"],
                                       "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                                       "serverAddress": "127.0.0.1:%s" % api.port}]})
        if path == "/apis":
            return self.send_obj(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                       "groups": [self.api_group(g, vs) for g, vs in api.registry.groups().items() if g]})
        if len(parts) == 2 and parts[0] == "api":
            return self.send_obj(200, self.resource_list("", parts[1]))
        if len(parts) == 2 and parts[0] == "apis":
            groups = api.registry.groups()
            if parts[1] not in groups or not parts[1]:
                raise err_path_not_found()
            g = self.api_group(parts[1], groups[parts[1]])
            g.update({"kind": "APIGroup", "apiVersion": "v1"})
            return self.send_obj(200, g)
        if len(parts) == 3 and parts[0] == "apis":
            return self.send_obj(200, self.resource_list(parts[1], parts[2]))
        if path == "/openapi/v3":
            return self.send_obj(200, self.openapi_index())
        if path.startswith("/openapi/v3/"):
            gv = path[len("/openapi/v3/"):]
            doc = self.openapi_gv(gv)
            if doc is None:
                raise err_path_not_found()
            return self.send_obj(200, doc)
        raise err_path_not_found()   # includes /openapi/v2 (protobuf only on a real server)

    @staticmethod
    def api_group(g, versions):
        return {"name": g, "versions": [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in versions],
                "preferredVersion": {"groupVersion": "%s/%s" % (g, versions[0]), "version": versions[0]}}

    def resource_list(self, group, version):
        rs = [r for r in self.api.registry.all() if r.group == group and r.version == version]
        if not rs:
            raise err_path_not_found()
        out = []
        for r in sorted(rs, key=lambda r: r.plural):
            e = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
                 "verbs": r.verbs()}
            if r.short_names:
                e["shortNames"] = list(r.short_names)
            if r.categories:
                e["categories"] = list(r.categories)
            e["storageVersionHash"] = base64.b64encode(hashlib.sha256(("%s/%s/%s" % (group, version, r.kind)).encode()).digest()[:8]).decode()
            out.append(e)
            if r.has_status:
                out.append({"name": r.plural + "/status", "singularName": "", "namespaced": r.namespaced,
                            "kind": r.kind, "verbs": ["get", "patch", "update"]})
        gv = "%s/%s" % (group, version) if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}

    def openapi_gvs(self):
        gvs = collections.OrderedDict()
        for r in self.api.registry.all():
            key = "api/%s" % r.version if not r.group else "apis/%s/%s" % (r.group, r.version)
            gvs.setdefault(key, (r.group, r.version, []))[2].append(r)
        return gvs

    def openapi_gv(self, gv):
        gvs = self.openapi_gvs()
        if gv not in gvs:
            return None
        g, v, rs = gvs[gv]
        return openapi_v3_doc(rs, g, v)

    def openapi_index(self):
        paths = {}
        for key, (g, v, rs) in self.openapi_gvs().items():
            doc = openapi_v3_doc(rs, g, v)
            h = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:128].upper()
            paths[key] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (key, h)}
        return {"paths": paths}

    # -------------------------------------------------- admin API
    def handle_admin(self, req):
        api = self.api
        if api.admin_token:
            auth = self.headers.get("Authorization") or ""
            tok = auth[7:].strip() if auth.lower().startswith("bearer ") else self.headers.get("X-Admin-Token")
            if tok != api.admin_token:
                raise err_unauthorized()
        else:
            host = self.client_address[0] if self.client_address else ""
            if host not in ("127.0.0.1", "::1", "::ffff:127.0.0.1", "localhost"):
                raise APIError(403, "Forbidden", "admin API is only open on loopback without --admin-token", {})
        cmd = req.path[len("/__admin/"):].strip("/")
        body = {}
        if req.body and req.body.strip():
            try:
                body = json.loads(req.body.decode())
            except Exception as e:
                raise err_bad_request("admin body must be JSON: %s" % e)
            if not isinstance(body, dict):
                raise err_bad_request("admin body must be a JSON object")
        out = api.admin(cmd, req.method, body)
        self.send_obj(200, out, pretty=True)


# admin API implementation (kept on APIServer so tests can also call it in-process)
def _admin(self, cmd, method, body):
    st = self.store
    if cmd == "drop_watches":
        n = 0
        # A dropped watch leaves the store at once: its serving thread may take a while to notice,
        # and until then neither "watches" nor a second drop may count it as open.
        with st.lock:
            for w in list(st.watchers):
                if body.get("resource") and body["resource"] != w.res.plural:
                    continue
                w.drop()
                st.watchers.discard(w)
                n += 1
        return {"dropped": n}
    if cmd == "watches":
        with st.lock:
            return {"watches": [w.describe() for w in st.watchers]}
    if cmd == "chunking":
        for k in ("split", "coalesce"):
            if k in body:
                self.chunking[k] = bool(body[k])
        for k in ("split_delay_ms", "max_coalesce"):
            if k in body:
                self.chunking[k] = int(body[k])
        if "seed" in body:
            self.chunking["seed"] = int(body["seed"])
            with self.rand_lock:
                self.rand.seed(int(body["seed"]))
        return dict(self.chunking)
    if cmd == "compact":
        return {"compactedResourceVersion": st.compact()}
    if cmd == "history_limit":
        with st.lock:
            st.history_limit = max(1, int(body.get("limit", 1000)))
            while len(st.history) > st.history_limit:
                st.compacted = st.history.popleft().rv
            return {"limit": st.history_limit, "compactedResourceVersion": st.compacted}
    if cmd in ("faults", "latency"):
        lst = self.faults if cmd == "faults" else self.latencies
        if method == "GET":
            with self.fault_lock:
                return {cmd: json_copy(lst)}
        with self.fault_lock:
            self.fault_seq += 1
            item = {"id": self.fault_seq, "method": body.get("method") or ".*", "path": body.get("path") or ".*",
                    "remaining": int(body.get("count", 1 if cmd == "faults" else -1)), "hits": 0}
            if cmd == "faults":
                item["user_agent"] = body.get("user_agent") or ""
            for k in ("method", "path", "user_agent"):
                if k not in item:
                    continue
                try:
                    re.compile(item[k])
                except re.error as e:
                    raise err_bad_request("bad regex %s: %s" % (k, e))
            if item["method"] not in (".*",) and re.match(r"^[A-Z]+$", item["method"]):
                item["method"] = "^%s$" % item["method"]
            if cmd == "faults":
                item.update({"status": int(body.get("status", 500)), "retry_after": body.get("retry_after", 1),
                             "message": body.get("message"), "reason": body.get("reason"),
                             "after": bool(body.get("after")), "drop": bool(body.get("drop"))})
            else:
                item["delay_ms"] = float(body.get("delay_ms", 100))
            lst.append(item)
            return item
    if cmd in ("faults/clear", "latency/clear"):
        with self.fault_lock:
            (self.faults if cmd.startswith("faults") else self.latencies).clear()
        return {"cleared": True}
    if cmd == "lease_race":
        res = self.registry.lookup("coordination.k8s.io", "v1", "leases")
        with st.lock:
            old = st.get(res.store_key, body.get("namespace", "default"), body.get("name", ""))
            if old is None:
                raise err_not_found(res, body.get("name", ""))
            new = json_copy(old)
            ann = new["metadata"].setdefault("annotations", {})
            ann["fake-apiserver.test/race"] = str(int(ann.get("fake-apiserver.test/race", "0")) + 1)
            spec = new.setdefault("spec", {})
            if body.get("holderIdentity") is not None:
                if spec.get("holderIdentity") != body["holderIdentity"]:
                    spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
                    spec["acquireTime"] = fmt_micro()
                spec["holderIdentity"] = body["holderIdentity"]
                spec["renewTime"] = fmt_micro()
            if body.get("leaseDurationSeconds") is not None:
                spec["leaseDurationSeconds"] = int(body["leaseDurationSeconds"])
            st.write(res.store_key, new, old, "MODIFIED")
            return new
    if cmd == "bookmark":
        n = 0
        with st.lock:
            for w in list(st.watchers):
                if w.bookmarks:
                    w.push_bookmark(st.rv)
                    n += 1
            return {"watchers": n, "resourceVersion": str(st.rv)}
    if cmd == "bookmark_interval":
        self.bookmark_interval = float(body.get("seconds", 0))
        return {"seconds": self.bookmark_interval}
    if cmd == "counters":
        with self.stats_lock:
            c = dict(self.counters)
        out = {"total": c.get("total", 0), "byVerb": {}, "byResource": {}, "byVerbResource": {}}
        for k, v in c.items():
            if k.startswith("verb:"):
                out["byVerb"][k[5:]] = v
            elif k.startswith("resource:"):
                out["byResource"][k[9:]] = v
            elif k != "total":
                out["byVerbResource"][k] = v
        return out
    if cmd == "requests":
        with self.stats_lock:
            return {"requests": list(self.req_log)}
    if cmd == "list_snapshots":
        # the paged lists' snapshots: {"max": n} keeps at most n (0: none, every page takes the
        # slow path), {"clear": true} drops them
        with self.list_snapshots_lock:
            if body.get("clear"):
                self.list_snapshots.clear()
            if body.get("max") is not None:
                self.list_snapshots_max = max(0, int(body["max"]))
            while len(self.list_snapshots) > self.list_snapshots_max:
                self.list_snapshots.popitem(last=False)
            return {"cached": len(self.list_snapshots), "max": self.list_snapshots_max,
                    "hits": self.list_snapshot_hits, "misses": self.list_snapshot_misses}
    if cmd == "gc":
        return GC_STATS.snapshot()
    if cmd == "gc/reset":
        GC_STATS.reset()
        return GC_STATS.snapshot()
    if cmd == "counters/reset":
        with self.stats_lock:
            self.counters.clear()
            self.req_log.clear()
        return {"reset": True}
    if cmd == "rotate_token":
        new = body.get("token") or ("fake-" + uuid.uuid4().hex)
        with self.token_lock:
            self.tokens = ([new] + self.tokens) if body.get("keep_old") else [new]
        self.write_token_files()
        return {"token": new}
    if cmd == "add_token":
        with self.token_lock:
            self.tokens.append(body["token"])
        return {"tokens": len(self.tokens)}
    if cmd == "state":
        with st.lock:
            counts = {"%s/%s" % k if k[0] else k[1]: len(v) for k, v in st.data.items()}
            out = {"resourceVersion": str(st.rv), "compactedResourceVersion": str(st.compacted),
                   "historyLength": len(st.history), "objects": counts, "watches": len(st.watchers)}
            if body.get("dump"):
                out["dump"] = {("%s/%s" % k if k[0] else k[1]): list(v.values()) for k, v in st.data.items()}
            return out
    raise APIError(404, "NotFound", "unknown admin command %r" % cmd, {})


APIServer.admin = _admin


def _write_token_files(self):
    tok = self.tokens[0]
    if self.args.token_file:
        atomic_write(self.args.token_file, tok + "\n")
    if self.args.kubeconfig_out and self.port:
        atomic_write(self.args.kubeconfig_out, kubeconfig_text(self, tok))


APIServer.write_token_files = _write_token_files


def atomic_write(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def kubeconfig_text(api, token):
    cluster = {"server": "%s://127.0.0.1:%d" % (api.scheme, api.port)}
    if api.scheme == "https":
        if api.args.tls_ca or api.args.tls_cert:
            cluster["certificate-authority"] = os.path.abspath(api.args.tls_ca or api.args.tls_cert)
    cfg = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": "fake", "cluster": cluster}],
           "users": [{"name": "fake-user", "user": {"token": token}}],
           "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake-user", "namespace": "default"}}],
           "current-context": "fake", "preferences": {}}
    if yaml is not None:
        return yaml.safe_dump(cfg, default_flow_style=False, sort_keys=False)
    return json.dumps(cfg, indent=2)


def generate_self_signed(directory):
    import subprocess
    os.makedirs(directory, exist_ok=True)
    cert, key = os.path.join(directory, "apiserver.crt"), os.path.join(directory, "apiserver.key")
    if not (os.path.exists(cert) and os.path.exists(key)):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "3650", "-subj", "/CN=fake-kube-apiserver",
                        "-addext", "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


# --------------------------------------------------------------------------------------------
# --state-file: the stored objects survive a restart, as etcd makes them survive one
# --------------------------------------------------------------------------------------------

STATE_FORMAT = "fake-kube-apiserver-state/v1"


def save_state(api, path, hold_lock=False):
    """Writes every stored object, the current resourceVersion and the valid tokens to `path`
    (atomically). With hold_lock the store lock is kept: no write can happen after this snapshot,
    so no write is ever acknowledged and then lost (used at shutdown)."""
    st = api.store
    st.lock.acquire()
    try:
        with api.token_lock:
            tokens = list(api.tokens)
        doc = {"format": STATE_FORMAT, "resourceVersion": st.rv, "tokens": tokens,
               "buckets": [{"group": k[0], "resource": k[1], "objects": list(v.values())}
                           for k, v in st.data.items() if v]}
        text = json.dumps(doc, separators=(",", ":"))
        atomic_write(path, text)
        return st.rv
    finally:
        if not hold_lock:
            st.lock.release()


def load_state(api, path):
    """Replaces the bootstrap state by the saved one. resourceVersions continue upward from the
    saved one, and the watch history starts empty at it: a watch or a continue token from an
    older resourceVersion gets 410 Expired, as from a real server whose watch cache was rebuilt."""
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise SystemExit("%s is not a %s file" % (path, STATE_FORMAT))
    rv = doc.get("resourceVersion")
    if not isinstance(rv, int) or rv < 1:
        raise SystemExit("%s: bad resourceVersion %r" % (path, rv))
    st = api.store
    crd_key = ("apiextensions.k8s.io", "customresourcedefinitions")
    with st.lock:
        data = {}
        for b in doc.get("buckets") or []:
            bucket = data.setdefault((b["group"], b["resource"]), {})
            for o in b["objects"]:
                md = o["metadata"]
                if int(md["resourceVersion"]) > rv:
                    raise SystemExit("%s: %s/%s has resourceVersion %s > the saved %d" % (
                        path, b["resource"], md["name"], md["resourceVersion"], rv))
                bucket[(md.get("namespace", "") or "", md["name"])] = o
        st.data = data
        st.rv = rv
        st.history.clear()
        with api.list_snapshots_lock:
            api.list_snapshots.clear()
        st.compacted = rv
        with api.registry.lock:
            api.registry.custom.clear()
        for crd in data.get(crd_key, {}).values():
            api.registry.set_crd(crd)
    if doc.get("tokens") and not api.args.token:
        with api.token_lock:
            api.tokens = list(doc["tokens"])
    # CRDs named by --crd that the saved state lacks are installed now (at new resourceVersions).
    crd_res = api.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    for p in api.args.crd or []:
        with open(p) as f:
            for d in load_yaml_all(f.read()):
                if d.get("kind") == "CustomResourceDefinition" and \
                        st.get(crd_key, "", d["metadata"]["name"]) is None:
                    with st.lock:
                        api.system_create(crd_res, d)
    return rv



class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, handler, api, ssl_ctx=None):
        self.api = api
        self.ssl_ctx = ssl_ctx
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        if self.ssl_ctx is not None:
            sock = self.ssl_ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        if self.api.args.verbose:
            traceback.print_exc()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--kubeconfig-out")
    p.add_argument("--token", action="append", help="valid bearer token (repeatable); default: a random one")
    p.add_argument("--token-file", help="the current token is written here (and rewritten on rotate_token)")
    p.add_argument("--admin-token", help="required for /__admin/ if set; otherwise admin is open on loopback")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--tls-ca", help="CA file written into the kubeconfig (default: the --tls-cert itself)")
    p.add_argument("--tls-auto", metavar="DIR",
                   help="generate a self-signed certificate for 127.0.0.1/localhost into DIR (needs the openssl "
                        "CLI) and serve HTTPS; kubectl only sends kubeconfig credentials over TLS")
    p.add_argument("--history-size", type=int, default=1000, help="events kept for watch replay")
    p.add_argument("--bookmark-interval", type=float, default=0.0,
                   help="seconds between BOOKMARKs on watches that allow them (0 = only on demand)")
    p.add_argument("--min-request-timeout", type=float, default=1800.0)
    p.add_argument("--too-large-wait", type=float, default=3.0,
                   help="how long a request with a future resourceVersion waits before 504")
    p.add_argument("--crd", action="append", help="YAML file of CRDs to install at start (repeatable)")
    p.add_argument("--state-file", metavar="PATH",
                   help="keep the stored objects and resourceVersion across restarts: loaded at start if the file "
                        "exists, saved every --state-save-interval seconds and on SIGTERM/SIGINT")
    p.add_argument("--state-save-interval", type=float, default=1.0,
                   help="seconds between periodic saves of --state-file (0 = only at shutdown)")
    p.add_argument("--access-log", metavar="FILE",
                   default=os.environ.get("KUBE_APISERVER_ACCESS_LOG") or None,
                   help="append one JSON line per resource request (verb, group, resource, "
                        "subresource, namespaced, userAgent) to FILE, e.g. to check RBAC against "
                        "what a client really asks (default: $KUBE_APISERVER_ACCESS_LOG)")
    p.add_argument("--gc-freeze-interval", type=float, default=1.0, metavar="SECONDS",
                   help="every SECONDS, gc.freeze() what the cyclic collector tracks (0: never): its full "
                        "collections otherwise walk the whole store under the GIL (1.9-4.4 s each with "
                        "100,000 SlurmJobs stored)")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)

    if args.tls_auto:
        args.tls_cert, args.tls_key = generate_self_signed(args.tls_auto)
    api = APIServer(args)
    if args.state_file and os.path.exists(args.state_file):
        loaded = load_state(api, args.state_file)
        if args.verbose:
            sys.stderr.write("[fake-apiserver] state loaded from %s at resourceVersion %d\n" % (
                args.state_file, loaded))
    ctx = None
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
    srv = Server((args.host, args.port), Handler, api, ctx)
    api.port = srv.server_address[1]

    GC_STATS.install()

    def ticker():
        saved_rv, last_save = None, time.time()
        last_freeze = time.time()
        while not api.shutting_down:
            time.sleep(0.1)
            try:
                api.tick()
                if args.gc_freeze_interval > 0 and time.time() - last_freeze >= args.gc_freeze_interval:
                    last_freeze = time.time()
                    GC_STATS.freeze()
                if args.state_file and args.state_save_interval > 0 and \
                        time.time() - last_save >= args.state_save_interval and api.store.rv != saved_rv:
                    last_save = time.time()
                    if not api.shutting_down:
                        saved_rv = save_state(api, args.state_file)
            except Exception:
                traceback.print_exc()
    threading.Thread(target=ticker, daemon=True, name="controllers").start()

    def stop(signum, frame):
        api.shutting_down = True
        threading.Thread(target=srv.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    api.write_token_files()
    if args.port_file:
        atomic_write(args.port_file, "%d\n" % api.port)
    if args.verbose:
        sys.stderr.write("[fake-apiserver] listening on %s://%s:%d\n" % (api.scheme, args.host, api.port))
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        api.shutting_down = True
        if args.state_file:
            # The store lock stays held: a request still running cannot write after the snapshot,
            # so nothing acknowledged is lost; its client sees the connection close at exit.
            saved = save_state(api, args.state_file, hold_lock=True)
            if args.verbose:
                sys.stderr.write("[fake-apiserver] state saved to %s at resourceVersion %d\n" % (
                    args.state_file, saved))
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
