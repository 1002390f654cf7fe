#!/usr/bin/python3
"""Wire attacks on a uroce responder, from a peer that builds its own RoCEv2 frames.

Run by run_attack.sh inside the attacker's network namespace; the victim (victim.cc under `uroce run`,
uroce's af_packet port) runs in the other namespace of the veth pair, or, with --via memif, on a memif pair
with attack_injector. Frames are built with scapy's
Ether/IP/IPv6/UDP/Dot1Q layers plus BTH/RETH/AETH packed here from IBA chapter 9, and the ICRC is computed
by icrc() below (checked against ../shared/golden/icrc_vectors.json and scapy's own BTH ICRC by the harness
case): nothing of uroce's own frame builder is used. A raw packet socket (or the injector) sends and sniffs;
every wait is on a condition (a sniffed frame, a victim answer, a counter) with a deadline, never a fixed sleep.

Each case prints what it checks and exits 0 when every check held, 1 otherwise.
"""
import argparse
import json
import os
import queue
import random
import socket
import struct
import subprocess
import sys
import threading
import time
import logging
import zlib

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)  # no "no address on lo" warnings
from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, Raw, raw, wrpcap  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402

VICTIM_IP = "10.214.0.1"
PEER_IP = "10.214.0.2"
SPOOF_IP = "10.214.0.66"
MTU = 1024

# RC opcodes (IBA chapter 9, the BTH opcode table)
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A
READ_REQ, READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY, ACK = 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11
FETCH_ADD = 0x14
# AETH syndromes (IBA chapter 9): ACK with "no credit limit" (credit code 31), NAK codes 0-3
SYN_ACK = 0x1F
NAK_SEQ, NAK_INV_REQ, NAK_REM_ACCESS, NAK_REM_OP = 0x60, 0x61, 0x62, 0x63

FAILURES = []


CURRENT = [""]  # the case running, named in the failure summary


def check(cond, what):
    print(("  ok    " if cond else "  FAIL  ") + what, flush=True)
    if not cond:
        FAILURES.append("%s: %s" % (CURRENT[0], what))
    return cond


def mac_of(ip):
    """uroce's MAC for an IPv4 GID: 02:00 + the address."""
    return "02:00:" + ":".join("%02x" % b for b in socket.inet_aton(ip))


# ------------------------------------------------------------------------------------------------ ICRC
def icrc(frame, l3):
    """RoCEv2 ICRC of an Ethernet frame whose IP header starts at l3 (the last 4 bytes are the ICRC slot):
    CRC-32 over 8 bytes of ones, the IP header with TOS/traffic class, flow label, TTL/hop limit and checksum
    set to ones, the UDP header with its checksum set to ones, the BTH with byte 4 set to ones, then the rest
    up to the ICRC. Returned as the 32-bit value; on the wire it is stored little-endian."""
    if frame[l3] >> 4 == 4:
        n = (frame[l3] & 15) * 4
        ip = bytearray(frame[l3:l3 + n])
        ip[1] = ip[8] = ip[10] = ip[11] = 0xFF
    else:
        n = 40
        ip = bytearray(frame[l3:l3 + 40])
        ip[0] |= 0x0F
        ip[1] = ip[2] = ip[3] = ip[7] = 0xFF
    udp = bytearray(frame[l3 + n:l3 + n + 8])
    udp[6] = udp[7] = 0xFF
    bth = bytearray(frame[l3 + n + 8:l3 + n + 20])
    bth[4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + frame[l3 + n + 20:-4]) & 0xFFFFFFFF


def l3_offset(frame):
    return 18 if frame[12:14] == b"\x81\x00" else 14


# ---------------------------------------------------------------------------------------------- frames
def bth(op, dqpn, psn, ackreq=False, pad=0, se=False):
    return struct.pack("!BBHII", op, (se << 7) | (pad << 4), 0xFFFF, dqpn & 0xFFFFFF,
                       (int(ackreq) << 31) | (psn & 0xFFFFFF))


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def atomic_eth(va, rkey, swap_add, compare):
    return struct.pack("!QIQQ", va, rkey, swap_add, compare)


def aeth(syndrome, msn):
    return struct.pack("!I", (syndrome << 24) | (msn & 0xFFFFFF))


def frame(op, dqpn, psn, ext=b"", payload=b"", ackreq=False, src_ip=PEER_IP, dst_ip=VICTIM_IP, src_mac=None,
          dst_mac=None, vlan=None, ipv6=False, df=True, good_icrc=True, sport=0xC123):
    """One RoCEv2 frame from the peer to the victim (every field overridable for the attacks)."""
    pad = -len(payload) % 4
    roce = bth(op, dqpn, psn, ackreq, pad) + ext + payload + b"\0" * pad + b"\0" * 4
    l2 = Ether(src=src_mac or mac_of(PEER_IP), dst=dst_mac or mac_of(VICTIM_IP))
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan)
    if ipv6:
        l3 = IPv6(src="::ffff:" + src_ip, dst="::ffff:" + dst_ip, hlim=64)
    else:
        l3 = IP(src=src_ip, dst=dst_ip, ttl=64, id=0, flags="DF" if df else 0)
    b = bytearray(raw(l2 / l3 / UDP(sport=sport, dport=4791, chksum=0) / Raw(roce)))
    c = icrc(b, l3_offset(b))
    b[-4:] = struct.pack("<I", c if good_icrc else c ^ 0x1)
    return bytes(b)


def kernel_defrag_eats(f):
    """Whether the victim's kernel keeps frame f for IP reassembly instead of handing it to the af_packet
    port (ip_check_defrag on a fanout socket with the defrag flag, as DPDK's af_packet PMD opens it): an
    IPv4 header that looks sane and says it is a fragment."""
    if len(f) < 34 or f[12:14] != b"\x08\x00" or f[14] >> 4 != 4 or f[14] & 15 < 5:
        return False
    tot = struct.unpack("!H", f[16:18])[0]
    if len(f) < 14 + tot or tot < (f[14] & 15) * 4:
        return False
    return struct.unpack("!H", f[20:22])[0] & 0x3FFF != 0


