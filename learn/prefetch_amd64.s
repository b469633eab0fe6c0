#include "textflag.h"

// func prefetchRead(p *float64, lines int)
//
// PREFETCHT0 of the lines cache lines from p, 64 bytes apart.
TEXT ·prefetchRead(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX
	CMPQ CX, $0
	JLE  rdone

rloop:
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	DECQ       CX
	JNZ        rloop

rdone:
	RET

// func prefetchWrite(p *float64, lines int)
//
// PREFETCHW of the lines cache lines from p, 64 bytes apart (the caller
// checks that the CPU has PREFETCHW).
TEXT ·prefetchWrite(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX
	CMPQ CX, $0
	JLE  wdone

wloop:
	// PREFETCHW (AX): 0F 0D /1, which the assembler does not know.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	ADDQ $64, AX
	DECQ CX
	JNZ  wloop

wdone:
	RET
