#!/usr/bin/env python3
"""Write the seed corpus of fuzz_packets: well-formed packets of every kind
(the fuzzer mutates from there) and a few classic bad ones.  Layout as in
src/net/shm_ring.h: a 32-byte header, extension words, args, payload, in
64-byte slots."""
import os, struct, sys

JOB = 0x5a5a1234
SLOT = 64
EXT = {1: 0, 2: 16, 3: 24, 4: 0}

def pkt(kind=1, tag=1, qid=0, args=(), payload=b"", ext=b"", src=1, job=JOB, flags=0, nslots=None):
    body = ext + b"".join(struct.pack("<Q", a) for a in args) + payload
    n = nslots if nslots is not None else (32 + len(body) + SLOT - 1) // SLOT
    hdr = struct.pack("<QIIIHBBIHBB", 0, job, src, tag, qid, len(args), kind, len(payload), n, flags, 0)
    raw = hdr + body
    return raw + b"\0" * (n * SLOT - len(raw)) if n * SLOT >= len(raw) else raw

def frag(msg, total, off, chunk, args=()):
    return pkt(kind=3, args=args, payload=bytes(range(chunk)) , ext=struct.pack("<QQQ", msg, total, off))

seeds = {
    "short": pkt(args=(1, 2, 3)),
    "medium": pkt(args=(7,), payload=bytes(range(200))),
    "long": pkt(kind=2, args=(9,), ext=struct.pack("<QQ", 128, 512)),
    "queue": pkt(qid=2, tag=5, args=(1,), payload=b"hello"),
    "frags": frag(1, 300, 0, 150, args=(4,)) + frag(1, 300, 150, 150),
    "pad": pkt(kind=4, tag=0, nslots=3) + pkt(args=(1,)),
    "system": pkt(flags=1, tag=0, args=(1, 0)),
    "bad_job": pkt(job=0xdead, args=(1,)) + pkt(args=(2,)),
    "bad_long": pkt(kind=2, ext=struct.pack("<QQ", 4000, 4096)) + pkt(args=(3,)),
    "bad_slots": pkt(args=(1,), nslots=0),
    "mixed": pkt(args=(1,)) + pkt(qid=3, payload=b"x" * 90) + frag(9, 100, 0, 60) + frag(9, 100, 60, 40)
             + pkt(kind=2, ext=struct.pack("<QQ", 0, 64)) + pkt(src=3, tag=7),
}
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