def fragments(f, split):
    """The IPv4 datagram of frame f as two fragments: the first carries `split` bytes of IP payload
    (a multiple of 8), the second the rest."""
    l3 = l3_offset(f)
    ip = IP(f[l3:])
    body = raw(ip.payload)
    a = ip.copy()
    a.flags, a.frag, a.len, a.chksum = "MF", 0, None, None
    a.remove_payload()
    b = a.copy()
    b.flags, b.frag = 0, split // 8
    eth = Ether(f[:l3])
    eth.remove_payload()
    return [raw(eth) + raw(a / Raw(body[:split])), raw(eth) + raw(b / Raw(body[split:]))]


class Sniffer:
    """Every RoCEv2 frame the victim sends, parsed: opcode, dest QPN, PSN, AETH syndrome, payload. A link
    (RawLink or InjectorLink) feeds it."""

    def __init__(self):
        self.frames = []
        self.cv = threading.Condition()

    def feed(self, data):
        p = self.parse(data)
        if p:
            with self.cv:
                self.frames.append(p)
                self.cv.notify_all()

    @staticmethod
    def parse(d):
        l3 = l3_offset(d)
        if d[l3] >> 4 != 4 or d[l3 + 9] != 17:
            return None
        n = (d[l3] & 15) * 4
        if struct.unpack("!H", d[l3 + n + 2:l3 + n + 4])[0] != 4791:
            return None
        b = l3 + n + 8
        op = d[b]
        pad = (d[b + 1] >> 4) & 3
        dqpn = struct.unpack("!I", d[b + 4:b + 8])[0] & 0xFFFFFF
        psn = struct.unpack("!I", d[b + 8:b + 12])[0] & 0xFFFFFF
        p = {"op": op, "dqpn": dqpn, "psn": psn, "syndrome": None, "t": time.monotonic(),
             "icrc_ok": struct.unpack("<I", d[-4:])[0] == icrc(d, l3)}
        h = b + 12
        if op in (ACK, READ_FIRST, READ_LAST, READ_ONLY, 0x12):
            p["syndrome"] = d[h]
            h += 4
        if op in (WRITE_FIRST, WRITE_ONLY):
            h += 16
        p["payload"] = d[h:len(d) - 4 - pad]
        return p

    def wait(self, pred, timeout, start=0):
        """The first frame from index `start` on that satisfies pred, waiting up to timeout s; else None."""
        end = time.monotonic() + timeout
        with self.cv:
            i = start
            while True:
                while i < len(self.frames):
                    if pred(self.frames[i]):
                        return self.frames[i]
                    i += 1
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def mark(self):
        with self.cv:
            return len(self.frames)

    def since(self, start):
        with self.cv:
            return list(self.frames[start:])


class RawLink:
    """The attacker's end of the veth: a raw packet socket sends; a second one sniffs what the victim sends."""

    def __init__(self, iface, sniffer):
        self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.tx.bind((iface, 0))
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        self.rx.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE: READ bursts fit
        self.rx.bind((iface, 0))
        self.rx.settimeout(0.2)
        self.sn = sniffer
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        victim_mac = bytes.fromhex(mac_of(VICTIM_IP).replace(":", ""))
        while True:
            try:
                data, addr = self.rx.recvfrom(65535)
            except socket.timeout:
                continue
            except OSError:
                return
            if addr[2] != socket.PACKET_OUTGOING and data[6:12] == victim_mac:
                self.sn.feed(data)

    def send(self, f):
        self.tx.send(f)

    def send_all(self, frames):
        for f in frames:
            self.tx.send(f)

    def close(self):
        pass


class InjectorLink:
    """The attacker's end of a memif pair with the victim: attack_injector replays the pcap files written
    here with scapy and prints every frame the victim sends, which feeds the sniffer."""

    def __init__(self, args, sock_path, sniffer):
        self.dir = os.path.dirname(sock_path)
        self.n = 0
        self.p = subprocess.Popen([args.injector, "memif:socket=%s,role=client" % sock_path], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.replies = queue.Queue()
        self.sn = sniffer
        threading.Thread(target=self.run, daemon=True).start()
        r = self._reply(15)
        if not r or not r.get("ready"):
            raise RuntimeError("attack_injector did not come up: %s" % r)

    def run(self):
        for line in self.p.stdout:
            j = json.loads(line)
            if "rx" in j:
                self.sn.feed(bytes.fromhex(j["rx"]))
            else:
                self.replies.put(j)
        self.replies.put(None)

    def _reply(self, timeout):
        try:
            return self.replies.get(timeout=timeout)
        except queue.Empty:
            return None

    def write(self, frames):
        """A pcap file (scapy's wrpcap) holding frames, to replay with send_file."""
        self.n += 1
        path = os.path.join(self.dir, "inject-%d.pcap" % self.n)
        wrpcap(path, [bytes(f) for f in frames], linktype=1)  # DLT_EN10MB, frames as they are
        return path

    def send_file(self, path):
        """Has the injector replay a pcap file; the number of frames it transmitted."""
        self.p.stdin.write("send %s\n" % path)
        self.p.stdin.flush()
        r = self._reply(10)
        return r.get("sent", 0) if r else 0

    def send_all(self, frames):
        n = self.send_file(self.write(frames))
        if n != len(frames):
            raise RuntimeError("attack_injector sent %d of %d frames" % (n, len(frames)))

    def send(self, f):
        self.send_all([f])

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.write("exit\n")
            self.p.stdin.flush()
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Victim:
    """victim.cc under `uroce run` in the victim namespace; commands on its stdin, JSON answers on stdout."""

    def __init__(self, args, peer_qpn, peer_psn, size=65536, rd_atomic=4, env=None):
        self.args = args
        e = dict(os.environ, UROCE_PORT="af_packet:iface=" + args.victim_if)
        e.update(env or {})
        self.log = open(os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "victim-%d.log" % id(self)), "w+")
        cmd = ["ip", "netns", "exec", args.victim_ns, args.uroce, "run", "--ip", VICTIM_IP, "--", args.victim,
               "--peer-ip", PEER_IP, "--peer-qpn", str(peer_qpn), "--peer-psn", str(peer_psn), "--psn", "100",
               "--size", str(size), "--rd-atomic", str(rd_atomic), "--mtu", str(MTU)]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=e,
                                  text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.info = self._next(20)
        if not self.info or "qpn" not in self.info:
            self.log.seek(0)
            raise RuntimeError("victim did not start: %s\n%s" % (self.info, self.log.read()))

    def _read(self):
        for line in self.p.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))
        self.lines.put(None)

    def _next(self, timeout):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def cmd(self, line, timeout=10):
        if self.p.poll() is not None:
            return None
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            return None
        return self._next(timeout)

    def alive(self):
        return self.p.poll() is None

    def stats(self):
        """The victim's counters flattened to section.name; {} once the victim is gone."""
        if not self.alive():
            return {}
        r = subprocess.run(["ip", "netns", "exec", self.args.victim_ns, self.args.uroce, "stats", "--json", "--pid",
                            str(self.info["pid"])], capture_output=True, text=True, timeout=10)
        try:
            j = json.loads(r.stdout)
        except ValueError:
            return {}
        if isinstance(j, list):  # one object per device of the process: the victim has one
            j = j[0]
        flat = {}
        for section in ("device", "counters", "rx_drops", "port_stats"):
            for k, v in (j.get(section) or {}).items():
                flat[section + "." + k] = v
        return flat

    def wait_counter(self, name, at_least, timeout=2.0):
        """Polls the victim's stats until counter `name` reaches at_least (True) or timeout (False)."""
        end = time.monotonic() + timeout
        while True:
            s = self.stats()
            if counter(s, name) >= at_least:
                return s
            if time.monotonic() > end:
                return None
            time.sleep(0.02)

    def close(self):
        if self.p.poll() is None:
            self.cmd("exit", timeout=5)
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.log.seek(0)
        return self.p.returncode, self.log.read()


