//go:build !noasm

#include "textflag.h"

// func gemvN4AVX2(a *float64, stride int, x *float64, n int, out *float64)
//
// out[q] = Σ_{j<n} a[q·stride + j]·x[j] for q = 0..3 (AVX2 + FMA).
TEXT ·gemvN4AVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ stride+8(FP), DX
	SHLQ $3, DX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), R8
	LEAQ (SI)(DX*1), R9
	LEAQ (R9)(DX*1), R10
	LEAQ (R10)(DX*1), R11
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
	CMPQ BX, $0
	JE   tail4

loop8:
	VMOVUPD     (DI)(AX*8), Y4
	VMOVUPD     32(DI)(AX*8), Y9
	VFMADD231PD (SI)(AX*8), Y4, Y0
	VFMADD231PD (R9)(AX*8), Y4, Y1
	VFMADD231PD (R10)(AX*8), Y4, Y2
	VFMADD231PD (R11)(AX*8), Y4, Y3
	VFMADD231PD 32(SI)(AX*8), Y9, Y5
	VFMADD231PD 32(R9)(AX*8), Y9, Y6
	VFMADD231PD 32(R10)(AX*8), Y9, Y7
	VFMADD231PD 32(R11)(AX*8), Y9, Y8
	ADDQ        $8, AX
	CMPQ        AX, BX
	JLT         loop8

tail4:
	VADDPD Y5, Y0, Y0
	VADDPD Y6, Y1, Y1
	VADDPD Y7, Y2, Y2
	VADDPD Y8, Y3, Y3
	MOVQ   CX, BX
	ANDQ   $-4, BX
	CMPQ   AX, BX
	JGE    reduce
	VMOVUPD     (DI)(AX*8), Y4
	VFMADD231PD (SI)(AX*8), Y4, Y0
	VFMADD231PD (R9)(AX*8), Y4, Y1
	VFMADD231PD (R10)(AX*8), Y4, Y2
	VFMADD231PD (R11)(AX*8), Y4, Y3
	ADDQ        $4, AX

reduce:
	VEXTRACTF128 $1, Y0, X4
	VADDPD       X4, X0, X0
	VHADDPD      X0, X0, X0
	VEXTRACTF128 $1, Y1, X5
	VADDPD       X5, X1, X1
	VHADDPD      X1, X1, X1
	VEXTRACTF128 $1, Y2, X6
	VADDPD       X6, X2, X2
	VHADDPD      X2, X2, X2
	VEXTRACTF128 $1, Y3, X7
	VADDPD       X7, X3, X3
	VHADDPD      X3, X3, X3
	CMPQ         AX, CX
	JGE          done

loop1:
	VMOVSD      (DI)(AX*8), X4
	VFMADD231SD (SI)(AX*8), X4, X0
	VFMADD231SD (R9)(AX*8), X4, X1
	VFMADD231SD (R10)(AX*8), X4, X2
	VFMADD231SD (R11)(AX*8), X4, X3
	INCQ        AX
	CMPQ        AX, CX
	JLT         loop1

done:
	VMOVSD X0, (R8)
	VMOVSD X1, 8(R8)
	VMOVSD X2, 16(R8)
	VMOVSD X3, 24(R8)
	VZEROUPPER
	RET

// func gemvTAVX2(out *float64, x *float64, m *float64, rows, cols, ld int)
//
// out[j] = Σ_{l<rows} x[l]·m[l·ld + j] for j < cols (AVX2 + FMA). Columns
// go in chunks of 16, then 4, then 1; within a chunk, even and odd rows
// feed separate accumulators so that the FMA chains overlap. rows ≥ 1.
TEXT ·gemvTAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ rows+24(FP), R9
	MOVQ cols+32(FP), R10
	MOVQ ld+40(FP), DX
	SHLQ $3, DX
	MOVQ R9, R12
	ANDQ $-2, R12          // even part of rows
	XORQ R11, R11          // column j

c16:
	MOVQ R10, AX
	SUBQ R11, AX
	CMPQ AX, $16
	JLT  c4
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	LEAQ   (R8)(R11*8), BX // &m[0·ld + j]
	XORQ   CX, CX          // row l

