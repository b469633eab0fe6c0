// Package memlimit is the memory budget that ndpp's library calls and
// commands check their estimates against before they allocate, so that an
// input or a flag too large for the machine is refused with a message
// that names the sizes instead of ending in "fatal error: runtime: out of
// memory".
//
// A Budget is passed down explicitly: library calls take it as an option
// in bytes (e.g. npz.LoadOptions.MaxBytes; zero selects the Machine
// default, three quarters of the smallest of the machine's physical
// memory, the control group's memory limit and the process's address-space
// and data size limits — the rest is headroom for the garbage collector and
// what the estimates leave out). The commands' default is the environment
// variable NDPP_MAX_MEMORY (internal/cmdenv), which their --max-memory
// flag overrides; no library code reads the environment. Sizes are written as a
// number of bytes with an optional suffix K, M, G or T (powers of 1024),
// e.g. 512M or 1.5G.
package memlimit
