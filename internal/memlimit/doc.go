// Package memlimit is the memory budget that ndpp's command and model
// reader check their estimates against before they allocate, so that an
// input or a flag too large for the machine is refused with a message
// that names the sizes instead of ending in "fatal error: runtime: out of
// memory".
//
// The budget is, in order of precedence: the value given to Set (the
// command's --max-memory flag), the environment variable NDPP_MAX_MEMORY,
// or three quarters of the smallest of the machine's physical memory, the
// control group's memory limit and the process's address-space and data
// size limits (the rest is headroom for the garbage collector and what the
// estimates leave out). Sizes are written as a number of bytes with an
// optional suffix K, M, G or T (powers of 1024), e.g. 512M or 1.5G.
package memlimit
