#!/usr/bin/env python3
"""Write testdata/numpy-model.npz exactly as numpy.savez(path, V=V, B=B, C=C)
would, using only the Python standard library (numpy is not needed).

numpy.savez opens a zipfile.ZipFile(path, 'w', ZIP_STORED, allowZip64=True)
and, for each keyword argument, writes the entry '<name>.npy' with
zipf.open(name, 'w', force_zip64=True) in the NPY 1.0 format:

  b'\\x93NUMPY' 0x01 0x00  <uint16 LE header length>
  "{'descr': '<f8', 'fortran_order': False, 'shape': (12, 3), }"
  + spare spaces (21 - len(repr(shape[0])), room to grow the first axis)
  + spaces and a final '\\n' so that 10 + header length is a multiple of 64
  then the float64 little-endian data in C (row-major) order.

The only difference from a real numpy.savez call is the entries' timestamp,
fixed here to 1980-01-01 so that the output is reproducible.

The values are simple dyadic fractions (exact in float64) that
ndpp/npz/npz_test.go recomputes and compares bit for bit:

  V[i][k] = (i - 5.5)/4 + k/8               i < 12, k < 3
  B[i][k] = ((7*i + 3*k) % 11 - 5)/16
  C       = [[0, 0.5, -0.25], [-0.5, 0, 1.5], [0.25, -1.5, 0]]

Usage: python3 testdata/gen/numpy_savez.py testdata/numpy-model.npz
"""
import struct
import sys
import zipfile

MAGIC = b"\x93NUMPY"
ARRAY_ALIGN = 64
GROWTH_AXIS_MAX_DIGITS = 21


def npy_bytes(rows):
    """NPY 1.0 encoding of a 2-D float64 array given as a list of rows."""
    shape = (len(rows), len(rows[0]))
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': %r, }" % (shape,)
    header += " " * (GROWTH_AXIS_MAX_DIGITS - len(repr(shape[0])))
    raw = header.encode("latin1")
    hlen = len(raw) + 1
    padlen = ARRAY_ALIGN - ((len(MAGIC) + 2 + 2 + hlen) % ARRAY_ALIGN)
    out = MAGIC + bytes([1, 0]) + struct.pack("<H", hlen + padlen)
    out += raw + b" " * padlen + b"\n"
    for row in rows:
        out += struct.pack("<%dd" % len(row), *row)
    return out


def arrays():
    n, d = 12, 3
    V = [[(i - 5.5) / 4 + k / 8 for k in range(d)] for i in range(n)]
    B = [[((7 * i + 3 * k) % 11 - 5) / 16 for k in range(d)] for i in range(n)]
    C = [[0.0, 0.5, -0.25], [-0.5, 0.0, 1.5], [0.25, -1.5, 0.0]]
    return {"V": V, "B": B, "C": C}


def savez(path, named):
    with zipfile.ZipFile(path, mode="w", compression=zipfile.ZIP_STORED,
                         allowZip64=True) as zf:
        for key, rows in named.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            with zf.open(info, "w", force_zip64=True) as fid:
                fid.write(npy_bytes(rows))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: numpy_savez.py OUT.npz")
    savez(sys.argv[1], arrays())