c16pair:
	CMPQ         CX, R12
	JGE          c16odd
	VBROADCASTSD (SI)(CX*8), Y8
	VBROADCASTSD 8(SI)(CX*8), Y9
	LEAQ         (BX)(DX*1), R13
	VFMADD231PD  (BX), Y8, Y0
	VFMADD231PD  32(BX), Y8, Y1
	VFMADD231PD  64(BX), Y8, Y2
	VFMADD231PD  96(BX), Y8, Y3
	VFMADD231PD  (R13), Y9, Y4
	VFMADD231PD  32(R13), Y9, Y5
	VFMADD231PD  64(R13), Y9, Y6
	VFMADD231PD  96(R13), Y9, Y7
	LEAQ         (R13)(DX*1), BX
	ADDQ         $2, CX
	JMP          c16pair

c16odd:
	CMPQ         CX, R9
	JGE          c16store
	VBROADCASTSD (SI)(CX*8), Y8
	VFMADD231PD  (BX), Y8, Y0
	VFMADD231PD  32(BX), Y8, Y1
	VFMADD231PD  64(BX), Y8, Y2
	VFMADD231PD  96(BX), Y8, Y3

c16store:
	VADDPD  Y4, Y0, Y0
	VADDPD  Y5, Y1, Y1
	VADDPD  Y6, Y2, Y2
	VADDPD  Y7, Y3, Y3
	VMOVUPD Y0, (DI)(R11*8)
	VMOVUPD Y1, 32(DI)(R11*8)
	VMOVUPD Y2, 64(DI)(R11*8)
	VMOVUPD Y3, 96(DI)(R11*8)
	ADDQ    $16, R11
	JMP     c16

c4:
	MOVQ R10, AX
	SUBQ R11, AX
	CMPQ AX, $4
	JLT  c1
	VXORPD Y0, Y0, Y0
	VXORPD Y4, Y4, Y4
	LEAQ   (R8)(R11*8), BX
	XORQ   CX, CX

c4pair:
	CMPQ         CX, R12
	JGE          c4odd
	VBROADCASTSD (SI)(CX*8), Y8
	VBROADCASTSD 8(SI)(CX*8), Y9
	LEAQ         (BX)(DX*1), R13
	VFMADD231PD  (BX), Y8, Y0
	VFMADD231PD  (R13), Y9, Y4
	LEAQ         (R13)(DX*1), BX
	ADDQ         $2, CX
	JMP          c4pair

c4odd:
	CMPQ         CX, R9
	JGE          c4store
	VBROADCASTSD (SI)(CX*8), Y8
	VFMADD231PD  (BX), Y8, Y0

c4store:
	VADDPD  Y4, Y0, Y0
	VMOVUPD Y0, (DI)(R11*8)
	ADDQ    $4, R11
	JMP     c4

c1:
	CMPQ R11, R10
	JGE  vmdone
	VXORPD X0, X0, X0
	VXORPD X4, X4, X4
	LEAQ   (R8)(R11*8), BX
	XORQ   CX, CX

c1pair:
	CMPQ        CX, R12
	JGE         c1odd
	VMOVSD      (SI)(CX*8), X8
	VMOVSD      8(SI)(CX*8), X9
	LEAQ        (BX)(DX*1), R13
	VFMADD231SD (BX), X8, X0
	VFMADD231SD (R13), X9, X4
	LEAQ        (R13)(DX*1), BX
	ADDQ        $2, CX
	JMP         c1pair

c1odd:
	CMPQ        CX, R9
	JGE         c1store
	VMOVSD      (SI)(CX*8), X8
	VFMADD231SD (BX), X8, X0

c1store:
	VADDSD X4, X0, X0
	VMOVSD X0, (DI)(R11*8)
	INCQ   R11
	JMP    c1

vmdone:
	VZEROUPPER
	RET

// vm4mask holds eight all-ones lanes followed by eight zero lanes: the eight
// quadwords from vm4mask+8·(8−r) are the load/store mask of the first r
// columns of an 8-column chunk (1 ≤ r ≤ 7). gemm_amd64.s uses it too.
DATA ·vm4mask+0(SB)/8, $-1
DATA ·vm4mask+8(SB)/8, $-1
DATA ·vm4mask+16(SB)/8, $-1
DATA ·vm4mask+24(SB)/8, $-1
DATA ·vm4mask+32(SB)/8, $-1
DATA ·vm4mask+40(SB)/8, $-1
DATA ·vm4mask+48(SB)/8, $-1
DATA ·vm4mask+56(SB)/8, $-1
DATA ·vm4mask+64(SB)/8, $0
DATA ·vm4mask+72(SB)/8, $0
DATA ·vm4mask+80(SB)/8, $0
DATA ·vm4mask+88(SB)/8, $0
DATA ·vm4mask+96(SB)/8, $0
DATA ·vm4mask+104(SB)/8, $0
DATA ·vm4mask+112(SB)/8, $0
DATA ·vm4mask+120(SB)/8, $0
GLOBL ·vm4mask(SB), RODATA|NOPTR, $128

