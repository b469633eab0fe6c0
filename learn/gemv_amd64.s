#include "textflag.h"

// func dot4FMA(a *float64, stride int, x *float64, n int, out *float64)
//
// out[q] = Σ_{j<n} a[q·stride + j]·x[j] for q = 0..3 (AVX2 + FMA).
TEXT ·dot4FMA(SB), NOSPLIT, $0-40
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

// func axpyFMA(alpha float64, x *float64, y *float64, n int)
//
// y[j] += alpha·x[j] for j < n (AVX2 + FMA).
TEXT ·axpyFMA(SB), NOSPLIT, $0-32
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

// func vecmatFMA(out *float64, x *float64, m *float64, rows, cols, ld int)
//
// out[j] = Σ_{l<rows} x[l]·m[l·ld + j] for j < cols (AVX2 + FMA). Columns
// go in chunks of 16, then 4, then 1; within a chunk, even and odd rows
// feed separate accumulators so that the FMA chains overlap. rows ≥ 1.
TEXT ·vecmatFMA(SB), NOSPLIT, $0-48
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

// func adamAVX(x, m, v, gr *float64, n int, k *float64) (sum float64)
//
// Adam's update on n entries with k = [β₁, 1−β₁, β₂, 1−β₂, step, ε],
// operation for operation as adamApply (no fused multiply-adds, so the
// results are identical); returns the sum of the new x.
TEXT ·adamAVX(SB), NOSPLIT, $0-56
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
