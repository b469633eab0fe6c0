// Package pipelines runs ndpp's batch work on Apache Beam: scoring basket
// files with a model (Score) and the offline learner's full-batch mode with
// its per-basket gradient terms summed by a CombineFn (Learn). The
// pipelines run wherever the Beam Go SDK runs — in process on Prism, or
// submitted to Flink, Spark or Dataflow through their portable runners —
// and compute what the core computes on one machine: Score writes the
// lines of `ndpp-bench score`, Learn the parameters of learn.TrainOffline
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
// the part, which is the shard: Score writes one output file per shard,
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
// # Workers
//
// Models, parameters and vocabularies are loaded from files by the DoFns
// themselves, once per worker process and file: paths are what travels in
// the pipeline (the current parameters' path as the step's side input), so
// the files must be readable by the workers (a shared filesystem or an
// object store). Learn's driver writes the current parameters to a file in
// its work directory before each step's pipeline and reads the step's
// GradSum back from another.
package pipelines
