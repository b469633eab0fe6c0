package learn

// prefetchLines hints the CPU to bring lines cache lines, 64 bytes apart
// from p, into its cache: for writing when write is set (PREFETCHW: the
// core takes ownership of the line, so stores that follow do not wait for
// another core's copy to be invalidated; the caller checks hasPrefetchW),
// else for reading (PREFETCHT0). Prefetches are hints: they change no
// memory and never fault.
//
//go:noescape
func prefetchLines(p *float64, lines int, write bool)

// hasPrefetchW reports PREFETCHW. Every CPU with AVX-512 has it (older ones
// may not decode it), so the AVX-512 test stands in for its CPUID bit.
var hasPrefetchW = useAVX512