def counter(stats, name):
    """A counter by its bare name, from the device counters or the frame-level rx_drops."""
    for section in ("device.", "counters.", "rx_drops."):
        if section + name in stats:
            return stats[section + name]
    return 0


class Peer:
    """The honest requester on the attacker's side: its QPN and next PSN, and frames for the victim."""

    def __init__(self, ctx, qpn=0x2A51C, psn=5000):
        self.ctx, self.sn, self.qpn, self.psn = ctx, ctx.sn, qpn, psn

    def send(self, frames):
        self.ctx.sock.send_all(frames)

    def write_frames(self, vqpn, va, rkey, data, ackreq_each=False, **kw):
        """The packets of one RDMA WRITE; advances the PSN. Only the last asks for an ACK, unless ackreq_each."""
        chunks = [data[i:i + MTU] for i in range(0, len(data), MTU)] or [b""]
        out = []
        for i, c in enumerate(chunks):
            last = i == len(chunks) - 1
            if len(chunks) == 1:
                op, ext = WRITE_ONLY, reth(va, rkey, len(data))
            elif i == 0:
                op, ext = WRITE_FIRST, reth(va, rkey, len(data))
            else:
                op, ext = (WRITE_LAST if last else WRITE_MIDDLE), b""
            out.append(frame(op, vqpn, self.psn, ext, c, ackreq=last or ackreq_each, **kw))
            self.psn = (self.psn + 1) & 0xFFFFFF
        return out

    def read_frame(self, vqpn, va, rkey, length, **kw):
        f = frame(READ_REQ, vqpn, self.psn, reth(va, rkey, length), ackreq=True, **kw)
        self.psn = (self.psn + max(1, -(-length // MTU))) & 0xFFFFFF
        return f

    def wait_aeth(self, syndrome_pred, psn=None, timeout=3.0, start=0):
        return self.sn.wait(lambda p: p["op"] == ACK and syndrome_pred(p["syndrome"]) and
                            (psn is None or p["psn"] == psn), timeout, start)


def is_ack(s):
    return s is not None and s >> 5 == 0


def is_nak(code):
    return lambda s: s == code


def pattern(off, n):
    """victim.cc's target pattern."""
    return bytes(((i * 13 + 1) ^ 0x5A) & 0xFF for i in range(off, off + n))


# ----------------------------------------------------------------------------------------------- cases
def case_harness(ctx):
    """The harness itself, on behaviour uroce has had all along: the ICRC function agrees with the golden
    vectors and with scapy; a valid single- and multi-packet WRITE is ACKed and lands in memory; a frame with
    a bad ICRC is dropped and counted; a bad rkey and an out-of-bounds WRITE get NAK Remote Access Error with
    nothing written."""
    vecs = json.load(open(os.path.join(ctx.args.golden, "icrc_vectors.json")))["vectors"]
    n = 0
    for v in vecs:
        if v.get("linktype") != 1 or not v["kind"].startswith("RoCEv2"):
            continue
        f = bytes.fromhex(v["frame_hex"])
        n += 1
        check(icrc(f, l3_offset(f)) == int(v["expected_icrc_crc32_value"], 16), "ICRC of golden " + v["id"])
    check(n >= 2, "golden RoCEv2 vectors found: %d" % n)
    f = frame(WRITE_ONLY, 0x123, 77, reth(0x1000, 0x42, 8), b"abcdefgh", ackreq=True)
    s = (Ether(src=mac_of(PEER_IP), dst=mac_of(VICTIM_IP)) / IP(src=PEER_IP, dst=VICTIM_IP, ttl=64, id=0, flags="DF") /
         UDP(sport=0xC123, dport=4791, chksum=0) / BTH(opcode=WRITE_ONLY, dqpn=0x123, psn=77, ackreq=1) /
         Raw(reth(0x1000, 0x42, 8) + b"abcdefgh"))
    check(raw(s) == f, "own frame and ICRC == scapy's BTH layer and ICRC")

    v = ctx.victim()
    me = v.info
    check(me["qpn"] not in (0, 1), "victim QPN %#x" % me["qpn"])
    peer = ctx.peer
    data = os.urandom(64)
    m = ctx.sn.mark()
    peer.send(peer.write_frames(me["qpn"], me["addr"], me["rkey"], data))
    a = peer.wait_aeth(is_ack, psn=peer.psn - 1, start=m)
    check(a is not None, "WRITE_ONLY 64 B: ACK")
    check(a is None or a["icrc_ok"], "the victim's ACK has a correct ICRC")
    d = v.cmd("dump 0 64")
    check(d and bytes.fromhex(d["hex"]) == data, "WRITE_ONLY landed in memory")
    big = os.urandom(3 * MTU + 100)
    m = ctx.sn.mark()
    peer.send(peer.write_frames(me["qpn"], me["addr"] + 4096, me["rkey"], big))
    check(peer.wait_aeth(is_ack, psn=peer.psn - 1, start=m) is not None, "WRITE of 4 packets: ACK")
    d = v.cmd("dump 4096 %d" % len(big))
    check(d and bytes.fromhex(d["hex"]) == big, "4-packet WRITE landed in memory")
    v.cmd("snap")

    s0 = v.stats()
    f = peer.write_frames(me["qpn"], me["addr"], me["rkey"], b"X" * 64, good_icrc=False)
    peer.psn -= 1  # the dropped frame's PSN is reused below
    peer.send(f)
    check(v.wait_counter("bad_icrc", counter(s0, "bad_icrc") + 1) is not None, "bad ICRC counted (bad_icrc)")

    m = ctx.sn.mark()
    peer.send(peer.write_frames(me["qpn"], me["addr"], me["rkey"] ^ 0x5A5A00, b"Y" * 64))
    check(peer.wait_aeth(is_nak(NAK_REM_ACCESS), psn=peer.psn - 1, start=m) is not None,
          "bad rkey: NAK Remote Access Error")
    c = v.cmd("check")
    check(c and c["target_same"] and c["guards_ok"], "bad rkey / bad ICRC: memory unchanged (%s)" % c)
    check(c and c["qp_state"] == "ERR", "bad rkey: responder QP in ERR (%s)" % (c and c["qp_state"]))
    check(counter(v.stats(), "rem_access_nak_sent") >= 1, "rem_access_nak_sent counted")
    ctx.close(v)

    # Out of bounds: a WRITE that starts inside the region and runs 48 bytes past its end.
    ctx.peer = peer = Peer(ctx)
    v = ctx.victim()
    me = v.info
    m = ctx.sn.mark()
    peer.send(peer.write_frames(me["qpn"], me["addr"] + me["len"] - 16, me["rkey"], b"Z" * 64))
    check(peer.wait_aeth(is_nak(NAK_REM_ACCESS), psn=peer.psn - 1, start=m) is not None,
          "out-of-bounds WRITE: NAK Remote Access Error")
    c = v.cmd("check")
    check(c and c["target_same"] and c["guards_ok"], "out-of-bounds WRITE: nothing written (%s)" % c)
    ctx.close(v)


def dereg_write(ctx, how):
    """WRITE_FIRST accepted (ACKed: it asks for one), then the region goes away (`how`), then the rest of
    the WRITE arrives: NAK Remote Access Error, nothing more written, victim alive, QP in ERR."""
    v = ctx.victim()
    me = v.info
    peer = ctx.peer
    data = os.urandom(3 * MTU)
    first, middle, last = peer.write_frames(me["qpn"], me["addr"], me["rkey"], data, ackreq_each=True)
    m = ctx.sn.mark()
    peer.send([first])
    check(peer.wait_aeth(is_ack, psn=peer.psn - 3, start=m) is not None, "WRITE_FIRST ACKed")
    d = v.cmd("dump 0 %d" % MTU)
    check(d and bytes.fromhex(d["hex"]) == data[:MTU], "WRITE_FIRST's payload landed")
    old_rkey = me["rkey"]
    for step in how:
        r = v.cmd(step)
        check(r and (r.get("ok") or "rkey" in r), "victim: %s -> %s" % (step, r))
        if step == "rereg":
            check(r and r.get("rkey") != old_rkey, "rereg gave a new rkey (%#x -> %#x)" % (old_rkey, r.get("rkey", 0)))
    m = ctx.sn.mark()
    s0 = v.stats()
    peer.send([middle, last])
    nak = peer.wait_aeth(is_nak(NAK_REM_ACCESS), start=m)
    check(nak is not None, "WRITE_MIDDLE after %s: NAK Remote Access Error" % "+".join(how))
    check(nak is None or nak["psn"] == peer.psn - 2, "the NAK names WRITE_MIDDLE's PSN (%s)" % (nak and nak["psn"]))
    check(nak is None or nak["icrc_ok"], "the NAK's ICRC is right")
    acks = [p for p in ctx.sn.since(m) if p["op"] == ACK and is_ack(p["syndrome"])]
    check(not acks, "no ACK for the rest of the WRITE (%d)" % len(acks))
    check(v.alive(), "victim alive")
    c = v.cmd("check")
    check(c is not None, "victim answers after the attack (no SIGSEGV)")
    if c:
        check(c["guards_ok"], "guard pages unchanged")
        check(not c["mapped"] or c["target_same"], "target unchanged since %s (%s)" % (how[0], c))
        check(c["qp_state"] == "ERR", "responder QP in ERR (%s)" % c["qp_state"])
        check(any("access" in e.lower() for e in c["events"]), "async event QP access error (%s)" % c["events"])
    s1 = v.stats()
    check(counter(s1, "rem_access_nak_sent") > counter(s0, "rem_access_nak_sent"), "rem_access_nak_sent counted")
    ctx.close(v)


def case_dereg_write(ctx):
    dereg_write(ctx, ["dereg"])


def case_dereg_munmap_write(ctx):
    dereg_write(ctx, ["dereg", "munmap"])


def case_rereg_write(ctx):
    dereg_write(ctx, ["rereg"])
    # And outside a WRITE in progress: after ibv_rereg_mr the new rkey works and the old one is refused.
    ctx.peer = peer = Peer(ctx)
    v = ctx.victim()
    me = v.info
    r = v.cmd("rereg")
    check(r and r.get("rkey") not in (None, me["rkey"]), "rereg gave a new rkey (%s)" % r)
    if not r or "rkey" not in r:
        return ctx.close(v)
    m = ctx.sn.mark()
    peer.send(peer.write_frames(me["qpn"], me["addr"], r["rkey"], b"N" * 64))
    check(peer.wait_aeth(is_ack, psn=peer.psn - 1, start=m) is not None, "WRITE with the new rkey: ACK")
    v.cmd("snap")
    m = ctx.sn.mark()
    peer.send(peer.write_frames(me["qpn"], me["addr"], me["rkey"], b"O" * 64))
    check(peer.wait_aeth(is_nak(NAK_REM_ACCESS), psn=peer.psn - 1, start=m) is not None,
          "WRITE with the old rkey: NAK Remote Access Error")
    c = v.cmd("check")
    check(c and c["target_same"] and c["guards_ok"], "the old rkey wrote nothing (%s)" % c)
    ctx.close(v)


def dereg_read(ctx, steps):
    """A 1 MiB READ; once its responses flow the victim runs `steps` (deregisters the region and poisons it
    with 0xEE, or deregisters and unmaps it): the responses stop before the end, a NAK Remote Access Error
    follows, the victim survives, and every response payload is the original pattern (nothing was read after
    the deregistration)."""
    size = 1 << 20
    v = ctx.victim(size=size, env={"UROCE_CC": "dcqcn", "UROCE_CC_PARAMS": "rpg_max_rate=20"})
    me = v.info
    peer = ctx.peer
    psn0 = peer.psn
    m = ctx.sn.mark()
    peer.send([peer.read_frame(me["qpn"], me["addr"], me["rkey"], size)])
    eighth = ctx.sn.wait(lambda p: p["op"] in (READ_MIDDLE, READ_LAST) and p["psn"] == (psn0 + 7) & 0xFFFFFF, 3.0, m)
    check(eighth is not None, "READ responses flow (8 seen)")
    for step in steps:
        r = v.cmd(step)
        check(r and r.get("ok"), "victim: %s during the READ -> %s" % (step, r))
    t_dereg = time.monotonic()
    nak = peer.wait_aeth(is_nak(NAK_REM_ACCESS), timeout=3.0, start=m)
    check(nak is not None, "NAK Remote Access Error after the deregistration")
    # A victim round trip and a stats read (tens of ms: dozens of paced response slots) before looking at
    # what was sent, so a READ that resumed after its NAK would show.
    c = v.cmd("check")
    check(c is not None and c["guards_ok"], "victim alive, guard pages unchanged (%s)" % c)
    st = v.stats()
    check(counter(st, "rem_access_nak_sent") >= 1, "rem_access_nak_sent counted")
    resp = [p for p in ctx.sn.since(m) if p["op"] in (READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY)]
    n = len(resp)
    total = size // MTU
    print("  info  %d of %d responses before the stop; first NAK %.1f ms after %s returned" %
          (n, total, ((nak["t"] - t_dereg) * 1e3) if nak else -1, "+".join(steps)))
    check(n < total and not any(p["op"] == READ_LAST for p in resp), "the READ did not complete")
    bad = [p["psn"] for p in resp
           if p["payload"] != pattern(((p["psn"] - psn0) & 0xFFFFFF) * MTU, len(p["payload"]))]
    check(not bad, "no response carries bytes read after dereg (bad PSNs %s)" % bad[:5])
    after = [p for p in resp if nak and p["t"] > nak["t"]]
    check(not after, "no response after the NAK (%d)" % len(after))
    check(v.alive(), "victim alive")
    ctx.close(v)


def case_dereg_read(ctx):
    dereg_read(ctx, ["dereg poison"])


def case_dereg_munmap_read(ctx):
    dereg_read(ctx, ["dereg", "munmap"])


def case_frame_drops(ctx):
    """Frames an honest peer would never send, each a WRITE_ONLY that would otherwise be accepted: each is
    dropped (no ACK, memory unchanged) and counted under its own reason; afterwards the QP is still RTS and
    the honest peer's WRITE with the same PSN succeeds."""
    v = ctx.victim()
    me = v.info
    peer = ctx.peer
    v.cmd("snap")
    psn = peer.psn

    def one(name, counter_name, frames, n=1):
        s0 = v.stats()
        m = ctx.sn.mark()
        peer.psn = psn
        peer.send(frames)
        s1 = v.wait_counter(counter_name, counter(s0, counter_name) + n)
        check(s1 is not None, "%s: counted as %s" % (name, counter_name))
        got = [p for p in ctx.sn.since(m) if p["op"] == ACK]
        check(not got, "%s: no ACK/NAK (%s)" % (name, [hex(p["syndrome"]) for p in got]))
        if s1:
            moved = {k: s1[k] - s0.get(k, 0) for k in s1
                     if k.split(".")[0] in ("device", "counters", "rx_drops") and s1[k] != s0.get(k, 0) and
                     not k.endswith(("rx_packets", "rx_bytes"))}
            print("  info  %s moved %s" % (name, moved))

    w = dict(vqpn=me["qpn"], va=me["addr"], rkey=me["rkey"], data=b"A" * 64)
    one("spoofed source IP", "drop_src_addr", peer.write_frames(src_ip=SPOOF_IP, **w))
    one("spoofed source MAC", "drop_src_mac", peer.write_frames(src_mac=mac_of(SPOOF_IP), **w))
    one("wrong destination MAC", "drop_dst_mac", peer.write_frames(dst_mac="02:00:0a:d6:00:99", **w))
    one("802.1Q tag on an untagged device", "drop_vlan", peer.write_frames(vlan=7, **w))
    one("IPv6 frame to an IPv4 path", "drop_ip_family", peer.write_frames(ipv6=True, **w))
    if ctx.memif:  # both fragments reach the victim as they are
        one("WRITE as two IPv4 fragments", "ipv4_fragment", fragments(peer.write_frames(**w)[0], 48), 2)
    else:
        # The kernel reassembles fragments before af_packet sees them (DPDK's socket has the fanout defrag
        # flag) and hands over the datagram with DF clear: its ICRC is computed for that reassembled header.
        one("WRITE as two IPv4 fragments", "ipv4_fragment", fragments(peer.write_frames(df=False, **w)[0], 48))
    one("IPv4 DF clear (a reassembled datagram)", "ipv4_fragment", peer.write_frames(df=False, **w))
    c = v.cmd("check")
    check(c and c["target_same"] and c["guards_ok"], "memory unchanged by the dropped frames (%s)" % c)
    check(c and c["qp_state"] == "RTS", "QP still RTS (%s)" % (c and c["qp_state"]))
    peer.psn = psn
    m = ctx.sn.mark()
    peer.send(peer.write_frames(**dict(w, data=b"H" * 64)))
    check(peer.wait_aeth(is_ack, psn=psn, start=m) is not None, "the honest peer's WRITE afterwards: ACK")
    d = v.cmd("dump 0 64")
    check(d and bytes.fromhex(d["hex"]) == b"H" * 64, "the honest peer's WRITE landed")
    # A priority tag (802.1Q with VLAN 0, only the PCP) is not another VLAN: taken on an untagged device.
    m = ctx.sn.mark()
    peer.send(peer.write_frames(vlan=0, **dict(w, data=b"P" * 64)))
    check(peer.wait_aeth(is_ack, psn=psn + 1, start=m) is not None, "a priority-tagged (VLAN 0) WRITE: ACK")
    d = v.cmd("dump 0 64")
    check(d and bytes.fromhex(d["hex"]) == b"P" * 64, "the priority-tagged WRITE landed")
    ctx.close(v)


def case_forged_nak(ctx):
    """The victim's own RDMA WRITE is outstanding; a NAK Remote Access Error for its PSN arrives from a
    spoofed source IP (and one from a spoofed MAC), then an ACK from the spoofed IP: all are dropped, the QP
    stays RTS, nothing completes, and the honest ACK completes the WRITE successfully."""
    v = ctx.victim()
    me = v.info
    m = ctx.sn.mark()
    r = v.cmd("write 4096 4660 64")
    check(r and r.get("ok"), "victim posted an RDMA WRITE")
    req = ctx.sn.wait(lambda p: p["op"] == WRITE_ONLY, 3.0, m)
    check(req is not None, "the victim's WRITE_ONLY seen on the wire")
    if req is None:
        return ctx.close(v)
    s0 = v.stats()
    forged = [frame(ACK, me["qpn"], req["psn"], aeth(NAK_REM_ACCESS, 0), src_ip=SPOOF_IP),
              frame(ACK, me["qpn"], req["psn"], aeth(NAK_REM_ACCESS, 0), src_mac=mac_of(SPOOF_IP))]
    ctx.peer.send(forged)
    s1 = v.wait_counter("drop_src_addr", counter(s0, "drop_src_addr") + 1)
    check(s1 is not None, "forged NAK from a spoofed IP counted as drop_src_addr")
    s1 = v.wait_counter("drop_src_mac", counter(s0, "drop_src_mac") + 1)
    check(s1 is not None, "forged NAK from a spoofed MAC counted as drop_src_mac")
    c = v.cmd("check")
    check(c and c["qp_state"] == "RTS", "QP still RTS after the forged NAKs (%s)" % (c and c["qp_state"]))
    # A forged positive ACK must not complete the WRITE either.
    ctx.peer.send([frame(ACK, me["qpn"], req["psn"], aeth(SYN_ACK, 1), src_ip=SPOOF_IP)])
    s2 = v.wait_counter("drop_src_addr", counter(s0, "drop_src_addr") + 2)
    check(s2 is not None, "forged ACK from a spoofed IP counted as drop_src_addr")
    w = v.cmd("poll 0")
    check(w and w.get("wc") is None, "the forged ACK completed nothing (%s)" % (w and w.get("wc")))
    ctx.peer.send([frame(ACK, me["qpn"], req["psn"], aeth(SYN_ACK, 1))])
    w = v.cmd("poll 3000")
    st = w and w.get("wc") and w["wc"]["status"]
    check(st == "success", "the WRITE completes with success after the honest ACK (%s)" % st)
    ctx.close(v)


def case_rd_atomic(ctx):
    """max_dest_rd_atomic 1 and four 64 KiB READ requests sent back to back: the ones beyond the limit get
    NAK Invalid Request (not a silent drop) and rd_atomic_over_limit counts them."""
    v = ctx.victim(size=1 << 18, rd_atomic=1, env={"UROCE_CC": "dcqcn", "UROCE_CC_PARAMS": "rpg_max_rate=20"})
    me = v.info
    peer = ctx.peer
    m = ctx.sn.mark()
    s0 = v.stats()
    peer.send([peer.read_frame(me["qpn"], me["addr"] + i * 65536, me["rkey"], 65536) for i in range(4)])
    nak = peer.wait_aeth(is_nak(NAK_INV_REQ), timeout=3.0, start=m)
    check(nak is not None, "NAK Invalid Request for a READ beyond max_dest_rd_atomic")
    s1 = v.wait_counter("rd_atomic_over_limit", counter(s0, "rd_atomic_over_limit") + 1)
    check(s1 is not None, "rd_atomic_over_limit counted")
    check(s1 is not None and counter(s1, "inv_req_nak_sent") > counter(s0, "inv_req_nak_sent"),
          "inv_req_nak_sent counted")
    check(v.alive(), "victim alive")
    ctx.close(v)
    # The same limit covers ATOMICs: a FETCH_ADD while a READ's responses are still going out.
    ctx.peer = peer = Peer(ctx)
    v = ctx.victim(size=1 << 18, rd_atomic=1, env={"UROCE_CC": "dcqcn", "UROCE_CC_PARAMS": "rpg_max_rate=20"})
    me = v.info
    m = ctx.sn.mark()
    s0 = v.stats()
    read = peer.read_frame(me["qpn"], me["addr"], me["rkey"], 65536)
    atomic = frame(FETCH_ADD, me["qpn"], peer.psn, atomic_eth(me["addr"] + 65536, me["rkey"], 1, 0), ackreq=True)
    peer.send([read, atomic])
    nak = peer.wait_aeth(is_nak(NAK_INV_REQ), psn=peer.psn, timeout=3.0, start=m)
    check(nak is not None, "NAK Invalid Request for a FETCH_ADD beyond max_dest_rd_atomic")
    s1 = v.wait_counter("rd_atomic_over_limit", counter(s0, "rd_atomic_over_limit") + 1)
    check(s1 is not None, "rd_atomic_over_limit counted for the ATOMIC")
    d = v.cmd("dump 65536 8")
    check(d and bytes.fromhex(d["hex"]) == pattern(65536, 8), "the refused FETCH_ADD changed nothing")
    ctx.close(v)


def case_bad_lengths(ctx):
    """WRITEs whose packets disagree with the length their RETH announced: NAK Invalid Request at the first
    packet that disagrees, and nothing written past what was announced (or at all, for a single packet)."""
    variants = [
        # (what, frames(me, psn), PSN the NAK names, bytes from offset 0 that may have been written)
        ("4 packets for a 2-packet RETH length",
         lambda me, psn: [frame(WRITE_FIRST, me["qpn"], psn, reth(me["addr"], me["rkey"], 2 * MTU), b"M" * MTU)] +
         [frame(WRITE_MIDDLE, me["qpn"], psn + i, b"", b"M" * MTU) for i in (1, 2)] +
         [frame(WRITE_LAST, me["qpn"], psn + 3, b"", b"M" * MTU, ackreq=True)], 2, 2 * MTU),
        ("WRITE_ONLY longer than its RETH length",
         lambda me, psn: [frame(WRITE_ONLY, me["qpn"], psn, reth(me["addr"], me["rkey"], 16), b"L" * 64,
                                ackreq=True)], 0, 0),
        ("WRITE_ONLY shorter than its RETH length",
         lambda me, psn: [frame(WRITE_ONLY, me["qpn"], psn, reth(me["addr"], me["rkey"], 640), b"S" * 64,
                                ackreq=True)], 0, 0),
        ("WRITE_MIDDLE shorter than the path MTU",
         lambda me, psn: [frame(WRITE_FIRST, me["qpn"], psn, reth(me["addr"], me["rkey"], 3 * MTU), b"m" * MTU),
                          frame(WRITE_MIDDLE, me["qpn"], psn + 1, b"", b"m" * 100),
                          frame(WRITE_LAST, me["qpn"], psn + 2, b"", b"m" * MTU, ackreq=True)], 1, MTU),
    ]
    for what, build, nak_at, allowed in variants:
        ctx.peer = peer = Peer(ctx)
        v = ctx.victim()
        me = v.info
        m = ctx.sn.mark()
        peer.send(build(me, peer.psn))
        nak = peer.wait_aeth(is_nak(NAK_INV_REQ), start=m)
        check(nak is not None and nak["psn"] == peer.psn + nak_at,
              "%s: NAK Invalid Request at PSN +%d (%s)" % (what, nak_at, nak and nak["psn"] - peer.psn))
        d = v.cmd("dump %d %d" % (allowed, 4 * MTU - allowed))
        check(d and bytes.fromhex(d["hex"]) == pattern(allowed, 4 * MTU - allowed),
              "%s: nothing written past byte %d" % (what, allowed))
        c = v.cmd("check")
        check(c and c["guards_ok"], "%s: guard pages unchanged" % what)
        ctx.close(v)


def case_keys_differ(ctx):
    """Two runs of the same victim: QPN and rkey differ (neither is predictable from the previous run)."""
    a = ctx.victim()
    ia = a.info
    ctx.close(a)
    b = ctx.victim()
    ib = b.info
    ctx.close(b)
    print("  info  run 1: qpn %#x rkey %#x; run 2: qpn %#x rkey %#x" % (ia["qpn"], ia["rkey"], ib["qpn"], ib["rkey"]))
    check(ia["qpn"] != ib["qpn"], "QPNs differ between runs")
    check(ia["rkey"] != ib["rkey"], "rkeys differ between runs")
    for q in (ia["qpn"], ib["qpn"]):
        check(q not in (0, 1, 0xFFFFFF), "QPN %#x is not 0, 1 or 0xFFFFFF" % q)


def veth_stats(ctx):
    """Kernel counters of both veth ends: what was sent, what arrived, what the kernel dropped."""
    out = {}
    for what in ("tx_packets", "tx_dropped"):
        out["va." + what] = int(open("/sys/class/net/%s/statistics/%s" % (ctx.args.iface, what)).read())
    r = subprocess.run(["ip", "netns", "exec", ctx.args.victim_ns, "sh", "-c",
                        "cat /sys/class/net/%s/statistics/rx_packets /sys/class/net/%s/statistics/rx_dropped"
                        % (ctx.args.victim_if, ctx.args.victim_if)], capture_output=True, text=True)
    rx, dropped = (int(x) for x in r.stdout.split())
    out["vv.rx_packets"], out["vv.rx_dropped"] = rx, dropped
    return out


def case_flood(ctx):
    """A time-bounded random flood: valid frames mutated at random (bit flips with and without a fixed-up
    ICRC, truncations, header fields), plus random bytes. The victim stays alive, the guard pages are
    unchanged, and the frames the port received are all accounted for by rx_packets + rx_drops and the
    port layer's own counters (link flow control, oversize)."""
    v = ctx.victim()
    me = v.info
    peer = ctx.peer
    rnd = random.Random(ctx.args.seed)
    base = []
    for i in range(64):
        off = rnd.randrange(0, me["len"] - MTU)
        base += peer.write_frames(me["qpn"], me["addr"] + off, me["rkey"], rnd.randbytes(rnd.randrange(1, 2 * MTU)))
        base.append(peer.read_frame(me["qpn"], me["addr"] + off, me["rkey"], rnd.randrange(1, 4096)))
        base.append(frame(ACK, me["qpn"], rnd.randrange(1 << 24), aeth(rnd.randrange(256), 0)))

    def mutate():
        f = bytearray(rnd.choice(base))
        k = rnd.randrange(6)
        if k == 0:  # random bytes, Ethernet-sized
            return rnd.randbytes(rnd.randrange(14, 1500))
        if k == 1:  # truncated
            return bytes(f[:rnd.randrange(1, len(f))])
        n = rnd.randrange(1, 5)
        for _ in range(n):
            i = rnd.randrange(14, len(f))
            f[i] ^= 1 << rnd.randrange(8)
        if k >= 3:  # flips in headers with the ICRC made right again (when the IP header still parses)
            try:
                f[-4:] = struct.pack("<I", icrc(f, 14))
            except (IndexError, ValueError):
                pass
        return bytes(f)

    pool = [mutate() for _ in range(4096)]
    # On af_packet the victim's kernel keeps IPv4 fragments for reassembly; on memif every frame arrives.
    eaten = [not ctx.memif and kernel_defrag_eats(f) for f in pool]
    bursts = [(pool[i:i + 256], sum(eaten[i:i + 256])) for i in range(0, len(pool), 256)]
    if ctx.memif:
        bursts = [(ctx.sock.write(b), e) for b, e in bursts]

    def send_burst(b):
        """Sends one burst; the number of frames that went out."""
        if ctx.memif:
            return ctx.sock.send_file(b)
        n = 0
        for f in b:
            try:
                ctx.sock.send(f)
                n += 1
            except OSError:  # the kernel refuses some lengths (e.g. runt frames): not sent, not counted
                pass
        return n

    # Frames the port layer takes before the transport sees them: link flow control (PFC, PAUSE, credit
    # updates, each counted whether obeyed, ignored or malformed) and frames no uroce buffer holds.
    port_layer = ("pfc_rx", "pause_rx", "mac_control_rx", "credit_rx", "credit_ignored", "credit_malformed",
                  "rx_oversize", "rx_chain_drop")

    def accounted(s):
        return (counter(s, "rx_packets") + sum(x for k, x in s.items() if k.startswith("rx_drops.")) +
                sum(s.get("port_stats." + k, 0) for k in port_layer))

    s0 = v.stats()
    k0 = None if ctx.memif else veth_stats(ctx)
    sent = defrag = 0
    # Bursts of 256 frames, each sent once the victim has accounted for the previous one (or 1 s passed):
    # the af_packet port's kernel ring holds 512 frames, and what overflows it is lost where no counter of
    # the victim sees it. The flood is bounded by --flood-seconds.
    end = time.monotonic() + ctx.args.flood_seconds
    s1 = s0
    n = 0
    while time.monotonic() < end:
        b, e = bursts[n % len(bursts)]
        n += 1
        sent += send_burst(b)
        defrag += e
        want = accounted(s0) + sent - defrag
        burst_end = time.monotonic() + 1.0
        while v.alive() and accounted(s1) < want and time.monotonic() < burst_end:
            s1 = v.stats()
    s1 = v.stats() or s1
    got = accounted(s1) - accounted(s0)
    if k0:
        k1 = veth_stats(ctx)
        print("  info  kernel: %s" % {k: k1[k] - k0[k] for k in k1})
    rx = s1.get("port_stats.rx_frames", 0) - s0.get("port_stats.rx_frames", 0)
    missed = s1.get("port_stats.rx_missed", 0) - s0.get("port_stats.rx_missed", 0)
    print("  info  sent %d frames in %.1f s (%d IPv4 fragments that the kernel keeps for reassembly); port "
          "received %d (missed %d); rx_packets + rx_drops grew by %d" % (sent, ctx.args.flood_seconds, defrag, rx,
                                                                        missed, got))
    drops = {k: s1[k] - s0.get(k, 0) for k in s1 if s1[k] != s0.get(k, 0)}
    print("  info  moved: %s" % drops)
    check(v.alive(), "victim alive after the flood")
    c = v.cmd("check")
    check(c is not None and c["guards_ok"], "guard pages unchanged (%s)" % c)
    check(got == rx, "every frame the port received is counted (rx_packets + rx_drops + port layer %d == port %d)"
          % (got, rx))
    # Reassembly can complete now and then (a datagram of flipped fragments), hence "about".
    want = sent - defrag
    check(abs(got + missed - want) <= max(5, want // 1000),
          "every frame sent that the kernel passed on reached a counter (%d + missed %d, expected %d)"
          % (got, missed, want))
    ctx.close(v)


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


class Ctx:
    def __init__(self, args):
        self.args = args
        self.sn = Sniffer()
        self.memif = args.via == "memif"
        self.sock = None if self.memif else RawLink(args.iface, self.sn)
        self.peer = Peer(self)
        self.victims = []
        self.n = 0

    def victim(self, env=None, **kw):
        env = dict(env or {})
        if self.memif:
            self.n += 1
            path = os.path.join(os.environ["XDG_RUNTIME_DIR"], "attack-%d.memif" % self.n)
            env["UROCE_PORT"] = "memif:socket=%s,role=server" % path
        v = Victim(self.args, self.peer.qpn, self.peer.psn, env=env, **kw)
        self.victims.append(v)
        if self.memif:
            try:
                v.link = self.sock = InjectorLink(self.args, path, self.sn)
            except RuntimeError:
                v.close()
                raise
        print("  info  victim pid %d qpn %#x rkey %#x addr %#x len %d" %
              (v.info["pid"], v.info["qpn"], v.info["rkey"], v.info["addr"], v.info["len"]), flush=True)
        return v

    def close(self, v):
        alive = v.alive()
        if getattr(v, "link", None):
            v.link.close()
        rc, log = v.close()
        self.victims.remove(v)
        if not alive or rc != 0:
            check(False, "victim exited with %s; its log:\n%s" % (rc, log))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--uroce", required=True)
    ap.add_argument("--victim", required=True)
    ap.add_argument("--victim-ns", required=True)
    ap.add_argument("--victim-if", required=True)
    ap.add_argument("--iface", required=True)
    ap.add_argument("--golden", required=True, help="the directory of icrc_vectors.json")
    ap.add_argument("--via", choices=("af_packet", "memif"), default="af_packet",
                    help="af_packet: veth + raw socket; memif: attack_injector on a memif pair")
    ap.add_argument("--injector", help="attack_injector (for --via memif)")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--flood-seconds", type=float, default=4.0)
    ap.add_argument("cases", nargs="+", choices=sorted(CASES))
    args = ap.parse_args()
    ctx = Ctx(args)
    try:
        for name in args.cases:
            print("== %s" % name, flush=True)
            CURRENT[0] = name
            t = time.monotonic()
            ctx.peer = Peer(ctx)
            try:
                CASES[name](ctx)
            except Exception as e:  # noqa: BLE001 - one broken case must not hide the others' results
                import traceback
                traceback.print_exc()
                check(False, "%s: %s: %s" % (name, type(e).__name__, e))
            for v in list(ctx.victims):  # what a failed case left running
                ctx.close(v)
            print("   (%.1f s)" % (time.monotonic() - t), flush=True)
    finally:
        for v in list(ctx.victims):
            if getattr(v, "link", None):
                v.link.close()
            v.close()
    if FAILURES:
        print("%d check(s) failed (seed %d):" % (len(FAILURES), args.seed))
        for f in FAILURES:
            print("  - " + f.splitlines()[0])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
