// Package pipelines runs ndpp's batch work on Apache Beam: scoring basket
// files with a model (Score), the offline learner's full-batch mode with
// its per-basket gradient terms summed by a CombineFn (Learn), and MAP
// inference over item files by composable core-sets (Map). The
// pipelines are written for any Beam runner; they were run in process on
// Prism and on a Prism job server with workers in separate processes
// (beam/README.md: Flink, Spark and Dataflow never were). They compute
// what the core computes on one machine: Score writes the lines of
// `ndpp-bench score` (naming each line's file when there are several),
// Learn the parameters of learn.TrainOffline
// with OfflineOptions.FullBatch (to the rounding of its sums' order).
//
// # Input
//
// Basket files are named by a glob on any Beam filesystem registered in
// the binary (ndpp-beam has local paths and gs://). Files are
// read in the order of their sorted names, in the line format or as a
// transaction CSV (BasketFormat), gzip detected by its magic bytes, by the
// core's readers (package baskets), so that tokens, line numbers and
// errors are the core's.
//
// # Shards and tasks
//
// Work is split into read tasks: each file into Shards parts. A part of a
// line-format file is every Shards-th block of ChunkSize lines; its task
// reads the file and hands the core's reader the other parts' lines blanked
// (so line numbers stay those of the file); a part of a CSV file is every
// Shards-th block of ChunkSize baskets, its task parsing the whole file. A
// task's baskets travel in chunks of at most ChunkSize baskets keyed by
// the part, which is the shard: Score writes one output file per shard
// (empty when the shard holds no basket),
// Learn's CombineFn sums one GradSum per shard and then the shards' sums.
// The tasks pass through a Reshuffle, so that a runner spreads them over
// its workers. Baskets are never grouped (GroupByKey holds its input in
// memory on Prism): Learn only combines, and Score groups its output text
// by shard to write it. No stateful DoFn or timer is used.
//
// # Learning
//
// Learn runs one pipeline for the vocabulary (each task's tokens with
// their first appearance and basket counts, merged by a CombineFn; rows in
// order of first appearance over the files in name order, as the core's
// readers give them) and one per step: a ParDo computes the GradSum of
// each chunk at the current parameters (learn.BasketGradient), each task
// adds its chunks' sums, a CombineFn adds the tasks' sums per shard and in
// total, and the driver takes the step with learn.FullBatch (the
// normaliser's and the regulariser's terms, Adam). The result is
// learn.TrainOffline's full-batch mode on the same baskets, up to the
// order of the additions.
//
// # MAP inference
//
// Map reads item files (package items: NPY or text, gzip detected) with
// the kernel of a model file (npz.LoadKernel), checked in the driver along
// with the files' headers. Ids are those of the reader: for NPY the row
// position plus the rows of the files before it in name order (so the ids
// of several NPY files are distinct and are the rows of their
// concatenation); for text files the ids written, which must then be
// distinct across files (a repeated id with other vectors is an error
// where the two meet; with the same vectors it counts once). NPY and text
// files are not mixed. Each file is read by Shards tasks (every Shards-th
// block of ChunkSize rows) and every item goes to shard id mod Shards, in
// batches. A CombinePerKey reduces each shard: its accumulator collects
// items and, when it holds more than Buffer of them, replaces them by
// their k′ candidates (stream.Coreset: rounds of greedy for k items, each
// on the items the earlier rounds left), so that an accumulator holds at
// most Buffer + ChunkSize items; merging accumulators joins them (and
// reduces likewise); the output is the core-set of what is left. Without
// a Buffer, a shard is held whole (never reduced) when a bound on the
// number of items is known (NPY headers; the sizes of uncompressed text
// files) and they fit the memory budget, and reduced every
// DefaultMapBuffer items otherwise (gzip text, or too many items); the
// JSON records the buffer used (0: held whole). A global Combine collects
// the shards' candidate sets; a DoFn merges them once
// (stream.MergeCoresets, for the merge's statistics) and solves the k
// items from the union of the sets (stream.SolveCandidates: greedy, whose
// picks are those it makes on the merged k′ candidates, then, by default
// (PolishFinal), local search over the whole union), and emits the JSON
// result (MapResult). PolishNone keeps the greedy solution; PolishAll
// also polishes every round of every core-set.
//
// What is exact: when no accumulator of a shard was reduced (Reductions is
// 0 in its statistics, as it is by default for items that fit in
// memory), the shard's candidates are stream.Coreset of its items,
// whatever the bundling, file layout or order; the merge depends on the
// union of the shards' sets only. With one shard and PolishNone the result
// is then the core's offline greedy on all items — its k first picks are
// the first round of the candidates and greedy on the candidates picks
// them again (lowest id on ties) — tested for the ids and the log det;
// with the default PolishFinal it is that greedy solution improved by
// local search among the candidates (tested against the core on one
// machine). Local search runs on the candidates, not on all items, so it
// equals single-machine greedy plus local search over all items only when
// the candidates keep every item (k′ ≥ the shard's items; tested for 1, 2
// and 4 shards). Once an accumulator is reduced, the shard's result
// depends on which items met in which reduction, i.e. on the runner's
// bundling (merge and reduce); Reductions reports it. The quality
// against single-machine greedy is measured, not proved, for
// nonsymmetric kernels (see package stream's core-set notes); the
// README's "Scaling out" section has the measurements.
//
// # Workers
//
// Models, kernels, parameters and vocabularies are loaded from files by the
// DoFns and CombineFns themselves, once per worker process and file: paths are what travels in
// the pipeline (the current parameters' path as the step's side input), so
// the files must be readable by the workers (a shared filesystem or an
// object store). Learn's driver writes the current parameters to a file in
// its work directory before each step's pipeline and reads the step's
// GradSum back from another.
package pipelines