// func gemvT4AVX2(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int)
//
// out[v·ldo + j] = Σ_{l<rows} x[v·ldx + l·incx]·m[l·ld + j] for v < 4, j < cols
// (AVX2 + FMA). Columns go in chunks of 12 held in 12 accumulators (4
// vectors × 3 ymm) while the rows of m stream past once; per row, three
// loads of m, four broadcasts of x and twelve fused multiply-adds. Then
// one chunk of 8 (4 vectors × 2 ymm) if 8 to 11 columns are left, and the
// last 1–7 columns are one more 8-column chunk with masked loads and
// stores, so nothing outside the matrix or the output rows is touched.
// Every entry is summed row by row with fused multiply-adds. rows ≥ 1,
// cols ≥ 1.
TEXT ·gemvT4AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R9
	SHLQ $3, R9            // ldo in bytes
	MOVQ x+16(FP), SI
	MOVQ ldx+24(FP), R12
	SHLQ $3, R12           // ldx in bytes
	LEAQ (R12)(R12*2), R13 // 3·ldx in bytes
	MOVQ m+32(FP), R8
	MOVQ incx+64(FP), R14
	SHLQ $3, R14           // incx in bytes
	MOVQ rows+40(FP), AX
	IMULQ R14, AX
	ADDQ SI, AX            // &x[rows·incx]: end of the row loop
	MOVQ cols+48(FP), R10
	MOVQ ld+56(FP), DX
	SHLQ $3, DX            // ld in bytes
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
	LEAQ   (R8)(R11*8), BX // &m[0·ld + j]
	MOVQ   SI, CX          // &x[0·ldx + l·incx]

c12row:
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
	ADDQ         R14, CX
	CMPQ         CX, AX
	JLT          c12row

	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
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
	MOVQ R10, CX
	SUBQ R11, CX
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
	LEAQ   (R8)(R11*8), BX // &m[0·ld + j]
	MOVQ   SI, CX          // &x[0·ldx + l·incx]

c8row:
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
	ADDQ         R14, CX
	CMPQ         CX, AX
	JLT          c8row

	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
	VMOVUPD Y0, (BX)
	VMOVUPD Y1, 32(BX)
	VMOVUPD Y2, (BX)(R9*1)
	VMOVUPD Y3, 32(BX)(R9*1)
	VMOVUPD Y4, (CX)
	VMOVUPD Y5, 32(CX)
	VMOVUPD Y6, (CX)(R9*1)
	VMOVUPD Y7, 32(CX)(R9*1)
	ADDQ    $8, R11
	JMP     c8

tail:
	CMPQ CX, $0
	JLE  done
	NEGQ CX
	ADDQ $8, CX                 // 8 − r
	LEAQ ·vm4mask(SB), BX
	VMOVDQU (BX)(CX*8), Y14     // lanes j..j+3 below cols
	VMOVDQU 32(BX)(CX*8), Y15   // lanes j+4..j+7 below cols
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

tailrow:
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
	ADDQ         R14, CX
	CMPQ         CX, AX
	JLT          tailrow

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

done:
	VZEROUPPER
	RET

// func gemvT4AddAVX2(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int)
//
// out[v·ldo + j] += Σ_{l<rows} x[v·ldx + l·incx]·m[l·ld + j] for v < 4, j < cols
// (AVX2 + FMA): gemvT4AVX2 with its accumulators loaded from out instead of
// zeroed, so each entry's chain of fused multiply-adds continues from the
// value in out. Columns go in chunks of 12 held in 12 accumulators (4
// vectors × 3 ymm) while the rows of m stream past once; per row, three
// loads of m, four broadcasts of x and twelve fused multiply-adds. Then
// one chunk of 8 (4 vectors × 2 ymm) if 8 to 11 columns are left, and the
// last 1–7 columns are one more 8-column chunk with masked loads and
// stores, so nothing outside the matrix or the output rows is touched.
// Every entry is summed row by row with fused multiply-adds. rows ≥ 1,
// cols ≥ 1.
TEXT ·gemvT4AddAVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R9
	SHLQ $3, R9            // ldo in bytes
	MOVQ x+16(FP), SI
	MOVQ ldx+24(FP), R12
	SHLQ $3, R12           // ldx in bytes
	LEAQ (R12)(R12*2), R13 // 3·ldx in bytes
	MOVQ m+32(FP), R8
	MOVQ incx+64(FP), R14
	SHLQ $3, R14           // incx in bytes
	MOVQ rows+40(FP), AX
	IMULQ R14, AX
	ADDQ SI, AX            // &x[rows·incx]: end of the row loop
	MOVQ cols+48(FP), R10
	MOVQ ld+56(FP), DX
	SHLQ $3, DX            // ld in bytes
	XORQ R11, R11          // column j

