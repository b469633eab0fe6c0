//go:build !noasm

#include "textflag.h"

// TRANSPOSE4 is schur_amd64.s's: the 4×4 block in rows A, B, C, D, with
// scratch T0, T1, leaves column 0 in C, 1 in T0, 2 in D, 3 in T1.
#define TRANSPOSE4(A, B, C, D, T0, T1) \
	VUNPCKLPD  B, A, T0           \
	VUNPCKHPD  B, A, T1           \
	VUNPCKLPD  D, C, A            \
	VUNPCKHPD  D, C, B            \
	VPERM2F128 $0x20, A, T0, C    \
	VPERM2F128 $0x31, A, T0, D    \
	VPERM2F128 $0x20, B, T1, T0   \
	VPERM2F128 $0x31, B, T1, T1

// LOAD4 loads four rows (stride R12, 3·stride R13) at AX into A, B, C, D.
#define LOAD4(A, B, C, D) \
	VMOVUPD (AX), A           \
	VMOVUPD (AX)(R12*1), B    \
	VMOVUPD (AX)(R12*2), C    \
	VMOVUPD (AX)(R13*1), D

// MLOAD4 is LOAD4 with the lane mask M.
#define MLOAD4(M, A, B, C, D) \
	VMASKMOVPD (AX), M, A           \
	VMASKMOVPD (AX)(R12*1), M, B    \
	VMASKMOVPD (AX)(R12*2), M, C    \
	VMASKMOVPD (AX)(R13*1), M, D

// V2 adds the squares of the transposed columns of V to Y0 (even) and Y1.
#define V2 \
	TRANSPOSE4(Y6, Y7, Y8, Y9, Y10, Y11) \
	VMULPD Y8, Y8, Y8                    \
	VADDPD Y8, Y0, Y0                    \
	VMULPD Y10, Y10, Y10                 \
	VADDPD Y10, Y1, Y1                   \
	VMULPD Y9, Y9, Y9                    \
	VADDPD Y9, Y0, Y0                    \
	VMULPD Y11, Y11, Y11                 \
	VADDPD Y11, Y1, Y1

// B2 transposes B (columns left in Y8, Y10, Y9, Y11) and adds their
// squares to Y2 (even) and Y3.
#define B2 \
	TRANSPOSE4(Y6, Y7, Y8, Y9, Y10, Y11) \
	VMULPD Y8, Y8, Y12                   \
	VADDPD Y12, Y2, Y2                   \
	VMULPD Y10, Y10, Y12                 \
	VADDPD Y12, Y3, Y3                   \
	VMULPD Y9, Y9, Y12                   \
	VADDPD Y12, Y2, Y2                   \
	VMULPD Y11, Y11, Y12                 \
	VADDPD Y12, Y3, Y3

// XB adds the products of the transposed columns of X (in Y6, Y7, Y12,
// Y13) with B's to Y4 (even) and Y5.
#define XB \
	TRANSPOSE4(Y6, Y7, Y12, Y13, Y14, Y15) \
	VMULPD Y8, Y12, Y12                    \
	VADDPD Y12, Y4, Y4                     \
	VMULPD Y10, Y14, Y14                   \
	VADDPD Y14, Y5, Y5                     \
	VMULPD Y9, Y13, Y13                    \
	VADDPD Y13, Y4, Y4                     \
	VMULPD Y11, Y15, Y15                   \
	VADDPD Y15, Y5, Y5

// func rowDots3AVX2(out *float64, ldo int, v, b, x *float64, ld, n, d int)
//
// RowDots3 for n ≥ 4, d ≥ 1 (AVX2): rows go in groups of four, one row per
// lane, and the d entries in chunks of four, each chunk of V, B and X
// loaded as four rows and transposed; every lane runs the one-row loop of
// rowDots3Go in its order, entries 0, 2, … into one partial sum and 1, 3,
// … into another, with separate multiplies and adds. The last 1–3 entries
// are loaded with masks (vm4mask, in gemv_amd64.s): the masked-off lanes
// are zeros, whose products +0 leave the partial sums (never −0) as they
// are. When n is not a multiple of four, the last group is rows n−4…n−1,
// overlapping the one before and written again with the same bits.
TEXT ·rowDots3AVX2(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R9
	SHLQ $3, R9            // ldo in bytes
	MOVQ v+16(FP), SI
	MOVQ b+24(FP), R8
	MOVQ x+32(FP), DX
	MOVQ ld+40(FP), R12
	SHLQ $3, R12           // ld in bytes
	LEAQ (R12)(R12*2), R13 // 3·ld in bytes
	MOVQ n+48(FP), R14     // rows from the group's first on
	MOVQ d+56(FP), R10
	MOVQ R10, R11
	ANDQ $3, R11           // entries in the masked chunk
	MOVQ R11, AX
	NEGQ AX
	ADDQ $8, AX            // 8 − r
	LEAQ ·vm4mask(SB), R15
	LEAQ (R15)(AX*8), R15  // mask of the first r lanes
	ANDQ $-4, R10
	SHLQ $3, R10           // bytes of the full chunks

group:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	XORQ   BX, BX          // entry offset in bytes

chunk:
	CMPQ BX, R10
	JGE  tail
	LEAQ (SI)(BX*1), AX
	LOAD4(Y6, Y7, Y8, Y9)
	V2
	LEAQ (R8)(BX*1), AX
	LOAD4(Y6, Y7, Y8, Y9)
	B2
	LEAQ (DX)(BX*1), AX
	LOAD4(Y6, Y7, Y12, Y13)
	XB
	ADDQ $32, BX
	JMP  chunk

tail:
	CMPQ R11, $0
	JEQ  store
	VMOVDQU (R15), Y10
	LEAQ    (SI)(BX*1), AX
	MLOAD4(Y10, Y6, Y7, Y8, Y9)
	V2
	VMOVDQU (R15), Y10
	LEAQ    (R8)(BX*1), AX
	MLOAD4(Y10, Y6, Y7, Y8, Y9)
	B2
	VMOVDQU (R15), Y14
	LEAQ    (DX)(BX*1), AX
	MLOAD4(Y14, Y6, Y7, Y12, Y13)
	XB

store:
	VADDPD  Y1, Y0, Y0
	VADDPD  Y3, Y2, Y2
	VADDPD  Y5, Y4, Y4
	VMOVUPD Y0, (DI)
	VMOVUPD Y2, (DI)(R9*1)
	VMOVUPD Y4, (DI)(R9*2)

	SUBQ $4, R14           // rows after this group
	JEQ  done
	CMPQ R14, $4
	JLT  last
	ADDQ $32, DI
	LEAQ (SI)(R12*4), SI
	LEAQ (R8)(R12*4), R8
	LEAQ (DX)(R12*4), DX
	JMP  group

last:
	// 1–3 rows left: the last group is rows n−4…n−1.
	LEAQ  (DI)(R14*8), DI
	MOVQ  R14, AX
	IMULQ R12, AX
	ADDQ  AX, SI
	ADDQ  AX, R8
	ADDQ  AX, DX
	MOVQ  $4, R14
	JMP   group

done:
	VZEROUPPER
	RET
