"""A minimal gRPC health client (grpc.health.v1.Health/Check) over cleartext HTTP/2, standard
library only, for the load harness: the operator serves readiness as a gRPC health service and
this machine's Python has no grpc package.

It speaks just enough HTTP/2 (RFC 9113) for one unary call: the client preface, an empty SETTINGS,
one HEADERS frame (HPACK literals without Huffman coding), one DATA frame, then it reads frames
until the response DATA (or the trailers) of stream 1 arrives, acknowledging SETTINGS and PING.
Response headers are not decoded: the answer is the HealthCheckResponse message in the DATA frame.
"""

import socket
import struct

SERVING = 1
NOT_SERVING = 2

_DATA, _HEADERS, _RST_STREAM, _SETTINGS, _PING, _GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
_END_STREAM, _ACK, _END_HEADERS = 0x1, 0x1, 0x4


def _frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(
        ">I", stream) + payload


def _hpack_literal(name, value):
    """Literal header field without indexing, new name, no Huffman (RFC 7541 6.2.2)."""
    def string(s):
        b = s.encode()
        if len(b) < 127:
            return bytes([len(b)]) + b
        n, out = len(b) - 127, bytearray([127])
        while n >= 128:
            out.append((n % 128) + 128)
            n //= 128
        out.append(n)
        return bytes(out) + b
    return b"\x00" + string(name) + string(value)


def _read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


def check(port, service="", host="127.0.0.1", timeout=2.0):
    """Returns the health status (1 SERVING, 2 NOT_SERVING, 0 UNKNOWN, 3 SERVICE_UNKNOWN) of
    `service`, or None when no answer came (refused, reset, error trailers)."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return None
    try:
        sock.settimeout(timeout)
        headers = b"".join(_hpack_literal(k, v) for k, v in (
            (":method", "POST"), (":scheme", "http"), (":path", "/grpc.health.v1.Health/Check"),
            (":authority", "%s:%d" % (host, port)), ("content-type", "application/grpc"),
            ("te", "trailers")))
        svc = service.encode()
        msg = (b"\x0a" + bytes([len(svc)]) + svc) if svc else b""
        data = b"\x00" + struct.pack(">I", len(msg)) + msg
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + _frame(_SETTINGS, 0, 0) +
                     _frame(_HEADERS, _END_HEADERS, 1, headers) +
                     _frame(_DATA, _END_STREAM, 1, data))
        body = b""
        while True:
            head = _read_exact(sock, 9)
            length = int.from_bytes(head[:3], "big")
            ftype, flags = head[3], head[4]
            stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
            payload = _read_exact(sock, length) if length else b""
            if ftype == _SETTINGS and not flags & _ACK:
                sock.sendall(_frame(_SETTINGS, _ACK, 0))
            elif ftype == _PING and not flags & _ACK:
                sock.sendall(_frame(_PING, _ACK, 0, payload))
            elif ftype in (_RST_STREAM, _GOAWAY) and stream in (0, 1):
                if ftype == _GOAWAY and body:
                    break
                return None
            elif ftype == _DATA and stream == 1:
                body += payload
                if len(body) >= 5 and len(body) >= 5 + int.from_bytes(body[1:5], "big"):
                    break
                if flags & _END_STREAM:
                    break
            elif ftype == _HEADERS and stream == 1 and flags & _END_STREAM:
                break  # trailers only: an error status, no message
        if len(body) < 5:
            return None
        msg = body[5:5 + int.from_bytes(body[1:5], "big")]
        # HealthCheckResponse { ServingStatus status = 1; } -> 0x08 <varint>
        if len(msg) >= 2 and msg[0] == 0x08:
            return msg[1]
        return 0 if not msg else None
    except (OSError, ConnectionError, ValueError):
        return None
    finally:
        try:
            sock.close()
        except OSError:
            pass
