#include "textflag.h"

// func vecmat4AVX512(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int)
//
// out[v·ldo + j] = Σ_{l<rows} x[v·ldx + l·incx]·m[l·ld + j] for v < 4, j < cols
// (AVX-512F). The columns go in passes of up to 32 (four zmm of 8 lanes per
// vector, 16 accumulators Z16–Z31) while the rows of m stream past once;
// per row, up to four loads of m, four broadcasts of x and up to sixteen
// fused multiply-adds. A pass takes min(32, columns left) columns in
// ⌈r/8⌉ registers (p4, p3, p2, p1); the last register of a pass is loaded
// with zeroing under the opmask K1 = (1<<lanes)−1 and stored under K1, so
// masked lanes of m are never read (nor can they fault) and nothing outside
// the output rows is written. cols = 30 is one pass, cols = 60 two (32 + 28).
// Every entry is summed row by row with fused multiply-adds, as in
// vecmat4FMA, so both kernels give the same bits. rows ≥ 1, cols ≥ 1.
TEXT ·vecmat4AVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R9
	SHLQ $3, R9            // ldo in bytes
	MOVQ x+16(FP), SI
	MOVQ ldx+24(FP), R12
	SHLQ $3, R12           // ldx in bytes
	LEAQ (R12)(R12*2), R13 // 3·ldx in bytes
	MOVQ m+32(FP), R8
	MOVQ incx+64(FP), R15
	SHLQ $3, R15           // incx in bytes (R15: no global is accessed)
	MOVQ rows+40(FP), AX
	IMULQ R15, AX
	ADDQ SI, AX            // &x[rows·incx]: end of the row loop
	MOVQ cols+48(FP), R10
	MOVQ ld+56(FP), DX
	SHLQ $3, DX            // ld in bytes
	XORQ R11, R11          // column j
	XORQ R14, R14          // width of the previous pass

next:
	ADDQ R14, R11
	MOVQ R10, R14
	SUBQ R11, R14          // columns left
	JLE  done
	CMPQ R14, $32
	JLE  width
	MOVQ $32, R14

width:
	// R14 = r = width of this pass (1..32); the last register holds
	// ((r−1) mod 8) + 1 lanes.
	LEAQ  -1(R14), CX
	ANDQ  $7, CX
	INCQ  CX
	MOVL  $1, BX
	SHLL  CX, BX
	DECL  BX
	KMOVW BX, K1
	CMPQ  R14, $24
	JGT   p4
	CMPQ  R14, $16
	JGT   p3
	CMPQ  R14, $8
	JGT   p2
	JMP   p1

p4:
	VPXORQ       Z16, Z16, Z16
	VPXORQ       Z17, Z17, Z17
	VPXORQ       Z18, Z18, Z18
	VPXORQ       Z19, Z19, Z19
	VPXORQ       Z20, Z20, Z20
	VPXORQ       Z21, Z21, Z21
	VPXORQ       Z22, Z22, Z22
	VPXORQ       Z23, Z23, Z23
	VPXORQ       Z24, Z24, Z24
	VPXORQ       Z25, Z25, Z25
	VPXORQ       Z26, Z26, Z26
	VPXORQ       Z27, Z27, Z27
	VPXORQ       Z28, Z28, Z28
	VPXORQ       Z29, Z29, Z29
	VPXORQ       Z30, Z30, Z30
	VPXORQ       Z31, Z31, Z31
	LEAQ         (R8)(R11*8), BX // &m[0·ld + j]
	MOVQ         SI, CX          // &x[0·ldx + l·incx]

