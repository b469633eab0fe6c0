// Package items reads and writes streams of NDPP items given by their
// vectors — the input of the online MAP algorithms when the items come from
// a file, a pipe or another process rather than from a model in memory
// (package stream's ItemSource) — and generates the synthetic stream of a
// seeded random model without holding it.
//
// # Formats
//
// An item (ndpp.Item) is a row [v; b; δ]: v and b of length d (b omitted
// when the kernel has B = V), δ (the diagonal entry of L = D + VᵀV + BᵀCB,
// see docs/math.md in the repository) present exactly when the kernel has
// a diagonal. The kernel itself (ndpp.Kernel: d, C, B = V, diagonal) is
// given once, e.g. read from a model file by npz.LoadKernel.
//
//   - NPY: a 2-D float64 or float32 array (either byte order, C order) of
//     shape (n, w), w the row width above, read sequentially after its
//     header, so that it works on a pipe; item ids are the 0-based row
//     positions, and n is known from the header (Reader.Len).
//   - Text: one item per line, "id v_1 … v_d b_1 … b_d [δ]", fields
//     separated by whitespace or by commas (then with optional spaces);
//     blank lines and lines starting with '#' are skipped; ids are
//     integers ≥ 0. n is not known in advance (Len is −1).
//
// Either may be gzip-compressed: the reader detects it, and the format, by
// the first bytes of the stream. A bad row — wrong length, a non-finite or
// unparsable value, a negative δ, values whose scale would overflow the
// kernel's (ndpp.CheckItem), a truncated NPY row or bytes after the
// last one — is an error that names the row (NPY) or line (text), returned
// after the valid rows before it; nothing is skipped silently. The reader
// holds one chunk of rows at a time: memory does not grow with n.
//
// # Reading ahead
//
// With Options.ReadAhead, a goroutine of the reader's own reads,
// decompresses, parses and validates chunks of rows ahead of the caller,
// into a fixed pool of reused chunks (memory O(ReadAhead·Chunk·w)), so that
// on a machine with a second core the decoding of a stream overlaps its
// scoring. Next returns the same items and errors either way (tested);
// Close stops the goroutine when the caller stops before the end.
//
// # Synthetic streams
//
// Synthetic yields the items of ndpp.Random(n, d, seed, {Diag}) in order,
// bit for bit, holding O(d²) state: it replays the random stream of Random
// from three positions (the items' v, their b, and their δ). Reaching them
// costs 2·n·d draws, so NewSynthetic takes a context and stops when it is
// done. Writer writes items in either format as they come.
package items
