//go:build unix && amd64 && !noasm

package f64

import (
	"syscall"
	"testing"
	"unsafe"
)

// guarded returns a slice of n float64 that ends exactly at the start of
// an inaccessible page, so a read or write one entry past it faults. The
// mapping is released when the test ends.
func guarded(t *testing.T, n int) []float64 {
	t.Helper()
	page := syscall.Getpagesize()
	size := (n*8+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&mem[size-page-n*8])), n)
}
