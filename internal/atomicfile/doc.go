// Package atomicfile replaces files atomically: Write streams new content
// into a temporary file next to the target, fsyncs it and renames it over
// the target, so that a reader, or the file system after a crash, sees the
// old file or the complete new one and never a partial write. ndpp writes
// model files (ndpp/npz), learner checkpoints (learn) and the command's
// outputs (cmd/ndpp-bench) through it.
//
// Prepare and Commit split Write in two, so that a program with several
// outputs writes all of them before it replaces any (CommitAll), and
// CheckWritable tells before any work whether a target can be written.
// Temporary files that a killed writer left behind (".NAME.tmp-DIGITS",
// older than StaleAge) are removed by the next write of NAME.
//
// The guarantee is that of rename(2) on POSIX file systems, which replaces
// the target atomically when source and target are in the same directory.
// The directory is synced after the rename where the platform allows it, so
// that the new name is durable too.
package atomicfile
