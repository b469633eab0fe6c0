//go:build !noasm

#include "textflag.h"

// func gemmNNAVX2(c *float64, ldc int, a *float64, lda int, b *float64, ldb int, m, n, k int)
//
// c[i·ldc + j] = Σ_{l<k} a[i·lda + l]·b[l·ldb + j] for i < m, j < n (AVX2 +
// FMA): C = A·B, row-major. Rows of A and C go in groups of four; for each
// group, C's columns go in chunks of 12 held in 12 accumulators (4 rows ×
// 3 ymm) while the rows of B stream past once (per row of B, three loads,
// four broadcasts of A and twelve fused multiply-adds), then one chunk of
// 8 if 8 to 11 columns are left, and the last 1–7 columns as one more
// chunk of 8 (5–7 columns) or 4 (1–4) with masked loads and stores
// (vm4mask, in gemv_amd64.s), so that nothing outside B or C's rows is
// touched: ⌈n/4⌉ ymm columns in all. When m is not a multiple
// of four, the last group is rows m−4…m−1, overlapping the one before: its
// rows are computed again from the same inputs, so they are written again
// with the same bits (C must not overlap A or B). Every entry is summed in
// the order of l with fused multiply-adds from zero. m ≥ 4, n ≥ 1, k ≥ 1;
// lda and ldc may be 0 (four copies of one row, written to one place).
TEXT ·gemmNNAVX2(SB), NOSPLIT, $0-72
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), R9
	SHLQ $3, R9            // ldc in bytes
	MOVQ a+16(FP), SI
	MOVQ lda+24(FP), R12
	SHLQ $3, R12           // lda in bytes
	LEAQ (R12)(R12*2), R13 // 3·lda in bytes
	MOVQ b+32(FP), R8
	MOVQ ldb+40(FP), DX
	SHLQ $3, DX            // ldb in bytes
	MOVQ m+48(FP), R14     // rows from the group's first on
	MOVQ n+56(FP), R10

group:
	MOVQ k+64(FP), AX
	LEAQ (SI)(AX*8), AX    // &a[row 0 of the group, k]: end of the l loop
	XORQ R11, R11          // column j

c12:
	MOVQ R10, CX
	SUBQ R11, CX
	CMPQ CX, $12
	JLT  c8
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	VXORPD Y14, Y14, Y14
	VXORPD Y15, Y15, Y15
	LEAQ   (R8)(R11*8), BX // &b[0·ldb + j]
	MOVQ   SI, CX          // &a[row 0, l]

c12l:
	VMOVUPD      (BX), Y0
	VMOVUPD      32(BX), Y1
	VMOVUPD      64(BX), Y2
	VBROADCASTSD (CX), Y3
	VFMADD231PD  Y0, Y3, Y4
	VFMADD231PD  Y1, Y3, Y5
	VFMADD231PD  Y2, Y3, Y6
	VBROADCASTSD (CX)(R12*1), Y3
	VFMADD231PD  Y0, Y3, Y7
	VFMADD231PD  Y1, Y3, Y8
	VFMADD231PD  Y2, Y3, Y9
	VBROADCASTSD (CX)(R12*2), Y3
	VFMADD231PD  Y0, Y3, Y10
	VFMADD231PD  Y1, Y3, Y11
	VFMADD231PD  Y2, Y3, Y12
	VBROADCASTSD (CX)(R13*1), Y3
	VFMADD231PD  Y0, Y3, Y13
	VFMADD231PD  Y1, Y3, Y14
	VFMADD231PD  Y2, Y3, Y15
	ADDQ         DX, BX
	ADDQ         $8, CX
	CMPQ         CX, AX
	JLT          c12l

	LEAQ    (DI)(R11*8), BX // &c[row 0, j]
	LEAQ    (BX)(R9*2), CX  // &c[row 2, j]
	VMOVUPD Y4, (BX)
	VMOVUPD Y5, 32(BX)
	VMOVUPD Y6, 64(BX)
	VMOVUPD Y7, (BX)(R9*1)
	VMOVUPD Y8, 32(BX)(R9*1)
	VMOVUPD Y9, 64(BX)(R9*1)
	VMOVUPD Y10, (CX)
	VMOVUPD Y11, 32(CX)
	VMOVUPD Y12, 64(CX)
	VMOVUPD Y13, (CX)(R9*1)
	VMOVUPD Y14, 32(CX)(R9*1)
	VMOVUPD Y15, 64(CX)(R9*1)
	ADDQ    $12, R11
	JMP     c12

c8:
	CMPQ CX, $8
	JLT  tail
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	LEAQ   (R8)(R11*8), BX // &b[0·ldb + j]
	MOVQ   SI, CX          // &a[row 0, l]

