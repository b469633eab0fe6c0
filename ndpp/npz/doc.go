// Package npz reads and writes ndpp models as NumPy .npz files, the format
// numpy.savez writes and numpy.load reads, so that models move freely
// between Go and PyTorch/NumPy reference code: Load and Save for files (Save
// replaces a file atomically), Read and Write for archives in memory or on
// other storage.
//
// # Arrays
//
// An .npz file is a zip archive with one .npy array per entry. A model is
//
//	V      float64, n×d   row i is vᵢ (the embedding-table layout)
//	B      float64, n×d   row i is bᵢ (optional when reading: absent means B = V)
//	C      float64, d×d   skew-symmetric
//	D      float64, (n,)  optional diagonal δ ≥ 0 of L = D + VᵀV + BᵀCB (absent: D = 0)
//	ids    int64, (n,)    optional external item ids (ndpp.Model.IDs)
//	vocab  uint8, (len,)  optional item tokens (ndpp.Model.Vocab) joined by '\n'
//
// ids and vocab are how the model records which token each row stands for;
// package baskets maps the tokens of data files to rows with them.
//
// # NPY
//
// An .npy stream is the magic string "\x93NUMPY", a major and a minor
// format version byte, the header length (uint16 little-endian in version
// 1.0, uint32 in 2.0 and 3.0), the header — a Python dict literal with the
// keys 'descr' (dtype such as '<f8'), 'fortran_order' and 'shape', padded
// with spaces and ended by '\n' — and then the raw values. Reading follows
// numpy.lib.format: versions 1.0 to 3.0, 4- and 8-byte floats and integers
// of any width in either byte order, C or Fortran order; malformed headers,
// unsupported dtypes, and data shorter or longer than the shape are errors
// that name the array and the problem. Read never allocates more than the
// data present.
//
// # Written bytes
//
// The bytes Write produces depend only on the model, and they are the bytes
// earlier versions wrote through github.com/sbinet/npyio (the tests compare
// with headers and files those versions wrote): zip entries V.npy, B.npy,
// C.npy, then D.npy, ids.npy and vocab.npy when present, stored (not deflated)
// like numpy.savez's, with zero timestamps; NPY format version 2.0 headers
// whose dict is padded with (12 + len(dict) + 1) mod 16 spaces before the
// '\n' (numpy pads to a multiple of 64 bytes when it writes, and does not
// require it when it reads); values little-endian in row-major order. B is
// written also for a shared model; a file whose B equals V bit for bit
// loads as shared.
//
// # References
//
//   - NumPy Enhancement Proposal 1, "A simple file format for NumPy arrays",
//     https://numpy.org/neps/nep-0001-npy-format.html, and the module
//     numpy.lib.format that implements it.
//   - PKWARE, APPNOTE.TXT, the .ZIP file format specification (read and
//     written with archive/zip).
package npz
