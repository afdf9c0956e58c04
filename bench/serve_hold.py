#!/usr/bin/env python3
"""Holds one HTTP/1.1 test open on a running `stackbench serve`, so that a
client other than stackbench (wrk, in bench/http.sh) can drive stackbench's
own responder.

The responder opens data listeners only when a driver asks for a test over
its control connection (JSON lines, crates/engine/src/control.rs): this
script is that driver's control half and nothing else. It says hello,
starts an RR test with protocol http1 (the responder then answers `GET /N`
with a body of N bytes, as nginx serves a file named N), prints
`port=PORT` of the test's listener on stdout, and waits. On SIGTERM or
SIGINT (or after LIMIT seconds) it stops the test and prints the
responder's own counters for it as key=value lines (`srv_transactions`,
`srv_connections`, `srv_errors`, ...): a count to check the client's
against. The control connection closing also ends the test, so a killed
script leaves nothing behind on the responder.

Usage:
    serve_hold.py HOST:PORT REQUEST_BYTES RESPONSE_BYTES CLIENTS LIMIT_SECONDS

Exit status 0 after a clean stop, 1 when the responder refused or the
control connection failed (one line on stderr says why), 2 bad arguments.
Standard library only.
"""

import json
import signal
import socket
import sys

# The control protocol version this script speaks; a responder of another
# version refuses it in one line (its hello reply), which is printed.
PROTOCOL_VERSION = 5


class HoldError(Exception):
    """The responder refused or the connection failed; the message says why."""


def exchange(stream, message):
    """Sends one control message and reads the reply."""
    stream.write((json.dumps(message) + "\n").encode())
    stream.flush()
    line = stream.readline()
    if not line:
        raise HoldError("the responder closed the control connection")
    reply = json.loads(line)
    if reply.get("type") == "error":
        raise HoldError("the responder refused: %s" % reply.get("message"))
    return reply


def start_message(request_bytes, response_bytes, clients):
    """An RR test of protocol http1 over tcp on epoll, TCP_NODELAY on the
    responder's sockets (nginx sets it on keep-alive connections: its
    tcp_nodelay, on by default), other socket options the defaults."""
    spec = {
        "kind": "RR",
        "request_bytes": request_bytes,
        "response_bytes": response_bytes,
        "socket": {"nodelay": True, "waitall": False, "quickack": False,
                   "sndbuf_bytes": None, "rcvbuf_bytes": None, "crr_close": "server"},
        "spin": False,
        "io": "epoll",
        "protocol": "http1",
    }
    return {"type": "start", "spec": spec, "transport": "tcp", "clients": clients, "ports": 1}


def hold(address, request_bytes, response_bytes, clients, limit):
    host, _, port = address.rpartition(":")
    with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as conn:
        stream = conn.makefile("rwb")
        hello = exchange(stream, {"type": "hello", "version": PROTOCOL_VERSION,
                                  "software": "bench/serve_hold.py"})
        if hello.get("version") != PROTOCOL_VERSION:
            raise HoldError("the responder speaks control protocol %s, this script %d: "
                            "update bench/serve_hold.py" % (hello.get("version"),
                                                            PROTOCOL_VERSION))
        ready = exchange(stream, start_message(request_bytes, response_bytes, clients))
        endpoint = ready["endpoints"][0]["inet"]
        print("port=%s" % endpoint.rpartition(":")[2], flush=True)
        # Wait for the caller's signal (or the time bound), then stop.
        wanted = {signal.SIGTERM, signal.SIGINT, signal.SIGALRM}
        signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
        signal.alarm(limit)
        signal.sigwait(wanted)
        conn.settimeout(30)
        stopped = exchange(stream, {"type": "stop", "test_id": ready["test_id"]})
    for key, value in stopped["stats"].items():
        if isinstance(value, int):
            print("srv_%s=%d" % (key, value))


def main(argv):
    try:
        address, request_bytes, response_bytes, clients, limit = argv
        numbers = [int(v) for v in (request_bytes, response_bytes, clients, limit)]
        if ":" not in address or min(numbers) < 1:
            raise ValueError
    except ValueError:
        print("usage: serve_hold.py HOST:PORT REQUEST_BYTES RESPONSE_BYTES CLIENTS "
              "LIMIT_SECONDS (numbers at least 1)", file=sys.stderr)
        return 2
    try:
        hold(address, *numbers)
    except (HoldError, OSError, ValueError, KeyError, IndexError) as err:
        print("serve_hold.py: %s: %s" % (address, err), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
