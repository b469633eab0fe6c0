// Package outfile is ndpp's one policy for the files its commands and
// library write: model files (ndpp/npz), learner checkpoints (learn), and
// every file output of ndpp-bench and ndpp-beam.
//
// The policy, by what the path names:
//
//   - A regular file, new or existing, is replaced atomically and only on
//     success: the content goes to a temporary file ".NAME.tmp-DIGITS" in
//     the same directory, is fsynced and renamed over the file, so that a
//     reader, or the file system after a crash, sees the old file or the
//     complete new one, never a partial write. On failure the temporary
//     file is removed and the file is untouched; an existing file keeps
//     its permission bits (a new one gets 0644). Temporary files that a
//     killed writer left behind (older than StaleAge) are removed by the
//     next write of the same file. The other names of a hard-linked file
//     keep the old content (the rename gives the name a new file).
//   - A symbolic link is kept: the file it leads to (links followed to the
//     end, a relative target taken from the link's directory) is replaced
//     as above, the temporary file written next to it. A dangling link's
//     target is created.
//   - A device, a FIFO or a socket is written through: opened write-only,
//     never created, truncated by the open, or replaced by a rename
//     (/dev/null stays a device, a named pipe's reader gets the bytes);
//     except for an output that must be a regular file (File.Regular,
//     CheckRegular: a checkpoint rewritten during a run and read back),
//     for which a command refuses them before any work, as it refuses
//     "-".
//   - A directory is an error.
//   - "-" (Std) is standard output, for the outputs a command can stream
//     (WriteStd, Set), and standard input for its inputs; a
//     command refuses it, with its reason, where the file is needed (a
//     checkpoint rewritten during a run, a model read by seeking, a
//     directory). Commands whose report goes to standard output send it
//     to standard error when an output takes standard output.
//
// Before any work a command checks its files (Check): an output that is
// one of its inputs (the same path once symbolic links are resolved, a
// hard link of it, or a file an input's glob matches) or another of its
// outputs is a usage error, so is "-" named by two inputs or two outputs,
// and every output must be writable.
//
// Prepare and Commit split Write in two, so that a program with several
// outputs writes all of them before it replaces any (Set, CommitAll).
// The atomicity is that of rename(2) on POSIX file systems within one
// directory; the directory is synced after the rename where the platform
// allows it, so that the new name is durable too.
package outfile
