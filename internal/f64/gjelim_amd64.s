//go:build !noasm

#include "textflag.h"

// func gjElimAVX2(a *float64, lda, k, c int)
//
// gjElimGo's elimination (AVX2): for every row r ≠ c with f = a[r][c] ≠ 0
// (NaN included), a[r][c] = 0, then a[r][j] += (−f)·a[c][j] for j < k, 4
// columns at a time and then 1, each product and sum rounded on its own
// (VMULPD, VADDPD: the bits of the Go twin).
TEXT ·gjElimAVX2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), DI
	MOVQ lda+8(FP), DX
	SHLQ $3, DX             // row stride in bytes
	MOVQ k+16(FP), CX
	MOVQ c+24(FP), R8
	MOVQ R8, AX
	IMULQ DX, AX
	LEAQ (DI)(AX*1), SI     // row c
	MOVQ CX, BX
	ANDQ $-4, BX            // columns done 4 at a time
	VXORPD X15, X15, X15    // 0
	MOVQ $0x8000000000000000, AX
	MOVQ AX, X14            // the sign bit
	XORQ R9, R9             // r
	MOVQ DI, R10            // row r

rows:
	CMPQ R9, CX
	JGE  done
	CMPQ R9, R8
	JE   next
	VMOVSD   (R10)(R8*8), X0 // f
	VUCOMISD X15, X0
	JNE      elim
	JPS      elim            // NaN: not equal to 0
	JMP      next

elim:
	MOVQ         $0, (R10)(R8*8)
	VXORPD       X14, X0, X0 // −f
	VBROADCASTSD X0, Y0
	XORQ         AX, AX
	CMPQ         BX, $0
	JE           tail

loop4:
	VMOVUPD (SI)(AX*8), Y1
	VMULPD  Y0, Y1, Y1
	VADDPD  (R10)(AX*8), Y1, Y1
	VMOVUPD Y1, (R10)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, BX
	JLT     loop4

tail:
	CMPQ AX, CX
	JGE  next

loop1:
	VMOVSD (SI)(AX*8), X1
	VMULSD X0, X1, X1
	VADDSD (R10)(AX*8), X1, X1
	VMOVSD X1, (R10)(AX*8)
	INCQ   AX
	CMPQ   AX, CX
	JLT    loop1

next:
	INCQ R9
	ADDQ DX, R10
	JMP  rows

done:
	VZEROUPPER
	RET
