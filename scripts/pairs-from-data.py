#!/usr/bin/env python3
"""Writes two sentence-pair files, in the layout a user's own pairs file has, from data that
scripts/fetch-data.sh fetched: what the README's `chi train --model seq2seq` examples train on.

* bible.tsv: `English<TAB>Spanish`, one verse (or book/chapter heading) per line, KJV and Reina-
  Valera 1909 aligned slot by slot by their shared versification (SWORD zText modules: `.bzs`
  block index of 12-byte `u32` offset / compressed size / size, `.bzv` verse index of 10-byte
  `u32` block / `u32` offset / `u16` size, `.bzz` zlib blocks; OSIS tags and `<note>` text
  dropped, whitespace collapsed; a pair with an empty side left out).
* cmudict.tsv: a `word<TAB>phonemes` header, then each word's first pronunciation.

Usage: scripts/pairs-from-data.py [DATA] [OUT]   (defaults: $CHI_DATA or <repo>/data, and .)
Deterministic: the same data gives the same bytes.
"""
import os
import re
import struct
import sys
import zlib

repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
data = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CHI_DATA", os.path.join(repo, "data"))
out = sys.argv[2] if len(sys.argv) > 2 else "."


def ztext(folder, testament):
    """Every slot of one testament of a zText module, as plain text ('' for an empty slot)."""
    def read(ext):
        with open(os.path.join(folder, f"{testament}.{ext}"), "rb") as f:
            return f.read()
    bzs, bzv, bzz = read("bzs"), read("bzv"), read("bzz")
    blocks, slots = {}, []
    for i in range(len(bzv) // 10):
        block, offset, size = struct.unpack("<IIH", bzv[10 * i:10 * i + 10])
        if size == 0:
            slots.append("")
            continue
        if block not in blocks:
            start, length, _ = struct.unpack("<III", bzs[12 * block:12 * block + 12])
            blocks[block] = zlib.decompress(bzz[start:start + length])
        text = blocks[block][offset:offset + size].decode("utf-8", "replace")
        text = re.sub(r"<note\b.*?</note>", "", text, flags=re.S)
        slots.append(" ".join(re.sub(r"<[^>]*>", "", text).split()))
    return slots


def bible():
    path, n = os.path.join(out, "bible.tsv"), 0
    with open(path, "w", encoding="utf-8") as f:
        for testament in ("ot", "nt"):
            en = ztext(os.path.join(data, "bible", "kjv"), testament)
            es = ztext(os.path.join(data, "bible", "rv1909"), testament)
            for a, b in zip(en, es):
                if a and b and "\t" not in a + b:
                    f.write(f"{a}\t{b}\n")
                    n += 1
    print(f"{path}: {n} pairs")


def cmudict():
    path, n = os.path.join(out, "cmudict.tsv"), 0
    with open(os.path.join(data, "cmudict", "cmudict.dict"), encoding="utf-8") as src, open(path, "w", encoding="utf-8") as f:
        f.write("word\tphonemes\n")
        for line in src:
            fields = line.split("#")[0].split()
            if len(fields) >= 2 and "(" not in fields[0]:
                f.write(f"{fields[0]}\t{' '.join(fields[1:])}\n")
                n += 1
    print(f"{path}: {n} pairs")


os.makedirs(out, exist_ok=True)
bible()
cmudict()
