//go:build !noasm

#include "textflag.h"

// DET4 computes four entries of Det4Rows from m1, m4, m5, m6, m7 in Y0–Y4,
// m13, m9 in Y7, Y8 and c13, c12 in Y10, Y11, with the scalars at R9
// broadcast as needed, into Y15 (Y14 zero; Y5, Y6, Y9 scratch); each
// operation of the Go twin's expression is one instruction, in its order.
#define DET4 \
	VBROADCASTSD 0(R9), Y9 /* m0 */ \
	VMULPD       Y9, Y2, Y5         \
	VMULPD       Y1, Y0, Y6         \
	VSUBPD       Y6, Y5, Y5         \
	VBROADCASTSD 56(R9), Y6         \
	VMULPD       Y6, Y5, Y5         \
	VADDPD       Y5, Y14, Y15       \
	VMULPD       Y9, Y3, Y5         \
	VBROADCASTSD 8(R9), Y6          \
	VMULPD       Y6, Y1, Y6         \
	VSUBPD       Y6, Y5, Y5         \
	VMULPD       Y10, Y5, Y5        \
	VSUBPD       Y5, Y15, Y15       \
	VMULPD       Y9, Y4, Y5         \
	VBROADCASTSD 16(R9), Y9 /* m3 */\
	VMULPD       Y9, Y1, Y6         \
	VSUBPD       Y6, Y5, Y5         \
	VMULPD       Y11, Y5, Y5        \
	VADDPD       Y5, Y15, Y15       \
	VMULPD       Y3, Y0, Y5         \
	VBROADCASTSD 8(R9), Y6          \
	VMULPD       Y6, Y2, Y6         \
	VSUBPD       Y6, Y5, Y5         \
	VBROADCASTSD 40(R9), Y6         \
	VMULPD       Y6, Y5, Y5         \
	VADDPD       Y5, Y15, Y15       \
	VMULPD       Y4, Y0, Y5         \
	VMULPD       Y9, Y2, Y6         \
	VSUBPD       Y6, Y5, Y5         \
	VBROADCASTSD 48(R9), Y6         \
	VMULPD       Y6, Y5, Y5         \
	VSUBPD       Y5, Y15, Y15       \
	VMULPD       Y9, Y3, Y6         \
	VBROADCASTSD 8(R9), Y5          \
	VMULPD       Y5, Y4, Y5         \
	VSUBPD       Y6, Y5, Y5         \
	VBROADCASTSD 24(R9), Y6         \
	VMULPD       Y6, Y7, Y7         \
	VBROADCASTSD 32(R9), Y6         \
	VMULPD       Y6, Y8, Y8         \
	VSUBPD       Y8, Y7, Y7         \
	VMULPD       Y7, Y5, Y5         \
	VADDPD       Y5, Y15, Y15

// func det4RowsAVX2(r *float64, sc *[8]float64, m1, m4, m5, m6, m7, m9, m13, c13, c12 *float64, n int)
//
// Det4Rows for n ≥ 1 (AVX2): four entries per pass, then the last 1–3
// loaded and stored with masks (vm4mask, in gemv_amd64.s), so nothing
// past the n entries is touched.
TEXT ·det4RowsAVX2(SB), NOSPLIT, $0-96
	MOVQ r+0(FP), DI
	MOVQ sc+8(FP), R9
	MOVQ m1+16(FP), SI
	MOVQ m4+24(FP), R8
	MOVQ m5+32(FP), R10
	MOVQ m6+40(FP), R11
	MOVQ m7+48(FP), R12
	MOVQ m9+56(FP), R13
	MOVQ m13+64(FP), R14
	MOVQ c13+72(FP), AX
	MOVQ c12+80(FP), DX
	MOVQ n+88(FP), CX
	XORQ BX, BX
	VXORPD Y14, Y14, Y14

loop:
	MOVQ CX, R15
	SUBQ BX, R15
	CMPQ R15, $4
	JLT  tail
	VMOVUPD (SI)(BX*8), Y0
	VMOVUPD (R8)(BX*8), Y1
	VMOVUPD (R10)(BX*8), Y2
	VMOVUPD (R11)(BX*8), Y3
	VMOVUPD (R12)(BX*8), Y4
	VMOVUPD (R14)(BX*8), Y7
	VMOVUPD (R13)(BX*8), Y8
	VMOVUPD (AX)(BX*8), Y10
	VMOVUPD (DX)(BX*8), Y11
	DET4
	VMOVUPD Y15, (DI)(BX*8)
	ADDQ    $4, BX
	JMP     loop

tail:
	CMPQ R15, $0
	JEQ  done
	NEGQ R15
	ADDQ $8, R15                // 8 − r
	SHLQ $3, R15
	LEAQ ·vm4mask(SB), R9
	ADDQ R15, R9
	VMOVDQU (R9), Y13           // lanes of the last r entries
	MOVQ sc+8(FP), R9
	VMASKMOVPD (SI)(BX*8), Y13, Y0
	VMASKMOVPD (R8)(BX*8), Y13, Y1
	VMASKMOVPD (R10)(BX*8), Y13, Y2
	VMASKMOVPD (R11)(BX*8), Y13, Y3
	VMASKMOVPD (R12)(BX*8), Y13, Y4
	VMASKMOVPD (R14)(BX*8), Y13, Y7
	VMASKMOVPD (R13)(BX*8), Y13, Y8
	VMASKMOVPD (AX)(BX*8), Y13, Y10
	VMASKMOVPD (DX)(BX*8), Y13, Y11
	DET4
	VMASKMOVPD Y15, Y13, (DI)(BX*8)

done:
	VZEROUPPER
	RET
