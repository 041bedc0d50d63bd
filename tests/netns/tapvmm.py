#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Test that a guest behind a real tap device is filtered: play the VMM's part on a tap.

Attaches to an existing tap (ip tuntap add dev tc mode tap) with TUNSETIFF(IFF_TAP|IFF_NO_PI),
writes one Ethernet frame built with scapy into the fd, as a guest would, then reads what the host
sends toward the guest for --timeout seconds. While waiting it answers ARP requests for the address
it sent from, as a guest kernel would, so a reply to a (possibly spoofed) source can come back.

  tapvmm.py --dev tc --guest-mac M --guest-ip A --gw-mac G udp DST DPORT [--src S] [--payload P]
      exit 0 and print "reply udp ..." when the echo (same payload, from DST:DPORT) is read back.
  tapvmm.py --dev tc --guest-mac M --guest-ip A --gw-mac G arp TARGET
      exit 0 and print "reply arp TARGET is-at MAC" when the host answers.
  tapvmm.py --dev tc --guest-mac M --guest-ip A --gw-mac G dns-gso RESOLVER NAME... [--hide-in-opt]
      write the queries as one UDP GSO write (a virtio-net header with gso_type UDP_L4); send only.
Exit 1 when nothing matching came back, 2 on a usage or setup error.
Needs Debian's scapy: run it as /usr/bin/python3.
"""
import fcntl
import os
import random
import select
import socket
import struct
import sys
import time

from tfnet import arg, quiet_scapy, run

quiet_scapy()
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import ARP, Dot1Q, Ether  # noqa: E402

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
IFF_VNET_HDR = 0x4000
VIRTIO_NET_HDR_F_NEEDS_CSUM = 1
VIRTIO_NET_HDR_GSO_UDP_L4 = 5


def tap_open(dev, vnet_hdr=False):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    ifr = struct.pack("16sH22x", dev.encode(), IFF_TAP | IFF_NO_PI | (IFF_VNET_HDR if vnet_hdr else 0))
    fcntl.ioctl(fd, TUNSETIFF, ifr)
    return fd


def dns_query(txid, name):
    labels = b"".join(bytes([len(label)]) + label.encode() for label in name.split("."))
    return struct.pack("!HHHHHH", txid, 0x0100, 1, 0, 0, 0) + labels + b"\0" + struct.pack("!HH", 1, 1)


def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def dns_opt_hiding(allowed, hidden):
    """
    One query for ALLOWED whose EDNS0 OPT record runs to the end of the
    message and holds, in one option's data, a complete query for HIDDEN at
    an offset that is a multiple of the segment size returned: read whole it
    is one allowed query, cut into segments its last one is the hidden query.
    """
    head = dns_query(0x1000, allowed)
    head = head[:10] + struct.pack("!H", 1) + head[12:]  # arcount 1: the OPT record
    inner = dns_query(0x2000, hidden)
    seg = max(len(head) + 11 + 4, len(inner))
    rdlen = 2 * seg - len(head) - 11 - (seg - len(inner))
    opt = b"\0" + struct.pack("!HHIH", 41, 1232, 0, rdlen) + struct.pack("!HH", 65001, rdlen - 4)
    payload = (head + opt).ljust(seg, b"\0") + inner
    assert len(payload) == len(head) + 11 + rdlen
    return payload, seg


def cmd_dns_gso(fd, a):
    """
    One UDP segmentation offload write, as a virtio-net guest makes it: a
    virtio_net_hdr asking the host to cut the payload into gso_size datagrams.
    Each name's query becomes one datagram to the resolver; with --hide-in-opt
    the first name's query hides the second's in its OPT record instead
    (dns_opt_hiding, gso_size chosen to match). Send only.
    """
    seg = a.gso_size
    if a.hide_in_opt:
        payload, seg = dns_opt_hiding(a.names[0], a.names[1])
    else:
        payload = b"".join(dns_query(0x1000 + i, n).ljust(seg, b"\0") for i, n in enumerate(a.names))
        payload = payload.rstrip(b"\0") if len(a.names) == 1 else payload
    src, dst = socket.inet_aton(a.guest_ip), socket.inet_aton(a.resolver)
    ulen = 8 + len(payload)
    # With NEEDS_CSUM the UDP checksum field holds the pseudo-header sum only.
    udp = struct.pack("!HHHH", a.sport, 53, ulen, csum16(src + dst + struct.pack("!BBH", 0, 17, ulen)))
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 1, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", 0xFFFF - csum16(ip)) + ip[12:]
    eth = bytes.fromhex(a.gw_mac.replace(":", "")) + bytes.fromhex(a.guest_mac.replace(":", "")) + b"\x08\x00"
    gso = len(a.names) > 1
    vh = struct.pack("<BBHHHH", VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_UDP_L4 if gso else 0,
                     14 + 20 + 8, seg if gso else 0, 14 + 20, 6)
    n = os.write(fd, vh + eth + ip + udp + payload)
    print(f"wrote {n} bytes: {len(a.names)} quer{'ies' if gso else 'y'}{' as one GSO write' if gso else ''}")
    return 0


def drain(fd):
    """Drop frames queued before we send (e.g. IPv6 chatter on carrier up)."""
    while select.select([fd], [], [], 0)[0]:
        try:
            os.read(fd, 65536)
        except BlockingIOError:
            return


def wait_for(fd, timeout, match, arp_answer):
    """Read frames for up to timeout seconds; return the first frame match() accepts."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if not select.select([fd], [], [], left)[0]:
            continue
        try:
            raw = os.read(fd, 65536)
        except BlockingIOError:
            continue
        pkt = Ether(raw)
        if match(pkt):
            return pkt
        if arp_answer:
            arp_answer(fd, pkt)
        print(f"# other frame: {pkt.summary()}", file=sys.stderr)


