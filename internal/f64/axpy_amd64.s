//go:build !noasm

#include "textflag.h"

// func axpyUnitaryAVX2(alpha float64, x *float64, y *float64, n int)
//
// y[j] += alpha·x[j] for j < n (AVX2 + FMA).
TEXT ·axpyUnitaryAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSD alpha+0(FP), Y0
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	MOVQ         n+24(FP), CX
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-4, BX
	CMPQ         BX, $0
	JE           axtail

axloop4:
	VMOVUPD     (DI)(AX*8), Y1
	VFMADD231PD (SI)(AX*8), Y0, Y1
	VMOVUPD     Y1, (DI)(AX*8)
	ADDQ        $4, AX
	CMPQ        AX, BX
	JLT         axloop4

axtail:
	CMPQ AX, CX
	JGE  axdone

axloop1:
	VMOVSD      (DI)(AX*8), X1
	VFMADD231SD (SI)(AX*8), X0, X1
	VMOVSD      X1, (DI)(AX*8)
	INCQ        AX
	CMPQ        AX, CX
	JLT         axloop1

axdone:
	VZEROUPPER
	RET
