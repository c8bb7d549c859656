# A small Python HTTP service for the end-to-end tests and bench/cost_gate.sh
# (CPython, a thread per connection, as users run http.server):
#   python3 python_server.py PORT ROUNDS [--two-writes] [--fork] [--prefork N]
# Each request runs ROUNDS rounds of an integer loop, so a test plants an exact
# regression. The response leaves in one write, as a framework's does;
# --two-writes keeps http.server's unbuffered default (headers, then body),
# which meets Nagle's algorithm and delayed ACKs. --fork serves each connection
# in a forked child (ForkingHTTPServer); --prefork N forks N workers that share
# the listening socket, as gunicorn's pre-fork model does.
import os
import socketserver
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

PORT = int(sys.argv[1])
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 0
FLAGS = sys.argv[3:]
TWO_WRITES = "--two-writes" in FLAGS
FORK = "--fork" in FLAGS
PREFORK = int(FLAGS[FLAGS.index("--prefork") + 1]) if "--prefork" in FLAGS else 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 0 if TWO_WRITES else 65536

    def do_GET(self):
        if self.path != "/health":
            x = 0
            for i in range(ROUNDS):
                x = (x * 31 + i) % 1000003
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


# socketserver wakes every poll_interval (0.5 s by default) when idle; a wake
# is counted work, and how many fall among the counted requests depends on
# the machine's speed under Valgrind (a timer, docs/cost.md). The test servers
# wake only for requests.
IDLE_WAKE = 3600

if PREFORK:
    server = HTTPServer(("127.0.0.1", PORT), Handler)
    workers = []
    for _ in range(PREFORK):
        pid = os.fork()
        if pid == 0:
            server.serve_forever(poll_interval=IDLE_WAKE)
            os._exit(0)
        workers.append(pid)
    for pid in workers:
        os.waitpid(pid, 0)
else:
    # http.server has no ForkingHTTPServer before Python 3.12: its definition.
    class ForkingHTTPServer(socketserver.ForkingMixIn, HTTPServer):
        daemon_threads = True

    (ForkingHTTPServer if FORK else ThreadingHTTPServer)(("127.0.0.1", PORT), Handler).serve_forever(
        poll_interval=IDLE_WAKE
    )