def cmd_udp(fd, a):
    src = a.src or a.guest_ip
    sport = a.sport or random.randint(40000, 59999)
    payload = (a.payload or f"tapfence-tap-{os.getpid()}").encode()
    l2 = Ether(src=a.guest_mac, dst=a.gw_mac)
    if a.vlan is not None:
        l2 = l2 / Dot1Q(vlan=a.vlan)
    frame = l2 / IP(src=src, dst=a.dst) / UDP(sport=sport, dport=a.dport) / payload
    os.write(fd, bytes(frame))
    print(f"sent udp {src}:{sport} -> {a.dst}:{a.dport} from {a.guest_mac} len {len(payload)}", file=sys.stderr)

    def match(p):
        return (IP in p and UDP in p and p[IP].src == a.dst and p[IP].dst == src
                and p[UDP].sport == a.dport and p[UDP].dport == sport and bytes(p[UDP].payload) == payload)

    def arp_answer(fd, p):
        # Answer "who-has <our source>" like a guest kernel would, only for the address we sent from.
        if ARP in p and p[ARP].op == 1 and p[ARP].pdst == src:
            rep = Ether(src=a.guest_mac, dst=p[ARP].hwsrc) / ARP(
                op=2, hwsrc=a.guest_mac, psrc=src, hwdst=p[ARP].hwsrc, pdst=p[ARP].psrc)
            os.write(fd, bytes(rep))

    p = wait_for(fd, a.timeout, match, arp_answer)
    if p is None:
        print("no reply")
        return 1
    print(f"reply udp {p[IP].src}:{p[UDP].sport} -> {p[IP].dst}:{p[UDP].dport} from {p[Ether].src} len {len(payload)}")
    return 0


def cmd_arp(fd, a):
    frame = Ether(src=a.guest_mac, dst="ff:ff:ff:ff:ff:ff") / ARP(
        op=1, hwsrc=a.guest_mac, psrc=a.guest_ip, hwdst="00:00:00:00:00:00", pdst=a.target)
    os.write(fd, bytes(frame))
    print(f"sent arp who-has {a.target} tell {a.guest_ip} ({a.guest_mac})", file=sys.stderr)

    def match(p):
        return ARP in p and p[ARP].op == 2 and p[ARP].psrc == a.target and p[ARP].pdst == a.guest_ip

    p = wait_for(fd, a.timeout, match, None)
    if p is None:
        print("no reply")
        return 1
    print(f"reply arp {a.target} is-at {p[ARP].hwsrc}")
    return 0


def on_tap(cmd, vnet_hdr=False):
    """cmd(fd, args) on the tap, attached (with a virtio-net header if vnet_hdr) and drained."""

    def run_cmd(a):
        try:
            fd = tap_open(a.dev, vnet_hdr)
        except OSError as e:
            print(f"tapvmm: cannot attach to tap `{a.dev}': {e}", file=sys.stderr)
            return 2
        try:
            # Carrier comes up when we attach; give the host a moment, then drop its link-up chatter.
            time.sleep(0.1)
            drain(fd)
            return cmd(fd, a)
        finally:
            os.close(fd)

    return run_cmd


COMMON = [
    arg("--dev", required=True), arg("--guest-mac", required=True), arg("--guest-ip", required=True),
    arg("--gw-mac", required=True),
    arg("--timeout", type=float, default=2.0, help="seconds to wait for a reply"),
]

COMMANDS = {
    "udp": (on_tap(cmd_udp), [
        arg("dst"), arg("dport", type=int),
        arg("--src", help="source address to claim (spoof); default --guest-ip"),
        arg("--sport", type=int), arg("--payload"),
        arg("--vlan", type=int, help="send the frame with an 802.1Q tag (0: priority tag)")]),
    "arp": (on_tap(cmd_arp), [arg("target")]),
    # DNS queries for NAMES to RESOLVER in one UDP GSO write (send only)
    "dns-gso": (on_tap(cmd_dns_gso, vnet_hdr=True), [
        arg("resolver"), arg("names", nargs="+"), arg("--sport", type=int, default=40053),
        arg("--gso-size", type=int, default=64),
        arg("--hide-in-opt", action="store_true",
            help="two NAMES: one allowed-looking query whose OPT record holds the second's")]),
}

if __name__ == "__main__":
    run(__doc__, COMMANDS, common=COMMON)