p4row:
	VMOVUPD      (BX), Z0
	VMOVUPD      64(BX), Z1
	VMOVUPD      128(BX), Z2
	VMOVUPD.Z    192(BX), K1, Z3
	VBROADCASTSD (CX), Z4
	VBROADCASTSD (CX)(R12*1), Z5
	VBROADCASTSD (CX)(R12*2), Z6
	VBROADCASTSD (CX)(R13*1), Z7
	VFMADD231PD  Z0, Z4, Z16
	VFMADD231PD  Z1, Z4, Z17
	VFMADD231PD  Z2, Z4, Z18
	VFMADD231PD  Z3, Z4, Z19
	VFMADD231PD  Z0, Z5, Z20
	VFMADD231PD  Z1, Z5, Z21
	VFMADD231PD  Z2, Z5, Z22
	VFMADD231PD  Z3, Z5, Z23
	VFMADD231PD  Z0, Z6, Z24
	VFMADD231PD  Z1, Z6, Z25
	VFMADD231PD  Z2, Z6, Z26
	VFMADD231PD  Z3, Z6, Z27
	VFMADD231PD  Z0, Z7, Z28
	VFMADD231PD  Z1, Z7, Z29
	VFMADD231PD  Z2, Z7, Z30
	VFMADD231PD  Z3, Z7, Z31
	ADDQ         DX, BX
	ADDQ         R15, CX
	CMPQ         CX, AX
	JLT          p4row

	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
	VMOVUPD Z16, (BX)
	VMOVUPD Z17, 64(BX)
	VMOVUPD Z18, 128(BX)
	VMOVUPD Z19, K1, 192(BX)
	VMOVUPD Z20, (BX)(R9*1)
	VMOVUPD Z21, 64(BX)(R9*1)
	VMOVUPD Z22, 128(BX)(R9*1)
	VMOVUPD Z23, K1, 192(BX)(R9*1)
	VMOVUPD Z24, (CX)
	VMOVUPD Z25, 64(CX)
	VMOVUPD Z26, 128(CX)
	VMOVUPD Z27, K1, 192(CX)
	VMOVUPD Z28, (CX)(R9*1)
	VMOVUPD Z29, 64(CX)(R9*1)
	VMOVUPD Z30, 128(CX)(R9*1)
	VMOVUPD Z31, K1, 192(CX)(R9*1)
	JMP     next

p3:
	VPXORQ       Z16, Z16, Z16
	VPXORQ       Z17, Z17, Z17
	VPXORQ       Z18, Z18, Z18
	VPXORQ       Z19, Z19, Z19
	VPXORQ       Z20, Z20, Z20
	VPXORQ       Z21, Z21, Z21
	VPXORQ       Z22, Z22, Z22
	VPXORQ       Z23, Z23, Z23
	VPXORQ       Z24, Z24, Z24
	VPXORQ       Z25, Z25, Z25
	VPXORQ       Z26, Z26, Z26
	VPXORQ       Z27, Z27, Z27
	LEAQ         (R8)(R11*8), BX // &m[0·ld + j]
	MOVQ         SI, CX          // &x[0·ldx + l·incx]

p3row:
	VMOVUPD      (BX), Z0
	VMOVUPD      64(BX), Z1
	VMOVUPD.Z    128(BX), K1, Z2
	VBROADCASTSD (CX), Z4
	VBROADCASTSD (CX)(R12*1), Z5
	VBROADCASTSD (CX)(R12*2), Z6
	VBROADCASTSD (CX)(R13*1), Z7
	VFMADD231PD  Z0, Z4, Z16
	VFMADD231PD  Z1, Z4, Z17
	VFMADD231PD  Z2, Z4, Z18
	VFMADD231PD  Z0, Z5, Z19
	VFMADD231PD  Z1, Z5, Z20
	VFMADD231PD  Z2, Z5, Z21
	VFMADD231PD  Z0, Z6, Z22
	VFMADD231PD  Z1, Z6, Z23
	VFMADD231PD  Z2, Z6, Z24
	VFMADD231PD  Z0, Z7, Z25
	VFMADD231PD  Z1, Z7, Z26
	VFMADD231PD  Z2, Z7, Z27
	ADDQ         DX, BX
	ADDQ         R15, CX
	CMPQ         CX, AX
	JLT          p3row

	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
	VMOVUPD Z16, (BX)
	VMOVUPD Z17, 64(BX)
	VMOVUPD Z18, K1, 128(BX)
	VMOVUPD Z19, (BX)(R9*1)
	VMOVUPD Z20, 64(BX)(R9*1)
	VMOVUPD Z21, K1, 128(BX)(R9*1)
	VMOVUPD Z22, (CX)
	VMOVUPD Z23, 64(CX)
	VMOVUPD Z24, K1, 128(CX)
	VMOVUPD Z25, (CX)(R9*1)
	VMOVUPD Z26, 64(CX)(R9*1)
	VMOVUPD Z27, K1, 128(CX)(R9*1)
	JMP     next

