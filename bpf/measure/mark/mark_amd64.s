#include "textflag.h"

// The window marks: 7-byte NOPs whose displacement spells "bpfA" and
// "bpfZ", which tools/anatomy's plugin recognises by their bytes. Each
// is a function of its own so that no compiler schedules work across it.

// func Open()
TEXT ·Open(SB), NOSPLIT|NOFRAME, $0-0
	BYTE $0x0f; BYTE $0x1f; BYTE $0x80; BYTE $0x62; BYTE $0x70; BYTE $0x66; BYTE $0x41
	RET

// func Close()
TEXT ·Close(SB), NOSPLIT|NOFRAME, $0-0
	BYTE $0x0f; BYTE $0x1f; BYTE $0x80; BYTE $0x62; BYTE $0x70; BYTE $0x66; BYTE $0x5a
	RET

// func tell(base *byte, v uint64)
//
// tell names v to the plugin: a load from base after a NOP spelling
// "bpfB", then four from base plus 16 bits of v, most significant first,
// each after a NOP spelling "bpfT". The plugin reads the loads'
// addresses; each NOP and its load must be in one translated block, so
// the function starts a 128-byte line and does not branch.
TEXT ·tell(SB), NOSPLIT, $0-16
	PCALIGN $128
	MOVQ base+0(FP), BX
	MOVQ v+8(FP), CX
	BYTE $0x0f; BYTE $0x1f; BYTE $0x80; BYTE $0x62; BYTE $0x70; BYTE $0x66; BYTE $0x42
	MOVBLZX (BX), AX
	MOVQ CX, DX
	SHRQ $48, DX
	BYTE $0x0f; BYTE $0x1f; BYTE $0x80; BYTE $0x62; BYTE $0x70; BYTE $0x66; BYTE $0x54
	MOVBLZX (BX)(DX*1), AX
	MOVQ CX, DX
	SHRQ $32, DX
	ANDQ $0xffff, DX
	BYTE $0x0f; BYTE $0x1f; BYTE $0x80; BYTE $0x62; BYTE $0x70; BYTE $0x66; BYTE $0x54
	MOVBLZX (BX)(DX*1), AX
	MOVQ CX, DX
	SHRQ $16, DX
	ANDQ $0xffff, DX
	BYTE $0x0f; BYTE $0x1f; BYTE $0x80; BYTE $0x62; BYTE $0x70; BYTE $0x66; BYTE $0x54
	MOVBLZX (BX)(DX*1), AX
	MOVQ CX, DX
	ANDQ $0xffff, DX
	BYTE $0x0f; BYTE $0x1f; BYTE $0x80; BYTE $0x62; BYTE $0x70; BYTE $0x66; BYTE $0x54
	MOVBLZX (BX)(DX*1), AX
	RET
