//go:build !noasm

#include "textflag.h"

// func adamAVX2(x, m, v, gr *float64, n int, k *float64) (sum float64)
//
// Adam's update on n entries with k = [β₁, 1−β₁, β₂, 1−β₂, step, ε],
// operation for operation as adamGo (no fused multiply-adds, so the
// results are identical); returns the sum of the new x.
TEXT ·adamAVX2(SB), NOSPLIT, $0-56
	MOVQ         x+0(FP), DI
	MOVQ         m+8(FP), SI
	MOVQ         v+16(FP), R8
	MOVQ         gr+24(FP), R9
	MOVQ         n+32(FP), CX
	MOVQ         k+40(FP), R10
	VBROADCASTSD (R10), Y10
	VBROADCASTSD 8(R10), Y11
	VBROADCASTSD 16(R10), Y12
	VBROADCASTSD 24(R10), Y13
	VBROADCASTSD 32(R10), Y14
	VBROADCASTSD 40(R10), Y15
	VXORPD       Y9, Y9, Y9
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-4, BX
	CMPQ         BX, $0
	JE           adred

adloop:
	VMOVUPD (R9)(AX*8), Y0
	VMULPD  (SI)(AX*8), Y10, Y1
	VMULPD  Y0, Y11, Y2
	VADDPD  Y2, Y1, Y1
	VMOVUPD Y1, (SI)(AX*8)
	VMULPD  (R8)(AX*8), Y12, Y3
	VMULPD  Y0, Y13, Y4
	VMULPD  Y0, Y4, Y4
	VADDPD  Y4, Y3, Y3
	VMOVUPD Y3, (R8)(AX*8)
	VSQRTPD Y3, Y5
	VADDPD  Y15, Y5, Y5
	VMULPD  Y1, Y14, Y6
	VDIVPD  Y5, Y6, Y6
	VADDPD  (DI)(AX*8), Y6, Y6
	VMOVUPD Y6, (DI)(AX*8)
	VADDPD  Y6, Y9, Y9
	ADDQ    $4, AX
	CMPQ    AX, BX
	JLT     adloop

adred:
	VEXTRACTF128 $1, Y9, X8
	VADDPD       X8, X9, X9
	VHADDPD      X9, X9, X9
	CMPQ         AX, CX
	JGE          addone

adloop1:
	VMOVSD (R9)(AX*8), X0
	VMOVSD (SI)(AX*8), X1
	VMULSD X1, X10, X1
	VMULSD X0, X11, X2
	VADDSD X2, X1, X1
	VMOVSD X1, (SI)(AX*8)
	VMOVSD (R8)(AX*8), X3
	VMULSD X3, X12, X3
	VMULSD X0, X13, X4
	VMULSD X0, X4, X4
	VADDSD X4, X3, X3
	VMOVSD X3, (R8)(AX*8)
	VSQRTSD X3, X3, X5
	VADDSD X15, X5, X5
	VMULSD X1, X14, X6
	VDIVSD X5, X6, X6
	VMOVSD (DI)(AX*8), X7
	VADDSD X7, X6, X6
	VMOVSD X6, (DI)(AX*8)
	VADDSD X6, X9, X9
	INCQ   AX
	CMPQ   AX, CX
	JLT    adloop1

addone:
	VMOVSD X9, sum+48(FP)
	VZEROUPPER
	RET