ac12:
	MOVQ R10, CX
	SUBQ R11, CX
	CMPQ CX, $12
	JLT  ac8
	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
	VMOVUPD (BX), Y4
	VMOVUPD 32(BX), Y5
	VMOVUPD 64(BX), Y6
	VMOVUPD (BX)(R9*1), Y7
	VMOVUPD 32(BX)(R9*1), Y8
	VMOVUPD 64(BX)(R9*1), Y9
	VMOVUPD (CX), Y10
	VMOVUPD 32(CX), Y11
	VMOVUPD 64(CX), Y12
	VMOVUPD (CX)(R9*1), Y13
	VMOVUPD 32(CX)(R9*1), Y14
	VMOVUPD 64(CX)(R9*1), Y15
	LEAQ   (R8)(R11*8), BX // &m[0·ld + j]
	MOVQ   SI, CX          // &x[0·ldx + l·incx]

ac12row:
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
	ADDQ         R14, CX
	CMPQ         CX, AX
	JLT          ac12row

	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
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
	JMP     ac12

ac8:
	MOVQ R10, CX
	SUBQ R11, CX
	CMPQ CX, $8
	JLT  atail
	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
	VMOVUPD (BX), Y0
	VMOVUPD 32(BX), Y1
	VMOVUPD (BX)(R9*1), Y2
	VMOVUPD 32(BX)(R9*1), Y3
	VMOVUPD (CX), Y4
	VMOVUPD 32(CX), Y5
	VMOVUPD (CX)(R9*1), Y6
	VMOVUPD 32(CX)(R9*1), Y7
	LEAQ   (R8)(R11*8), BX // &m[0·ld + j]
	MOVQ   SI, CX          // &x[0·ldx + l·incx]

ac8row:
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
	ADDQ         R14, CX
	CMPQ         CX, AX
	JLT          ac8row

	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
	VMOVUPD Y0, (BX)
	VMOVUPD Y1, 32(BX)
	VMOVUPD Y2, (BX)(R9*1)
	VMOVUPD Y3, 32(BX)(R9*1)
	VMOVUPD Y4, (CX)
	VMOVUPD Y5, 32(CX)
	VMOVUPD Y6, (CX)(R9*1)
	VMOVUPD Y7, 32(CX)(R9*1)
	ADDQ    $8, R11
	JMP     ac8

atail:
	CMPQ CX, $0
	JLE  adone
	NEGQ CX
	ADDQ $8, CX                 // 8 − r
	LEAQ ·vm4mask(SB), BX
	VMOVDQU (BX)(CX*8), Y14     // lanes j..j+3 below cols
	VMOVDQU 32(BX)(CX*8), Y15   // lanes j+4..j+7 below cols
	LEAQ       (DI)(R11*8), BX
	LEAQ       (BX)(R9*2), CX
	VMASKMOVPD (BX), Y14, Y0
	VMASKMOVPD 32(BX), Y15, Y1
	VMASKMOVPD (BX)(R9*1), Y14, Y2
	VMASKMOVPD 32(BX)(R9*1), Y15, Y3
	VMASKMOVPD (CX), Y14, Y4
	VMASKMOVPD 32(CX), Y15, Y5
	VMASKMOVPD (CX)(R9*1), Y14, Y6
	VMASKMOVPD 32(CX)(R9*1), Y15, Y7
	LEAQ   (R8)(R11*8), BX
	MOVQ   SI, CX

atailrow:
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
	ADDQ         R14, CX
	CMPQ         CX, AX
	JLT          atailrow

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

adone:
	VZEROUPPER
	RET
