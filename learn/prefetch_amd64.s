#include "textflag.h"

// func prefetchLines(p *float64, lines int, write bool)
//
// Prefetches the lines cache lines from p, 64 bytes apart: PREFETCHW when
// write is set (the caller checks that the CPU has it), else PREFETCHT0.
TEXT ·prefetchLines(SB), NOSPLIT, $0-17
	MOVQ p+0(FP), AX
	MOVQ lines+8(FP), CX
	MOVB write+16(FP), DX
	CMPQ CX, $0
	JLE  done

loop:
	TESTB DX, DX
	JZ    read
	// PREFETCHW (AX): 0F 0D /1, which the assembler does not know.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	JMP  next

read:
	PREFETCHT0 (AX)

next:
	ADDQ $64, AX
	DECQ CX
	JNZ  loop

done:
	RET
