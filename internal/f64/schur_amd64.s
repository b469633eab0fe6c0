//go:build !noasm

#include "textflag.h"

// schurSign holds four quadwords with only the sign bit set: XOR with it
// turns the unsigned order of bit patterns into the signed order that
// VPCMPGTQ compares.
DATA ·schurSign+0(SB)/8, $0x8000000000000000
DATA ·schurSign+8(SB)/8, $0x8000000000000000
DATA ·schurSign+16(SB)/8, $0x8000000000000000
DATA ·schurSign+24(SB)/8, $0x8000000000000000
GLOBL ·schurSign(SB), RODATA|NOPTR, $32

// SCHURSTEP adds column i = BX/8 + off/8 to the four rows' sums: W and P
// hold w_ri and p_ri of the four rows (lanes), and are overwritten. Y0 s,
// Y1 mag, Y2 max bits (sign-flipped), Y3 w1, Y4 zp; Y15 the absolute-value
// mask; Y5 and Y6 are scratch.
#define SCHURSTEP(W, P, off) \
	VMULPD       P, W, Y5              \
	VSUBPD       Y5, Y0, Y0            \
	VANDPD       Y15, Y5, Y5           \
	VADDPD       Y5, Y1, Y1            \
	VANDPD       Y15, P, P             \
	VBROADCASTSD off(R10)(BX*1), Y5    \
	VMULPD       Y5, P, P              \
	VADDPD       P, Y4, Y4             \
	VXORPD       ·schurSign(SB), P, P  \
	VPCMPGTQ     Y2, P, Y6             \
	VBLENDVPD    Y6, P, Y2, Y2         \
	VANDPD       Y15, W, W             \
	VBROADCASTSD off(R11)(BX*1), Y5    \
	VMULPD       Y5, W, W              \
	VADDPD       W, Y3, Y3

// TRANSPOSE4 transposes the 4×4 block in A, B, C, D (rows) with scratch
// T0, T1: afterwards column 0 is in C, 1 in T0, 2 in D, 3 in T1 and A, B
// are free.
#define TRANSPOSE4(A, B, C, D, T0, T1) \
	VUNPCKLPD  B, A, T0           \
	VUNPCKHPD  B, A, T1           \
	VUNPCKLPD  D, C, A            \
	VUNPCKHPD  D, C, B            \
	VPERM2F128 $0x20, A, T0, C    \
	VPERM2F128 $0x31, A, T0, D    \
	VPERM2F128 $0x20, B, T1, T0   \
	VPERM2F128 $0x31, B, T1, T1

// func schurRowsAVX2(out *float64, ldo int, a, w, p *float64, ld int, zn, izn *float64, n, k int)
//
// SchurRows for n ≥ 4, k ≥ 1 (AVX2): rows go in groups of four, one row
// per lane, and the k columns in chunks of four, each chunk of W and P
// loaded as four rows and transposed, so every lane runs the one-row loop
// of schurRowsGo in its order with the same roundings (separate multiplies
// and adds). The last 1–3 columns are loaded with masks (vm4mask, in
// gemv_amd64.s) and only they are added. When n is not a multiple of
// four, the last group is rows n−4…n−1, overlapping the one before: its
// rows are computed again from the same inputs and written again with the
// same bits (out must not overlap the inputs).
TEXT ·schurRowsAVX2(SB), NOSPLIT, $0-80
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R9
	SHLQ $3, R9            // ldo in bytes
	MOVQ a+16(FP), SI
	MOVQ w+24(FP), R8
	MOVQ p+32(FP), DX
	MOVQ ld+40(FP), R12
	SHLQ $3, R12           // ld in bytes
	LEAQ (R12)(R12*2), R13 // 3·ld in bytes
	MOVQ zn+48(FP), R10
	MOVQ izn+56(FP), R11
	MOVQ n+64(FP), R14     // rows from the group's first on

	VPCMPEQQ Y15, Y15, Y15
	VPSRLQ   $1, Y15, Y15  // 0x7fff…: |x|

