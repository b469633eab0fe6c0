//go:build !noasm

#include "textflag.h"

// func ger4AVX2(a *float64, lda int, x *float64, m int, y *float64, ldy int, n int)
//
// a[i·lda + j] += x[4i]·y[j] + x[4i+1]·y[ldy+j] + x[4i+2]·y[2ldy+j] +
// x[4i+3]·y[3ldy+j] for i < m, j < n (AVX2 + FMA), summed in that order.
// Rows go in pairs: per pair, the eight x are broadcast once and each
// 4-column chunk of the four y rows is loaded once for both rows (6 loads
// per 8 FMAs); then 1 column at a time. A last odd row goes 8, 4, then 1
// columns at a time, the y rows read straight from memory.
TEXT ·ger4AVX2(SB), NOSPLIT, $0-56
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
	ANDQ $-4, BX           // columns done 4 at a time for row pairs

r4pair:
	CMPQ         R10, $2
	JLT          r4single
	LEAQ         (DI)(DX*1), R8 // second row of the pair
	VBROADCASTSD 0(R9), Y0
	VBROADCASTSD 8(R9), Y1
	VBROADCASTSD 16(R9), Y2
	VBROADCASTSD 24(R9), Y3
	VBROADCASTSD 32(R9), Y6
	VBROADCASTSD 40(R9), Y7
	VBROADCASTSD 48(R9), Y8
	VBROADCASTSD 56(R9), Y9
	XORQ         AX, AX
	CMPQ         BX, $0
	JE           r4ptail

r4ploop:
	VMOVUPD     (SI)(AX*8), Y10
	VMOVUPD     (R11)(AX*8), Y11
	VMOVUPD     (R12)(AX*8), Y12
	VMOVUPD     (R13)(AX*8), Y13
	VMOVUPD     (DI)(AX*8), Y4
	VMOVUPD     (R8)(AX*8), Y5
	VFMADD231PD Y10, Y0, Y4
	VFMADD231PD Y10, Y6, Y5
	VFMADD231PD Y11, Y1, Y4
	VFMADD231PD Y11, Y7, Y5
	VFMADD231PD Y12, Y2, Y4
	VFMADD231PD Y12, Y8, Y5
	VFMADD231PD Y13, Y3, Y4
	VFMADD231PD Y13, Y9, Y5
	VMOVUPD     Y4, (DI)(AX*8)
	VMOVUPD     Y5, (R8)(AX*8)
	ADDQ        $4, AX
	CMPQ        AX, BX
	JLT         r4ploop

r4ptail:
	CMPQ AX, CX
	JGE  r4pnext

r4ploop1:
	VMOVSD      (SI)(AX*8), X10
	VMOVSD      (R11)(AX*8), X11
	VMOVSD      (R12)(AX*8), X12
	VMOVSD      (R13)(AX*8), X13
	VMOVSD      (DI)(AX*8), X4
	VMOVSD      (R8)(AX*8), X5
	VFMADD231SD X10, X0, X4
	VFMADD231SD X10, X6, X5
	VFMADD231SD X11, X1, X4
	VFMADD231SD X11, X7, X5
	VFMADD231SD X12, X2, X4
	VFMADD231SD X12, X8, X5
	VFMADD231SD X13, X3, X4
	VFMADD231SD X13, X9, X5
	VMOVSD      X4, (DI)(AX*8)
	VMOVSD      X5, (R8)(AX*8)
	INCQ        AX
	CMPQ        AX, CX
	JLT         r4ploop1

r4pnext:
	LEAQ (DI)(DX*2), DI
	ADDQ $64, R9
	SUBQ $2, R10
	JMP  r4pair

r4single:
	MOVQ CX, BX
	ANDQ $-8, BX           // a last odd row: columns 8 at a time
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

// lanemask<>+32s is a lane-select mask for lane s of a 4-wide vector.
DATA lanemask<>+0(SB)/8, $0xffffffffffffffff
DATA lanemask<>+8(SB)/8, $0
DATA lanemask<>+16(SB)/8, $0
DATA lanemask<>+24(SB)/8, $0
DATA lanemask<>+32(SB)/8, $0
DATA lanemask<>+40(SB)/8, $0xffffffffffffffff
DATA lanemask<>+48(SB)/8, $0
DATA lanemask<>+56(SB)/8, $0
DATA lanemask<>+64(SB)/8, $0
DATA lanemask<>+72(SB)/8, $0
DATA lanemask<>+80(SB)/8, $0xffffffffffffffff
DATA lanemask<>+88(SB)/8, $0
DATA lanemask<>+96(SB)/8, $0
DATA lanemask<>+104(SB)/8, $0
DATA lanemask<>+112(SB)/8, $0
DATA lanemask<>+120(SB)/8, $0xffffffffffffffff
GLOBL lanemask<>(SB), RODATA|NOPTR, $128

// func gjPanel4AVX2(p *float64, lda int, m int, s int, skip int, x *float64, pc *float64, inv float64, from int) (next int, best float64)
//
// For r < m, r ≠ skip, with q = p + r·lda: f = 0 − q[s]; x[4r] = f;
// q[0..3] = q[0..3] + f·pc[0..3] with lane s replaced by f·inv (one FMA and
// a blend, one store). For r ≥ from it also tracks the first largest
// |q[s+1]| of the updated rows: next and best (next = −1 when from ≥ m);
// a NaN is never larger, as in the unblocked pivot search.
TEXT ·gjPanel4AVX2(SB), NOSPLIT, $0-88
	MOVQ         p+0(FP), DI
	MOVQ         lda+8(FP), DX
	SHLQ         $3, DX
	MOVQ         m+16(FP), CX
	MOVQ         s+24(FP), BX
	MOVQ         skip+32(FP), R8
	MOVQ         x+40(FP), SI
	MOVQ         pc+48(FP), R9
	MOVQ         from+64(FP), R12
	VMOVUPD      (R9), Y1
	VBROADCASTSD inv+56(FP), Y2
	MOVQ         BX, R11
	SHLQ         $5, R11
	LEAQ         lanemask<>(SB), R10
	VMOVUPD      (R10)(R11*1), Y3
	VPCMPEQQ     X9, X9, X9
	VPSRLQ       $1, X9, X9     // |.| mask
	VXORPD       X10, X10, X10
	VXORPD       X8, X8, X8     // best
	MOVQ         $-1, R13       // next
	XORQ         AX, AX

gprow:
	CMPQ AX, CX
	JGE  gpdone
	CMPQ AX, R8
	JEQ  gpnext
	VSUBSD       (DI)(BX*8), X10, X0
	VMOVSD       X0, (SI)
	VBROADCASTSD X0, Y4
	VMULPD       Y2, Y4, Y5
	VFMADD213PD  (DI), Y1, Y4
	VBLENDVPD    Y3, Y5, Y4, Y4
	VMOVUPD      Y4, (DI)
	CMPQ         AX, R12
	JLT          gpnext
	VMOVSD       8(DI)(BX*8), X7
	VANDPD       X9, X7, X7
	JNE          gpcmp
	VMOVAPD      X7, X8         // first candidate
	MOVQ         AX, R13
	JMP          gpnext

gpcmp:
	VUCOMISD X8, X7
	JLS      gpnext             // not |q[s+1]| > best (or NaN)
	VMOVAPD  X7, X8
	MOVQ     AX, R13

gpnext:
	ADDQ DX, DI
	ADDQ $32, SI
	INCQ AX
	JMP  gprow

gpdone:
	MOVQ   R13, next+72(FP)
	VMOVSD X8, best+80(FP)
	VZEROUPPER
	RET
