#!/usr/bin/env python3
"""The HTTP attacks of docs/perf/server.md ("The HTTP layer under attack"),
each against a fresh volt-serve on a tiny plan, measured: what the client
got, how long /health then took, the server's resident memory before and
after, and for SIGTERM how long the process took to exit.

    tests/bench/server/attacks.py BUILD_DIR [PLAN]

PLAN defaults to a qwen3-moe `tiny` plan written into a temporary folder.
Prints a Markdown table. Not a test: tests/e2e/server/test_http.py
(AttackTest, ShutdownTest) asserts the limits; this script gives the
numbers.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Server:
    def __init__(self, bin_dir, plan, *flags):
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "volt-serve"), plan, "--host", "127.0.0.1", "--port", "0",
             "--no-access-log", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.port = None
        for line in self.proc.stdout:
            if "listening on http://" in line:
                self.port = int(line.rsplit(":", 1)[1].split()[0].strip("/"))
                break
        deadline = time.time() + 60
        while time.time() < deadline and self.health()[0] != 200:
            time.sleep(0.1)

    def health(self):
        start = time.time()
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            reply = s.recv(4096)
            s.close()
            status = int(reply.split(b" ")[1]) if reply else None
        except OSError:
            status = None
        return status, (time.time() - start) * 1000

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def status_of(reply):
    try:
        return reply.split(b" ", 2)[1].decode()
    except IndexError:
        return "closed"


def trickle(srv):
    socks = []
    for _ in range(330):
        c = socket.create_connection(("127.0.0.1", srv.port))
        c.sendall(b"GET /health HTTP/1.1\r\nX-Slow: ")
        socks.append(c)
    status, ms = srv.health()
    got = {}
    for c in socks:
        c.settimeout(15)
        try:
            r = status_of(c.recv(4096))
        except OSError:
            r = "closed"
        got[r] = got.get(r, 0) + 1
        c.close()
    return "330 connections trickling headers: /health %s in %.1f ms meanwhile; each got %s" % (
        status, ms, ", ".join("%s x %d" % kv for kv in sorted(got.items())))


def huge_headers(srv):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"GET /health HTTP/1.1\r\n")
    sent = 0
    try:
        while sent < 52 << 20:
            s.sendall(b"X-Pad: " + b"a" * 1000 + b"\r\n")
            sent += 1009
    except OSError:
        pass
    try:
        r = status_of(s.recv(4096))
    except OSError:
        r = "reset"
    s.close()
    return "52 MB of headers: %s after %.2f MB sent" % (r, sent / 1e6)


def chunked_body(srv):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"
    sent = 0
    try:
        while sent < 400 << 20:
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    try:
        r = status_of(s.recv(4096))
    except OSError:
        r = "reset"
    s.close()
    return "400 MB chunked body: %s after %.1f MB sent" % (r, sent / 1e6)


def pipelined(srv):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n"
              b"GET /load HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    s.close()
    return "two pipelined requests in one packet: %d responses, in order: %s" % (
        out.count(b"HTTP/1.1 200"), out.find(b'"version"') < out.find(b'"server_load"'))


def long_field(srv):
    body = json.dumps({"prompt": "Hi", "max_tokens": 1, "x" * (8 << 20): 1}).encode()
    start = time.time()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: "
              + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    s.close()
    return "an 8 MB unknown field name: %s in %.0f ms, %d bytes of response" % (
        status_of(out), (time.time() - start) * 1000, len(out))


def text_plain(srv):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    body = b'{"prompt": "Hi", "max_tokens": 1}'
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: "
              + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    r = status_of(s.recv(4096))
    s.close()
    return "POST with Content-Type text/plain: %s" % r


def sigterm(bin_dir, plan):
    srv = Server(bin_dir, plan, "--shutdown-grace-period", "2")
    idle = []
    for _ in range(8):
        c = socket.create_connection(("127.0.0.1", srv.port))
        c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        c.recv(4096)
        idle.append(c)
    slow = []
    for _ in range(4):
        c = socket.create_connection(("127.0.0.1", srv.port))
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        body = json.dumps({"prompt": "Hello", "max_tokens": 1500, "n": 8, "stream": True,
                           "ignore_eos": True}).encode()
        c.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        slow.append(c)
    time.sleep(0.5)
    start = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    code = srv.proc.wait(60)
    elapsed = time.time() - start
    for c in idle + slow:
        c.close()
    return ("SIGTERM, grace 2 s, 8 idle keep-alives and 4 streams of 8 x 1,500 tokens nobody "
            "reads: exit %d after %.2f s" % (code, elapsed))


def main():
    bin_dir = os.path.join(sys.argv[1], "bin")
    if len(sys.argv) > 2:
        plan = sys.argv[2]
    else:
        work = tempfile.mkdtemp()
        subprocess.run([os.path.join(bin_dir, "volt-mkmodel"), "--family", "qwen3-moe", "-o",
                        os.path.join(work, "model")], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(work, "spec.yaml"), "w") as f:
            f.write("model: model\ntarget: cpu\nmax_num_seqs: 32\nmax_num_batched_tokens: 256\n")
        plan = os.path.join(work, "tiny.vplan")
        subprocess.run([os.path.join(bin_dir, "voltc"), "compile", os.path.join(work, "spec.yaml"),
                        "-o", plan], check=True, stdout=subprocess.DEVNULL)
    print("| attack | what happened | /health after | RSS before → after (MB) |")
    print("|---|---|---|---|")
    for attack in [trickle, huge_headers, chunked_body, pipelined, long_field, text_plain]:
        # The long field must reach the JSON reader: a body limit above it
        # (the others keep the default 8 MiB).
        flags = ["--max-body-bytes", str(64 << 20)] if attack is long_field else []
        srv = Server(bin_dir, plan, "--header-timeout", "2", *flags)
        before = rss_mb(srv.proc.pid)
        what = attack(srv)
        status, ms = srv.health()
        after = rss_mb(srv.proc.pid)
        srv.stop()
        print("| %s | %s | %s in %.1f ms | %.0f → %.0f |" % (
            attack.__name__, what, status, ms, before, after))
    print("| sigterm | %s | | |" % sigterm(bin_dir, plan))


if __name__ == "__main__":
    main()
