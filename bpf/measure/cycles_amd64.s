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