p2:
	VPXORQ       Z16, Z16, Z16
	VPXORQ       Z17, Z17, Z17
	VPXORQ       Z18, Z18, Z18
	VPXORQ       Z19, Z19, Z19
	VPXORQ       Z20, Z20, Z20
	VPXORQ       Z21, Z21, Z21
	VPXORQ       Z22, Z22, Z22
	VPXORQ       Z23, Z23, Z23
	LEAQ         (R8)(R11*8), BX // &m[0·ld + j]
	MOVQ         SI, CX          // &x[0·ldx + l·incx]

p2row:
	VMOVUPD      (BX), Z0
	VMOVUPD.Z    64(BX), K1, Z1
	VBROADCASTSD (CX), Z4
	VBROADCASTSD (CX)(R12*1), Z5
	VBROADCASTSD (CX)(R12*2), Z6
	VBROADCASTSD (CX)(R13*1), Z7
	VFMADD231PD  Z0, Z4, Z16
	VFMADD231PD  Z1, Z4, Z17
	VFMADD231PD  Z0, Z5, Z18
	VFMADD231PD  Z1, Z5, Z19
	VFMADD231PD  Z0, Z6, Z20
	VFMADD231PD  Z1, Z6, Z21
	VFMADD231PD  Z0, Z7, Z22
	VFMADD231PD  Z1, Z7, Z23
	ADDQ         DX, BX
	ADDQ         R15, CX
	CMPQ         CX, AX
	JLT          p2row

	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
	VMOVUPD Z16, (BX)
	VMOVUPD Z17, K1, 64(BX)
	VMOVUPD Z18, (BX)(R9*1)
	VMOVUPD Z19, K1, 64(BX)(R9*1)
	VMOVUPD Z20, (CX)
	VMOVUPD Z21, K1, 64(CX)
	VMOVUPD Z22, (CX)(R9*1)
	VMOVUPD Z23, K1, 64(CX)(R9*1)
	JMP     next

p1:
	VPXORQ       Z16, Z16, Z16
	VPXORQ       Z17, Z17, Z17
	VPXORQ       Z18, Z18, Z18
	VPXORQ       Z19, Z19, Z19
	LEAQ         (R8)(R11*8), BX // &m[0·ld + j]
	MOVQ         SI, CX          // &x[0·ldx + l·incx]

p1row:
	VMOVUPD.Z    (BX), K1, Z0
	VBROADCASTSD (CX), Z4
	VBROADCASTSD (CX)(R12*1), Z5
	VBROADCASTSD (CX)(R12*2), Z6
	VBROADCASTSD (CX)(R13*1), Z7
	VFMADD231PD  Z0, Z4, Z16
	VFMADD231PD  Z0, Z5, Z17
	VFMADD231PD  Z0, Z6, Z18
	VFMADD231PD  Z0, Z7, Z19
	ADDQ         DX, BX
	ADDQ         R15, CX
	CMPQ         CX, AX
	JLT          p1row

	LEAQ    (DI)(R11*8), BX // &out[0·ldo + j]
	LEAQ    (BX)(R9*2), CX  // &out[2·ldo + j]
	VMOVUPD Z16, K1, (BX)
	VMOVUPD Z17, K1, (BX)(R9*1)
	VMOVUPD Z18, K1, (CX)
	VMOVUPD Z19, K1, (CX)(R9*1)
	JMP     next

done:
	VZEROUPPER
	RET

// func adamAVX512(x, m, v, gr, kz *float64, n int, x2, m2, v2, gr2, kz2 *float64, n2 int, k *float64) (sum float64)
//
// Adam's update (AVX-512F) on n entries of x, m, v with gradient
// g = gr + sc·kz, then on n2 entries of x2, m2, v2 with g = gr2 + sc·kz2 (an
// item's rows of V and B; n2 = 0 for one set), with k = [β₁, 1−β₁, β₂,
// 1−β₂, step, ε, sc]. g is one fused multiply-add (axpyFMA's rounding);
// with sc = 0 and kz = gr it is gr bit for bit (for finite gr; an infinite
// one gives NaN where it gave ±∞, and a NaN x either way). Eight entries per zmm
// register; the last 1–7 of each set under the opmask K1, so nothing past
// entry n−1 (n2−1) is read or written. The second set goes through the same
// loop after the first, so the square roots and divisions of both overlap,
// and the call and the final reduction are paid once. Each entry gets
// adamApplyGo's and adamAVX's operations, m' = β₁m + (1−β₁)g,
// v' = β₂v + ((1−β₂)g)g, x' = x + (step·m')/(√v' + ε), with separate
// multiplies and adds (no fused multiply-adds: the same bits);
// sum, the sum of the new x, is added in another order (eight strided
// partial sums, then a tree), so only its finiteness is exact.
TEXT ·adamAVX512(SB), NOSPLIT, $0-112
	MOVQ         k+96(FP), R10
	VBROADCASTSD (R10), Z10
	VBROADCASTSD 8(R10), Z11
	VBROADCASTSD 16(R10), Z12
	VBROADCASTSD 24(R10), Z13
	VBROADCASTSD 32(R10), Z14
	VBROADCASTSD 40(R10), Z15
	VBROADCASTSD 48(R10), Z16
	VPXORQ       Z9, Z9, Z9
	MOVQ         x+0(FP), DI
	MOVQ         m+8(FP), SI
	MOVQ         v+16(FP), R8
	MOVQ         gr+24(FP), R9
	MOVQ         kz+32(FP), R13
	MOVQ         n+40(FP), R12
	XORQ         R11, R11        // set: 0, then 1

