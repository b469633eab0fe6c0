#!/usr/bin/env python3
"""Read an .npz file the way numpy.load does, with the standard library only,
and print its arrays as JSON: {"V": {"shape": [n, d], "descr": "<f8",
"fortran_order": false, "data": [...]}, ...}.

It applies numpy.lib.format's header checks (magic string, versions 1.0-3.0,
the header is a Python literal dict with exactly the keys 'descr',
'fortran_order' and 'shape', shape a tuple of non-negative ints, data length
matching the shape) and so tells whether numpy would accept a file written
by npz.Save. ndpp/npz/npz_test.go runs it when python3 is installed.

Usage: python3 testdata/gen/npz_check.py FILE.npz
"""
import ast
import json
import struct
import sys
import zipfile

MAGIC = b"\x93NUMPY"
FORMATS = {"f8": "d", "f4": "f", "i8": "q", "i4": "i", "u1": "B", "i1": "b"}


def read_npy(raw):
    if raw[:6] != MAGIC:
        raise ValueError("bad magic")
    major, minor = raw[6], raw[7]
    if (major, minor) == (1, 0):
        (hlen,), off = struct.unpack("<H", raw[8:10]), 10
    elif (major, minor) in ((2, 0), (3, 0)):
        (hlen,), off = struct.unpack("<I", raw[8:12]), 12
    else:
        raise ValueError("unsupported version %d.%d" % (major, minor))
    header = raw[off:off + hlen].decode("utf8" if major == 3 else "latin1")
    d = ast.literal_eval(header)
    if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
        raise ValueError("header is not a dict with the expected keys: %r" % (header,))
    shape, fortran, descr = d["shape"], d["fortran_order"], d["descr"]
    if not isinstance(shape, tuple) or not all(isinstance(x, int) and x >= 0 for x in shape):
        raise ValueError("shape is not valid: %r" % (shape,))
    if not isinstance(fortran, bool):
        raise ValueError("fortran_order is not a bool: %r" % (fortran,))
    order = {"<": "<", "|": "<", ">": ">"}[descr[0]]
    code = FORMATS[descr[1:]]
    count = 1
    for x in shape:
        count *= x
    data = raw[off + hlen:]
    if len(data) != count * struct.calcsize(code):
        raise ValueError("data has %d bytes for shape %r" % (len(data), shape))
    values = list(struct.unpack(order + code * count, data))
    return {"shape": list(shape), "descr": descr, "fortran_order": fortran, "data": values}


def main(path):
    out = {}
    with zipfile.ZipFile(path) as zf:
        if zf.testzip() is not None:
            raise ValueError("bad CRC")
        for name in zf.namelist():
            key = name[:-4] if name.endswith(".npy") else name
            out[key] = read_npy(zf.read(name))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: npz_check.py FILE.npz")
    main(sys.argv[1])
