#include "textflag.h"

// func rank4FMA(a *float64, lda int, x *float64, m int, y *float64, ldy int, n int)
//
// a[i·lda + j] += x[4i]·y[j] + x[4i+1]·y[ldy+j] + x[4i+2]·y[2ldy+j] +
// x[4i+3]·y[3ldy+j] for i < m, j < n (AVX2 + FMA), summed in that order.
// Per row, the four x are broadcast once; columns go 8, then 4, then 1 at
// a time, the y rows read straight from memory (they stay in L1).
TEXT ·rank4FMA(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), DI
	MOVQ lda+8(FP), DX
	SHLQ $3, DX
	MOVQ x+16(FP), R9
	MOVQ m+24(FP), R10
	MOVQ y+32(FP), SI
	MOVQ ldy+40(FP), R8
	SHLQ $3, R8
	MOVQ n+48(FP), CX
	LEAQ (SI)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	MOVQ CX, BX
	ANDQ $-8, BX           // columns done 8 at a time
	MOVQ CX, R8
	ANDQ $-4, R8           // ... then 4 at a time

r4row:
	CMPQ R10, $0
	JLE  r4done
	VBROADCASTSD 0(R9), Y0
	VBROADCASTSD 8(R9), Y1
	VBROADCASTSD 16(R9), Y2
	VBROADCASTSD 24(R9), Y3
	XORQ         AX, AX
	CMPQ         BX, $0
	JE           r4quad

r4loop8:
	VMOVUPD     (DI)(AX*8), Y4
	VMOVUPD     32(DI)(AX*8), Y5
	VFMADD231PD (SI)(AX*8), Y0, Y4
	VFMADD231PD 32(SI)(AX*8), Y0, Y5
	VFMADD231PD (R11)(AX*8), Y1, Y4
	VFMADD231PD 32(R11)(AX*8), Y1, Y5
	VFMADD231PD (R12)(AX*8), Y2, Y4
	VFMADD231PD 32(R12)(AX*8), Y2, Y5
	VFMADD231PD (R13)(AX*8), Y3, Y4
	VFMADD231PD 32(R13)(AX*8), Y3, Y5
	VMOVUPD     Y4, (DI)(AX*8)
	VMOVUPD     Y5, 32(DI)(AX*8)
	ADDQ        $8, AX
	CMPQ        AX, BX
	JLT         r4loop8

r4quad:
	CMPQ        AX, R8
	JGE         r4tail
	VMOVUPD     (DI)(AX*8), Y4
	VFMADD231PD (SI)(AX*8), Y0, Y4
	VFMADD231PD (R11)(AX*8), Y1, Y4
	VFMADD231PD (R12)(AX*8), Y2, Y4
	VFMADD231PD (R13)(AX*8), Y3, Y4
	VMOVUPD     Y4, (DI)(AX*8)
	ADDQ        $4, AX

r4tail:
	CMPQ AX, CX
	JGE  r4next

r4loop1:
	VMOVSD      (DI)(AX*8), X4
	VFMADD231SD (SI)(AX*8), X0, X4
	VFMADD231SD (R11)(AX*8), X1, X4
	VFMADD231SD (R12)(AX*8), X2, X4
	VFMADD231SD (R13)(AX*8), X3, X4
	VMOVSD      X4, (DI)(AX*8)
	INCQ        AX
	CMPQ        AX, CX
	JLT         r4loop1

r4next:
	ADDQ DX, DI
	ADDQ $32, R9
	DECQ R10
	JMP  r4row

r4done:
	VZEROUPPER
	RET

// func gjPanelFMA(p *float64, lda int, m int, s int, skip int, x *float64, pc *float64, inv float64)
//
// For r < m, r ≠ skip, with q = p + r·lda: f = 0 − q[s]; x[4r] = f;
// q[0..3] += f·pc[0..3] (one 4-wide FMA); q[s] = f·inv.
TEXT ·gjPanelFMA(SB), NOSPLIT, $0-64
	MOVQ         p+0(FP), DI
	MOVQ         lda+8(FP), DX
	SHLQ         $3, DX
	MOVQ         m+16(FP), CX
	MOVQ         s+24(FP), BX
	MOVQ         skip+32(FP), R8
	MOVQ         x+40(FP), SI
	MOVQ         pc+48(FP), R9
	VMOVUPD      (R9), Y1
	VMOVSD       inv+56(FP), X2
	VXORPD       X3, X3, X3
	XORQ         AX, AX

gprow:
	CMPQ AX, CX
	JGE  gpdone
	CMPQ AX, R8
	JEQ  gpnext
	VSUBSD       (DI)(BX*8), X3, X0
	VMOVSD       X0, (SI)
	VBROADCASTSD X0, Y4
	VFMADD213PD  (DI), Y1, Y4
	VMOVUPD      Y4, (DI)
	VMULSD       X2, X0, X5
	VMOVSD       X5, (DI)(BX*8)

gpnext:
	ADDQ DX, DI
	ADDQ $32, SI
	INCQ AX
	JMP  gprow

gpdone:
	VZEROUPPER
	RET