group:
	VMOVUPD (SI), Y0             // s = a
	VANDPD  Y15, Y0, Y1          // mag = |a|
	VMOVUPD ·schurSign(SB), Y2   // max bits 0, sign-flipped
	VXORPD  Y3, Y3, Y3
	VXORPD  Y4, Y4, Y4
	XORQ    BX, BX               // column offset in bytes
	MOVQ    k+72(FP), CX         // columns left

chunk:
	CMPQ CX, $4
	JLT  tail
	LEAQ (R8)(BX*1), AX
	VMOVUPD (AX), Y7
	VMOVUPD (AX)(R12*1), Y8
	VMOVUPD (AX)(R12*2), Y9
	VMOVUPD (AX)(R13*1), Y10
	TRANSPOSE4(Y7, Y8, Y9, Y10, Y11, Y12) // W columns in Y9, Y11, Y10, Y12
	LEAQ (DX)(BX*1), AX
	VMOVUPD (AX), Y5
	VMOVUPD (AX)(R12*1), Y6
	VMOVUPD (AX)(R12*2), Y7
	VMOVUPD (AX)(R13*1), Y8
	TRANSPOSE4(Y5, Y6, Y7, Y8, Y13, Y14)  // P columns in Y7, Y13, Y8, Y14
	SCHURSTEP(Y9, Y7, 0)
	SCHURSTEP(Y11, Y13, 8)
	SCHURSTEP(Y10, Y8, 16)
	SCHURSTEP(Y12, Y14, 24)
	ADDQ $32, BX
	SUBQ $4, CX
	JMP  chunk

tail:
	CMPQ CX, $0
	JEQ  store
	MOVQ CX, AX
	NEGQ AX
	ADDQ $8, AX                // 8 − r
	LEAQ ·vm4mask(SB), R15
	LEAQ (R15)(AX*8), R15      // mask of the first r lanes
	LEAQ (R8)(BX*1), AX
	VMOVDQU    (R15), Y11
	VMASKMOVPD (AX), Y11, Y7
	VMASKMOVPD (AX)(R12*1), Y11, Y8
	VMASKMOVPD (AX)(R12*2), Y11, Y9
	VMASKMOVPD (AX)(R13*1), Y11, Y10
	TRANSPOSE4(Y7, Y8, Y9, Y10, Y11, Y12)
	LEAQ (DX)(BX*1), AX
	VMOVDQU    (R15), Y13
	VMASKMOVPD (AX), Y13, Y5
	VMASKMOVPD (AX)(R12*1), Y13, Y6
	VMASKMOVPD (AX)(R12*2), Y13, Y7
	VMASKMOVPD (AX)(R13*1), Y13, Y8
	TRANSPOSE4(Y5, Y6, Y7, Y8, Y13, Y14)
	SCHURSTEP(Y9, Y7, 0)
	CMPQ CX, $1
	JEQ  store
	SCHURSTEP(Y11, Y13, 8)
	CMPQ CX, $2
	JEQ  store
	SCHURSTEP(Y10, Y8, 16)

store:
	VXORPD  ·schurSign(SB), Y2, Y2
	LEAQ    (DI)(R9*2), AX       // row 2 of out
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, (DI)(R9*1)
	VMOVUPD Y2, (AX)
	VMOVUPD Y3, (AX)(R9*1)
	VMOVUPD Y4, (AX)(R9*2)

	SUBQ $4, R14               // rows after this group
	JEQ  done
	CMPQ R14, $4
	JLT  last
	ADDQ $32, SI
	ADDQ $32, DI
	LEAQ (R8)(R12*4), R8
	LEAQ (DX)(R12*4), DX
	JMP  group

last:
	// 1–3 rows left: the last group is rows n−4…n−1.
	LEAQ  (SI)(R14*8), SI
	LEAQ  (DI)(R14*8), DI
	MOVQ  R14, AX
	IMULQ R12, AX
	ADDQ  AX, R8
	ADDQ  AX, DX
	MOVQ  $4, R14
	JMP   group

done:
	VZEROUPPER
	RET
