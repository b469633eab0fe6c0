// Package baskets reads basket data — sets of items bought, registered or
// chosen together — in one streaming pass, and splits it the way the NDPP
// papers evaluate. A basket is a slice of distinct item rows (0-based model
// rows).
//
// # Formats
//
// The line format has one basket per line, tokens separated by spaces,
// commas or tabs (NewLineReader, Open, ReadFile). Tokens are integer ids
// (0- or 1-based, LineOptions.Base) or, with a vocabulary, any string
// without separators. This is the format of the Amazon Baby Registry files
// used by Gartrell et al. and Reddy et al. (1-based ids, one registry per
// line).
//
// A transaction CSV has a header and one row per (basket, item) pair, the
// rows of a basket contiguous, as in invoice exports (NewCSVReader,
// OpenCSV); the basket and item columns are named by their headers.
//
// Files may be gzip-compressed (detected by their magic bytes). Duplicate
// items in a basket are removed, lines or rows without items are skipped,
// and both are counted (Stats); a token that is not an item is an error
// naming the file, the line and the token. A Reader yields one basket at a
// time, so files larger than memory can feed an online learner (it is a
// Source, the stream every learner and baseline reads).
//
// # Reading ahead
//
// With the ReadAhead option (LineOptions, CSVOptions), a Reader reads and
// parses its file on a goroutine of its own, ahead of Next, into a fixed
// pool of chunks, as package items reads item streams; NewReadAhead does
// the same for any Source (a chain of a Reader, a HoldOut and a counter,
// as ndpp-bench learn streams a file to the online learner). Both are
// Peekers: a learner sees the next basket while it learns from the
// current one. Nothing else in the library reads ahead.
//
// # Vocabularies
//
// Tokens that are not integer rows are mapped through an *ndpp.Vocab: the
// model records it (ndpp.WithVocab, saved in its .npz file by package npz),
// so that the same tokens map to the same rows when the model is used on
// other files. With Grow, the reader adds unseen tokens in order of first
// appearance, which is how a vocabulary is built from training data.
//
// # Held-out baskets
//
// HoldOut holds out validation and test baskets of fixed sizes as a stream
// is read, by seeded reservoir sampling (Vitter's algorithm R): one pass,
// memory for the held-out baskets only, a uniformly random split, and every
// other basket passed on once, so a one-pass learner can read a file larger
// than memory or a pipe. HoldOutSlice gives the same split of in-memory
// baskets, so online and offline learners are evaluated on the same
// baskets. It is the hold-out rule of every command (package eval). The
// papers use 300 validation and 2000 test baskets.
//
// # References
//
//   - J. S. Vitter. Random Sampling with a Reservoir. ACM Transactions on
//     Mathematical Software 11(1), 1985.
//   - J. Gillenwater, A. Kulesza, E. Fox, B. Taskar. Expectation-Maximization
//     for Learning Determinantal Point Processes. NIPS 2014 (the Amazon Baby
//     Registry data).
//   - M. Gartrell, I. Han, E. Dohmatob, J. Gillenwater, V.-E. Brunel.
//     Scalable Learning and MAP Inference for Nonsymmetric Determinantal
//     Point Processes. ICLR 2021 (the files and the evaluation split).
//   - RFC 4180, Common Format and MIME Type for Comma-Separated Values
//     (CSV) Files (read with encoding/csv).
package baskets