c8l:
	VMOVUPD      (BX), Y8
	VMOVUPD      32(BX), Y9
	VBROADCASTSD (CX), Y10
	VBROADCASTSD (CX)(R12*1), Y11
	VBROADCASTSD (CX)(R12*2), Y12
	VBROADCASTSD (CX)(R13*1), Y13
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y9, Y10, Y1
	VFMADD231PD  Y8, Y11, Y2
	VFMADD231PD  Y9, Y11, Y3
	VFMADD231PD  Y8, Y12, Y4
	VFMADD231PD  Y9, Y12, Y5
	VFMADD231PD  Y8, Y13, Y6
	VFMADD231PD  Y9, Y13, Y7
	ADDQ         DX, BX
	ADDQ         $8, CX
	CMPQ         CX, AX
	JLT          c8l

	LEAQ    (DI)(R11*8), BX // &c[row 0, j]
	LEAQ    (BX)(R9*2), CX  // &c[row 2, j]
	VMOVUPD Y0, (BX)
	VMOVUPD Y1, 32(BX)
	VMOVUPD Y2, (BX)(R9*1)
	VMOVUPD Y3, 32(BX)(R9*1)
	VMOVUPD Y4, (CX)
	VMOVUPD Y5, 32(CX)
	VMOVUPD Y6, (CX)(R9*1)
	VMOVUPD Y7, 32(CX)(R9*1)
	ADDQ    $8, R11
	MOVQ    R10, CX
	SUBQ    R11, CX
	JMP     c8

tail:
	CMPQ CX, $0
	JLE  next
	CMPQ CX, $4
	JLE  tail4
	NEGQ CX
	ADDQ $8, CX                 // 8 − r
	LEAQ ·vm4mask(SB), BX
	VMOVDQU (BX)(CX*8), Y14     // lanes j..j+3 below n
	VMOVDQU 32(BX)(CX*8), Y15   // lanes j+4..j+7 below n
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	LEAQ   (R8)(R11*8), BX
	MOVQ   SI, CX

taill:
	VMASKMOVPD   (BX), Y14, Y8
	VMASKMOVPD   32(BX), Y15, Y9
	VBROADCASTSD (CX), Y10
	VBROADCASTSD (CX)(R12*1), Y11
	VBROADCASTSD (CX)(R12*2), Y12
	VBROADCASTSD (CX)(R13*1), Y13
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y9, Y10, Y1
	VFMADD231PD  Y8, Y11, Y2
	VFMADD231PD  Y9, Y11, Y3
	VFMADD231PD  Y8, Y12, Y4
	VFMADD231PD  Y9, Y12, Y5
	VFMADD231PD  Y8, Y13, Y6
	VFMADD231PD  Y9, Y13, Y7
	ADDQ         DX, BX
	ADDQ         $8, CX
	CMPQ         CX, AX
	JLT          taill

	LEAQ       (DI)(R11*8), BX
	LEAQ       (BX)(R9*2), CX
	VMASKMOVPD Y0, Y14, (BX)
	VMASKMOVPD Y1, Y15, 32(BX)
	VMASKMOVPD Y2, Y14, (BX)(R9*1)
	VMASKMOVPD Y3, Y15, 32(BX)(R9*1)
	VMASKMOVPD Y4, Y14, (CX)
	VMASKMOVPD Y5, Y15, 32(CX)
	VMASKMOVPD Y6, Y14, (CX)(R9*1)
	VMASKMOVPD Y7, Y15, 32(CX)(R9*1)

	JMP        next

tail4:
	// 1–4 columns: one ymm per row.
	NEGQ    CX
	ADDQ    $8, CX              // 8 − r
	LEAQ    ·vm4mask(SB), BX
	VMOVDQU (BX)(CX*8), Y14     // lanes j..j+3 below n
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	LEAQ   (R8)(R11*8), BX
	MOVQ   SI, CX

tail4l:
	VMASKMOVPD   (BX), Y14, Y8
	VBROADCASTSD (CX), Y10
	VBROADCASTSD (CX)(R12*1), Y11
	VBROADCASTSD (CX)(R12*2), Y12
	VBROADCASTSD (CX)(R13*1), Y13
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y8, Y11, Y1
	VFMADD231PD  Y8, Y12, Y2
	VFMADD231PD  Y8, Y13, Y3
	ADDQ         DX, BX
	ADDQ         $8, CX
	CMPQ         CX, AX
	JLT          tail4l

	LEAQ       (DI)(R11*8), BX
	LEAQ       (BX)(R9*2), CX
	VMASKMOVPD Y0, Y14, (BX)
	VMASKMOVPD Y1, Y14, (BX)(R9*1)
	VMASKMOVPD Y2, Y14, (CX)
	VMASKMOVPD Y3, Y14, (CX)(R9*1)

next:
	SUBQ $4, R14           // rows after this group
	JEQ  done
	CMPQ R14, $4
	JLT  last
	LEAQ (SI)(R12*4), SI
	LEAQ (DI)(R9*4), DI
	JMP  group

last:
	// 1–3 rows left: the last group is rows m−4…m−1.
	MOVQ  R14, CX
	IMULQ R12, CX
	ADDQ  CX, SI
	MOVQ  R14, CX
	IMULQ R9, CX
	ADDQ  CX, DI
	MOVQ  $4, R14
	JMP   group

done:
	VZEROUPPER
	RET
