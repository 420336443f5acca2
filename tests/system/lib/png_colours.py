#!/usr/bin/env python3
"""png_colours.py PNG [RRGGBB...]: print "WIDTH HEIGHT COLOURS INKED FOUND" for an 8-bit
RGB(A) PNG: its size, how many distinct colours it has, the fraction of pixels that are not
the background (the top-left pixel's colour) and how many of the given colours occur. The browser tests use it to tell a rendered page from a blank
or broken one. Standard library only (zlib); handles the five PNG row filters."""
import struct
import sys
import zlib


def rows(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        sys.exit(f"{path}: only 8-bit RGB/RGBA, not interlaced (got depth {depth}, type {ctype})")
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev = zlib.decompress(idat), w * bpp, bytearray(w * bpp)
    for y in range(h):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ft == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif ft == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif ft == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif ft == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        yield w, h, bpp, line
        prev = line


def main():
    colours, inked, bg, total = set(), 0, None, 0
    for w, h, bpp, line in rows(sys.argv[1]):
        px = [bytes(line[i:i + 3]) for i in range(0, len(line), bpp)]
        bg = px[0] if bg is None else bg
        colours.update(px)
        inked += sum(p != bg for p in px)
        total += len(px)
    found = sum(bytes.fromhex(c.lstrip("#")) in colours for c in sys.argv[2:])
    print(w, h, len(colours), f"{inked / total:.4f}", found)


main()
