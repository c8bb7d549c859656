# A service that answers its health check, and answers everything else
# normally until it runs under Valgrind (the cost phase), where it never
# finishes an answer:
#   python3 stalling_server.py PORT MODE
# MODE "headers": a status line, then a header byte every 0.2 s (slowloris);
# "continue": "100 Continue" every 0.2 s, never a final status; "chunks": a
# chunked body, one byte-chunk every 0.1 s, never the last chunk.
import os
import socket
import sys
import threading
import time

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"
COUNTED = "vgpreload" in os.environ.get("LD_PRELOAD", "")


def stall(conn, mode):
    if mode == "continue":
        while True:
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            time.sleep(0.2)
    if mode == "chunks":
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while True:
            conn.sendall(b"1\r\nX\r\n")
            time.sleep(0.1)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    while True:
        conn.sendall(b"X")
        time.sleep(0.2)


def serve(conn, mode):
    with conn:
        pending = b""
        try:
            while True:
                while b"\r\n\r\n" not in pending:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    pending += chunk
                request, pending = pending.split(b"\r\n\r\n", 1)
                if COUNTED and not request.startswith(b"GET /health "):
                    stall(conn, mode)
                conn.sendall(OK)
        except OSError:
            return


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen(64)
while True:
    client, _ = listener.accept()
    threading.Thread(target=serve, args=(client, sys.argv[2]), daemon=True).start()
