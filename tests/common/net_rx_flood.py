"""A UDP flood on loopback for tests/blame_kernel.rs (run inside the test's
network namespace, whose loopback has a tc ingress qdisc with u32 filters
and its receive processing steered to the probe's CPU).

Each burst ends with a marker datagram, and the time until the marker is
back on our own socket is the burst's receive work. Until one datagram's
work is at least 14 us, filters are added, at most 31,000 (a softirq
pass of 300 datagrams, net.core.netdev_budget, then lasts over 4 ms on
any machine); then "ready" is printed, and each burst is sized to about
4 ms, one every 10 ms.

usage: net_rx_flood.py FILTERS  (the number of filters already there)
"""
import socket
import subprocess
import sys
import time

PER_DATAGRAM = 14e-6
BURST = 0.004
# Filter i matches destination port 1000 + i: below the ephemeral ports
# (32768 on), so none matches the receiving socket's.
MOST_FILTERS = 31000
filters = int(sys.argv[1])


def add_filters(k):
    global filters
    lines = "".join(
        "filter add dev lo parent ffff: protocol ip prio 1 u32 "
        "match ip dport %d 0xffff classid ffff:1\n" % (1001 + filters + i)
        for i in range(k))
    subprocess.run(["tc", "-batch", "-"], input=lines.encode(), check=True)
    filters += k


rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.setsockopt(socket.SOL_SOCKET, 33, 1 << 23)  # SO_RCVBUFFORCE
rx.bind(("127.0.0.1", 0))
rx.settimeout(0.2)
to = rx.getsockname()
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
msg = b"x" * 64
n = 200
bursts = 0
ready = False
due = time.monotonic()
while True:
    start = time.monotonic()
    for _ in range(n):
        tx.sendto(msg, to)
    # Numbered: a marker left over from a burst that timed out ends no
    # later one.
    bursts += 1
    marker = b"end %d" % bursts
    tx.sendto(marker, to)
    try:
        while rx.recv(2048) != marker:
            pass
        took = time.monotonic() - start
        per = took / (n + 1)
        if per < PER_DATAGRAM and filters < MOST_FILTERS:
            more = int(filters * (1.1 * PER_DATAGRAM / per - 1)) + 100
            add_filters(min(filters, more, MOST_FILTERS - filters))
        else:
            if not ready:
                print("ready: %.1f us per datagram, %d filters" % (per * 1e6, filters), flush=True)
                ready = True
            # At most 280: one softirq pass takes the whole burst.
            n = max(20, min(280, int(n * (0.5 + 0.5 * BURST / took))))
    except socket.timeout:
        pass
    due += 0.01
    time.sleep(max(0.0, due - time.monotonic()))
