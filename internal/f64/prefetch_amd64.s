//go:build !noasm

#include "textflag.h"

// func prefetchAsm(p unsafe.Pointer, n uintptr)
//
// PREFETCHT0 of every cache line holding the n ≥ 1 bytes at p: the lines
// of p, p+64, p+128, … and of the last byte. A prefetch never faults and
// changes no memory.
TEXT ·prefetchAsm(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -1(SI)(CX*1), DX // the last byte

pfloop:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	CMPQ       SI, DX
	JB         pfloop
	PREFETCHT0 (DX)
	RET
