#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""craft_segment.py KIND OUT [PID] - write a hostile statistics file.

The layout is src/stats/format.h, version 5 (a header of 328 bytes, 64-byte
thread slots, 264-byte sites, 576-byte counter records). Every file keeps the
checks a careless reader would make (magic, version, record sizes, regions
inside the file) and attacks the reader's work instead:

  hang       65536 threads x 65536 sites in the header, 2 TB sparse: loops
             over 2^32 records of holes (the issue-11 reproduction)
  hangdump   a dump claiming 2^20 sites, sparse
  oddseq     the real limits (128 x 256), every slot live, every seqlock odd
             for ever, every record written (19 MB of data): the reader must
             not spin on each record
  shared     the shared slot (header shared_slot) outside the thread table
  short      a header whose regions are larger than the file (file_size lies)

PID (default 4242) goes into the header; a segment's file name is PID.seg.
"""
import os
import struct
import sys

HDR = struct.Struct("<8sIIIIIIIIQQQQQQQIIdII16s128sQII16sQIIQQ")
assert HDR.size == 328
THREAD = struct.Struct("<IIQQQ32x")  # state, tid, seq, cur_site, shared
assert THREAD.size == 64
COUNTERS = 576
SITE = 264
PAGE = 4096


def page(n):
    return (n + PAGE - 1) & ~(PAGE - 1)


def header(mt, ms, pid, thr, sites, uc, mat, size, nthreads, nsites, is_dump=0, shared_slot=0,
           nuc=0, max_uc=64):
    return HDR.pack(b"TXKITSG1", 5, HDR.size, COUNTERS, THREAD.size, SITE, mt, ms, os.getuid(), pid,
                    1, 1, thr, sites, mat, size, nthreads, nsites, 0.4, is_dump, 0, b"crafted",
                    b"craft_segment.py", uc, max_uc, nuc, b"backoff", 0, shared_slot, 0, 0, 0)


def layout(mt, ms):
    thr = page(HDR.size)
    sites = page(thr + mt * THREAD.size)
    uc = page(sites + ms * SITE)
    mat = page(uc + 64 * 64)
    return thr, sites, uc, mat, mat + mt * ms * COUNTERS


def main():
    kind, out = sys.argv[1], sys.argv[2]
    pid = int(sys.argv[3]) if len(sys.argv) > 3 else 4242
    with open(out, "wb") as f:
        if kind in ("hang", "hangdump"):
            mt, ms = (65536, 65536) if kind == "hang" else (1, 1 << 20)
            thr, sites, uc, mat, size = layout(mt, ms)
            f.write(header(mt, ms, pid, thr, sites, uc, mat, size, mt, ms, is_dump=int(kind == "hangdump")))
            f.seek(thr)
            f.write(THREAD.pack(1, 1, 0, 0, 0) * min(mt, 65536))
            f.truncate(size)  # the rest: holes
        elif kind == "oddseq":
            mt, ms = 128, 256
            thr, sites, uc, mat, size = layout(mt, ms)
            f.write(header(mt, ms, pid, thr, sites, uc, mat, size, mt, ms, shared_slot=mt - 1))
            f.seek(thr)
            f.write(THREAD.pack(1, 1, 1, 0, 1) * mt)  # live, seq odd
            f.seek(sites)
            f.write(struct.pack("<II", 1, 1).ljust(SITE, b"\0") * ms)
            f.seek(mat)
            rec = struct.pack("<Q", 1) + bytes(COUNTERS - 8)  # one transaction each
            f.write(rec * (mt * ms))
        elif kind == "shared":
            mt, ms = 128, 256
            thr, sites, uc, mat, size = layout(mt, ms)
            f.write(header(mt, ms, pid, thr, sites, uc, mat, size, 1, 1, shared_slot=500))
            f.truncate(size)
        elif kind == "short":
            mt, ms = 128, 256
            thr, sites, uc, mat, size = layout(mt, ms)
            f.write(header(mt, ms, pid, thr, sites, uc, mat, size, 1, 1))
            f.truncate(size // 3)
        else:
            sys.exit("unknown kind " + kind)


main()
