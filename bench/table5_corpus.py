"""More public-domain English text for `ablate`'s Table 5 miniature, from Debian's packages.

    python bench/table5_corpus.py --output_dir=books_extra

Writes the King James Bible (Debian's `bible-kjv` and `bible-kjv-text`: one file
per book, each chapter under a "CHAPTER n" heading, one verse a paragraph,
4.4 MB) and Jane Austen's novels but Pride and Prejudice, which the shared
corpus holds already (`r-cran-janeaustenr`'s data: Emma, Mansfield Park,
Northanger Abbey, Persuasion, Sense and Sensibility, 3.3 MB), as plain text
that `--input_format=prose` reads. The texts are in the public domain; the
packages are fetched with `apt-get download` and unpacked with `dpkg-deb`
into a scratch folder (nothing is installed). Reading R's data file takes
the `rdata` package (`pip install rdata`, a bench requirement).

Why: the SOP half of Table 5 needs more distinct text than the ten shared
books (README, "Table 5 in miniature"); these add 7.4 MB to their 5.2 MB.
"""

import argparse
import collections
import glob
import gzip
import os
import re
import subprocess
import sys
import tempfile
import warnings
import zlib

KJV_PACKAGES = ("bible-kjv", "bible-kjv-text")
AUSTEN_PACKAGE = "r-cran-janeaustenr"
# In the shared corpus already (pg1342.txt).
AUSTEN_SKIPPED = ("prideprejudice",)
# `bible`'s reference of a verse: book abbreviation, chapter, verse, text.
VERSE = re.compile(r"(\d?[A-Za-z]+)(\d+):(\d+) (.*)")


def unpack(packages, scratch):
    """`apt-get download` and `dpkg-deb -x` each package into `scratch/root`."""
    root = os.path.join(scratch, "root")
    subprocess.run(["apt-get", "download", *packages], cwd=scratch, check=True,
                   stdout=subprocess.DEVNULL)
    for deb in glob.glob(os.path.join(scratch, "*.deb")):
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    return root


def write_kjv(root, output_dir):
    """One file per book of the KJV; returns the files written."""
    program = os.path.join(root, "usr", "bin", "bible")
    text = subprocess.run([program, "-p", os.path.join(root, "usr", "lib"), "-f",
                           "Gen1:1-Rev22:21"], capture_output=True, text=True, check=True).stdout
    books = collections.OrderedDict()
    for line in text.splitlines():
        match = VERSE.match(line)
        if match:
            book, chapter, _, verse = match.groups()
            books.setdefault(book, collections.OrderedDict()).setdefault(int(chapter), []).append(
                verse)
    written = []
    for i, (book, chapters) in enumerate(books.items()):
        path = os.path.join(output_dir, f"kjv_{i:02d}_{book}.txt")
        with open(path, "w", encoding="utf-8") as f:
            for chapter, verses in chapters.items():
                f.write(f"CHAPTER {chapter}\n\n" + "".join(v + "\n\n" for v in verses))
        written.append(path)
    return written


def _lazy_load_object(rdb, offset, length):
    """One object of an R lazy-load database: a 4-byte length, then a zlib stream
    (or, after a type byte, an xz, bzip2 or uncompressed one)."""
    import bz2
    import lzma

    block = rdb[offset:offset + length]
    kind, body = block[4:5], block[5:]
    if kind == b"Z":
        return lzma.decompress(body)
    if kind == b"2":
        return bz2.decompress(body)
    if kind == b"0":
        return body
    return zlib.decompress(block[4:])


def write_austen(root, output_dir):
    """One file per novel of `janeaustenr` (its lines, as the package keeps them)."""
    try:
        import rdata
    except ImportError:
        sys.exit("error: reading R's data file takes the rdata package: pip install rdata")
    # Objects of a lazy-load database have no RDS header; rdata says it assumed one.
    warnings.filterwarnings("ignore", message="Unknown file type", module="rdata")
    data = os.path.join(root, "usr", "lib", "R", "site-library", "janeaustenr", "data", "Rdata")
    with open(data + ".rdx", "rb") as f:
        index = rdata.conversion.convert(rdata.parser.parse_data(gzip.decompress(f.read())))
    with open(data + ".rdb", "rb") as f:
        rdb = f.read()
    written = []
    for name, (offset, length) in index["variables"].items():
        if str(name) in AUSTEN_SKIPPED:
            continue
        lines = rdata.conversion.convert(rdata.parser.parse_data(
            _lazy_load_object(rdb, int(offset), int(length))))
        path = os.path.join(output_dir, f"austen_{name}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(str(line) for line in lines) + "\n")
        written.append(path)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output_dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        root = unpack((*KJV_PACKAGES, AUSTEN_PACKAGE), scratch)
        written = write_kjv(root, args.output_dir) + write_austen(root, args.output_dir)
    size = sum(os.path.getsize(p) for p in written)
    print(f"{len(written)} files, {size / 1e6:.1f} MB in {args.output_dir}")


if __name__ == "__main__":
    main()
