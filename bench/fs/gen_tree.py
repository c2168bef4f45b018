#!/usr/bin/env python3
"""gen_tree.py: a source-like tree of N files for bench/fs/run.sh when no kernel tarball is
there.  Directories of about 16 entries, 3-4 levels deep, file sizes spread like a kernel
tree's (median ~6 KiB, a few of 100+ KiB), text made of lines taken from real files (this
repository's sources by default), and, as a kernel tree has, a few symlinks and hard links.
Deterministic for a given seed and source set.

    gen_tree.py OUTDIR N [--seed S] [--text DIR ...]
"""
import argparse
import math
import os
import random
import sys

EXTS = (".c", ".h", ".md", ".pna", ".sh", ".def", ".txt", ".S", ".rst")


def text_lines(dirs):
    lines = []
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith(".") and not s.startswith("build"))
            for f in sorted(files):
                if not f.endswith(EXTS):
                    continue
                try:
                    with open(os.path.join(root, f), "r", encoding="utf-8", errors="strict") as fh:
                        lines.extend(fh.read().splitlines(keepends=True))
                except (UnicodeDecodeError, OSError):
                    continue
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--text", action="append", default=[])
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    src = a.text or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")]
    lines = text_lines(src)
    if len(lines) < 100:
        sys.exit("gen_tree.py: too little text in %s" % " ".join(src))
    names = sorted({w for l in lines for w in l.replace("(", " ").replace(")", " ").split()
                    if w.isidentifier() and 3 <= len(w) <= 20})
    if len(names) < 50:
        names = ["f%d" % i for i in range(1000)]

    # directories: a fan-out of ~16 entries, about one directory per 12 files
    n_dirs = max(1, a.n // 12)
    dirs = [""]
    while len(dirs) < n_dirs:
        parent = rnd.choice(dirs[: max(1, len(dirs) // 2 + 1)])
        if parent.count("/") >= 4:
            continue
        d = os.path.join(parent, rnd.choice(names).lower()) if parent else rnd.choice(names).lower()
        if d not in dirs:
            dirs.append(d)
    for d in dirs:
        os.makedirs(os.path.join(a.outdir, d), exist_ok=True)

    files = []
    used = set()
    total = 0
    while len(files) < a.n:
        d = rnd.choice(dirs)
        name = rnd.choice(names).lower() + rnd.choice(EXTS[:6])
        p = os.path.join(d, name)
        if p in used or p in dirs:
            continue
        used.add(p)
        # lognormal: median e^8.7 ~ 6 KiB, capped at 512 KiB
        size = min(512 << 10, int(math.exp(rnd.gauss(8.7, 1.2))))
        out = []
        n = 0
        i = rnd.randrange(len(lines))
        while n < size:
            l = lines[i % len(lines)]
            out.append(l)
            n += len(l)
            i += 1
            if rnd.random() < 0.02:
                i = rnd.randrange(len(lines))
        data = "".join(out)
        with open(os.path.join(a.outdir, p), "w") as fh:
            fh.write(data)
        total += len(data.encode())
        files.append(p)

    # a kernel tree has a few symlinks (dts includes, tools) and hard links: ~1 in 500 each
    n_links = max(2, a.n // 500)
    for k in range(n_links):
        target = rnd.choice(files)
        d = rnd.choice(dirs)
        link = os.path.join(d, "link-%d" % k)
        rel = os.path.relpath(target, d if d else ".")
        os.symlink(rel, os.path.join(a.outdir, link))
        hard = os.path.join(d, "hard-%d" % k)
        os.link(os.path.join(a.outdir, rnd.choice(files)), os.path.join(a.outdir, hard))
    print("gen_tree.py: %d files (%d MiB), %d directories, %d symlinks, %d hard links"
          % (len(files), total >> 20, len(dirs), n_links, n_links))


if __name__ == "__main__":
    main()
