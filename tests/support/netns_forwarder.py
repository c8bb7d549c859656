#!/usr/bin/env python3
"""A docker-proxy stand-in for tests: accepts on this network namespace and
relays each connection to a port inside another one (that of -netns-pid).

Its arguments mirror docker-proxy's (-host-ip, -host-port, -container-ip,
-container-port), which is what perfgate reads to find the container's port.
-host-port 0 takes any free port, written to -port-file once listening.
"""
import ctypes
import os
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def arg(name):
    return sys.argv[sys.argv.index(name) + 1]


host_ip, host_port = arg("-host-ip"), int(arg("-host-port"))
inner_ip, inner_port = arg("-container-ip"), int(arg("-container-port"))
own_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
inner_ns = os.open(f"/proc/{arg('-netns-pid')}/ns/net", os.O_RDONLY)
ns_lock = threading.Lock()


def connect_inside():
    # A socket belongs to the namespace its creator was in: switch this thread
    # over just to create it, then back.
    with ns_lock:
        if libc.setns(inner_ns, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
        try:
            s = socket.socket()
        finally:
            libc.setns(own_ns, CLONE_NEWNET)
    s.connect((inner_ip, inner_port))
    return s


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(client):
    try:
        inner = connect_inside()
    except OSError:
        client.close()
        return
    threading.Thread(target=pump, args=(client, inner), daemon=True).start()
    pump(inner, client)
    client.close()
    inner.close()


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((host_ip, host_port))
listener.listen(128)
port_file = arg("-port-file")
with open(port_file + ".tmp", "w") as f:
    f.write(f"{listener.getsockname()[1]}\n")
os.rename(port_file + ".tmp", port_file)
while True:
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