a7set:
	MOVQ         R12, CX
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-8, BX
	CMPQ         BX, $0
	JE           a7tail

a7loop:
	VMOVUPD     (R9)(AX*8), Z0
	VFMADD231PD (R13)(AX*8), Z16, Z0  // g = gr + sc·kz, one rounding
	VMULPD  (SI)(AX*8), Z10, Z1
	VMULPD  Z0, Z11, Z2
	VADDPD  Z2, Z1, Z1
	VMOVUPD Z1, (SI)(AX*8)
	VMULPD  (R8)(AX*8), Z12, Z3
	VMULPD  Z0, Z13, Z4
	VMULPD  Z0, Z4, Z4
	VADDPD  Z4, Z3, Z3
	VMOVUPD Z3, (R8)(AX*8)
	VSQRTPD Z3, Z5
	VADDPD  Z15, Z5, Z5
	VMULPD  Z1, Z14, Z6
	VDIVPD  Z5, Z6, Z6
	VADDPD  (DI)(AX*8), Z6, Z6
	VMOVUPD Z6, (DI)(AX*8)
	VADDPD  Z6, Z9, Z9
	ADDQ    $8, AX
	CMPQ    AX, BX
	JLT     a7loop

a7tail:
	SUBQ  AX, CX           // n mod 8 entries left
	JE    a7next
	MOVL  $1, BX
	SHLL  CX, BX
	DECL  BX
	KMOVW BX, K1
	VMOVUPD.Z (R9)(AX*8), K1, Z0
	VMOVUPD.Z (R13)(AX*8), K1, Z17
	VFMADD231PD Z17, Z16, Z0
	VMOVUPD.Z (SI)(AX*8), K1, Z1
	VMULPD    Z1, Z10, Z1
	VMULPD    Z0, Z11, Z2
	VADDPD    Z2, Z1, Z1
	VMOVUPD   Z1, K1, (SI)(AX*8)
	VMOVUPD.Z (R8)(AX*8), K1, Z3
	VMULPD    Z3, Z12, Z3
	VMULPD    Z0, Z13, Z4
	VMULPD    Z0, Z4, Z4
	VADDPD    Z4, Z3, Z3
	VMOVUPD   Z3, K1, (R8)(AX*8)
	VSQRTPD   Z3, Z5
	VADDPD    Z15, Z5, Z5
	VMULPD    Z1, Z14, Z6
	VDIVPD    Z5, Z6, Z6
	VMOVUPD.Z (DI)(AX*8), K1, Z7
	VADDPD    Z7, Z6, Z6
	VMOVUPD   Z6, K1, (DI)(AX*8)
	VADDPD    Z6, Z9, K1, Z9   // masked lanes may be NaN (0/0 when ε = 0)

a7next:
	TESTQ R11, R11
	JNE   a7red
	INCQ  R11
	MOVQ  x2+48(FP), DI
	MOVQ  m2+56(FP), SI
	MOVQ  v2+64(FP), R8
	MOVQ  gr2+72(FP), R9
	MOVQ  kz2+80(FP), R13
	MOVQ  n2+88(FP), R12
	JMP   a7set

a7red:
	VEXTRACTF64X4 $1, Z9, Y8
	VADDPD        Y8, Y9, Y9
	VEXTRACTF128  $1, Y9, X8
	VADDPD        X8, X9, X9
	VHADDPD       X9, X9, X9
	VMOVSD        X9, sum+104(FP)
	VZEROUPPER
	RET
