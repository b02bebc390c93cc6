#include "textflag.h"

// func mulChain(n uint64) uint64
//
// Eight IMULs, each depending on the one before: 24 cycles per iteration
// on the x86-64 cores of the last fifteen years (IMUL r64, r64 has a
// latency of three cycles on Intel since Nehalem and on every AMD Zen),
// and no renamer folds a multiplication away, as newer Intel cores fold
// chains of ADDs of an immediate. The loop's own DEC and JNZ run beside
// them. The result is 3^(8n) (mod 2^64).
TEXT ·mulChain(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	MOVQ $1, AX
	MOVQ $3, BX
	TESTQ CX, CX
	JZ done
loop:
	IMULQ BX, AX
	IMULQ BX, AX
	IMULQ BX, AX
	IMULQ BX, AX
	IMULQ BX, AX
	IMULQ BX, AX
	IMULQ BX, AX
	IMULQ BX, AX
	DECQ CX
	JNZ loop
done:
	MOVQ AX, ret+8(FP)
	RET

// func mulSpread(n uint64) uint64
//
// Four multiplications per iteration, each on its own accumulator, and
// fourteen additions spread over seven more: nineteen independent
// operations per iteration, bound by the multiplier's throughput (four
// cycles) with the core's issue width nearly full, instead of by latency
// as mulChain is. A thread that shares the core (a sibling hyperthread on
// the host) takes issue slots and ports from it, as it does from a BPF
// program's path, where a dependent chain hardly notices. The result is
// 4*3^n + 14n (mod 2^64).
TEXT ·mulSpread(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	MOVQ $3, BX
	MOVQ $1, SI
	MOVQ $1, R8
	MOVQ $1, R9
	MOVQ $1, R10
	MOVQ $1, R11
	XORQ R12, R12
	XORQ R13, R13
	XORQ R14, R14
	XORQ R15, R15
	XORQ DI, DI
	XORQ DX, DX
	XORQ AX, AX
	TESTQ CX, CX
	JZ sdone
sloop:
	IMULQ BX, R8
	ADDQ SI, R12
	ADDQ SI, R13
	ADDQ SI, R14
	IMULQ BX, R9
	ADDQ SI, R15
	ADDQ SI, DI
	ADDQ SI, DX
	IMULQ BX, R10
	ADDQ SI, AX
	ADDQ SI, R12
	ADDQ SI, R13
	IMULQ BX, R11
	ADDQ SI, R14
	ADDQ SI, R15
	ADDQ SI, DI
	ADDQ SI, DX
	ADDQ SI, AX
	DECQ CX
	JNZ sloop
sdone:
	ADDQ R9, R8
	ADDQ R10, R8
	ADDQ R11, R8
	ADDQ R12, R8
	ADDQ R13, R8
	ADDQ R14, R8
	ADDQ R15, R8
	ADDQ DI, R8
	ADDQ DX, R8
	ADDQ AX, R8
	MOVQ R8, ret+8(FP)
	RET
