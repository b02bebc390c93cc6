/*
 * anatomy.c: a QEMU TCG plugin that counts, inside marked windows of a
 * guest's execution, how often each translated block ran.
 *
 * The guest marks a window with two instructions no compiler emits, 7-byte
 * NOPs whose displacement spells "bpfA" (open) and "bpfZ" (close): see
 * bpf/measure/anatomy. What the vCPU executes between them is counted
 * while it runs on the window's task, told by its kernel stack, which
 * every call the kernel makes writes to (a task's stack is 16 KiB,
 * aligned): code on another task's stack (after a context switch) or on
 * the IRQ stack (an interrupt's handler) is left out, as the suite's
 * thread clock leaves it out. So is what runs inside the functions the
 * guest names before its first window (the scheduler, interrupt
 * handlers, softirqs, on the task's own stack), from the call into one to
 * the next call made from as high on the stack. The guest names a function by four
 * loads, 16 bits of its address each, from a buffer whose base a first
 * load gives, each after a NOP spelling "bpfB" (the base) or "bpfT" (a
 * part). At each close the plugin writes the blocks that ran in the
 * window and how often; a block is described (its address and bytes)
 * the first time it runs in one. Which instructions a block holds, and
 * what they are, is decided on the host by tools/anatomy, with a real x86
 * decoder.
 *
 * Output, one record a line (out=FILE):
 *   B <id> <vaddr> <ninsns> <hex>.<hex>... a block, before its first use: each
 *                                          instruction's bytes, '.' between
 *   W <seq> <nblocks> <other>              a window closed, having left out
 *                                          <other> instructions run on other
 *                                          stacks; nblocks lines follow:
 *   <id> <count>
 *   X <what>                               something the reader must know
 *
 * Built against QEMU's plugin API version 1 (QEMU 7.2, Debian 12), which
 * Debian ships no header for: the few declarations it uses are below. Run:
 *   qemu-system-x86_64 -plugin anatomy.so,out=FILE ...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
} qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int, void *);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void *);
typedef uint32_t qemu_plugin_meminfo_t;
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int, qemu_plugin_meminfo_t, uint64_t, void *);
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *, qemu_plugin_vcpu_mem_cb_t,
				      enum qemu_plugin_cb_flags, enum qemu_plugin_mem_rw, void *);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, qemu_plugin_vcpu_udata_cb_t,
					  enum qemu_plugin_cb_flags, void *);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *, qemu_plugin_vcpu_udata_cb_t,
					    enum qemu_plugin_cb_flags, void *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void *);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* nopl 0x41667062(%rax) and nopl 0x5a667062(%rax). */
static const uint8_t mark_open[7] = {0x0f, 0x1f, 0x80, 'b', 'p', 'f', 'A'};
static const uint8_t mark_close[7] = {0x0f, 0x1f, 0x80, 'b', 'p', 'f', 'Z'};
static const uint8_t mark_base[7] = {0x0f, 0x1f, 0x80, 'b', 'p', 'f', 'B'};
static const uint8_t mark_part[7] = {0x0f, 0x1f, 0x80, 'b', 'p', 'f', 'T'};

struct block {
	uint64_t id, vaddr, count;
	uint32_t ninsns, nbytes;
	uint8_t *lens;
	int described, excluded, gen;
	uint8_t *bytes;
};

/* Kernel addresses have the top bit set; a kernel stack is 16 KiB. */
#define KERNEL(a) ((a) >> 63)
#define STACK_SHIFT 14
/*
 * The cpu_entry_area, where an interrupt from user space lands before
 * the kernel moves to the task's stack: a call made there is no task's.
 */
#define ENTRY_AREA(a) ((a) >= 0xfffffe0000000000ull && (a) < 0xfffffe8000000000ull)

static FILE *out;
static int open_window;
static uint64_t next_id, windows;
/* The stack the last kernel call wrote to, the window's task's, and the
 * instructions a window left out. */
static uint64_t cur_stack, win_stack, other;

/* The slot the last kernel call wrote its return address to, and while
 * inside an excluded function the slot of the call that entered it. */
static uint64_t last_call, excl_slot;
/* The functions the guest named, and the one being told. */
static uint64_t excl[256], tell_base, tell_val;
static int nexcl, tell_parts, excl_gen;
static struct block **touched;
static size_t ntouched, captouched;

static void die(const char *what)
{
	fprintf(stderr, "anatomy plugin: %s\n", what);
	exit(2);
}

static void on_block(unsigned int vcpu, void *udata)
{
	struct block *b = udata;
	(void)vcpu;
	if (!open_window)
		return;
	if (win_stack && cur_stack != win_stack) {
		other += b->ninsns;
		return;
	}

	if (b->gen != excl_gen) {
		/* Named after the block was translated. */
		b->gen = excl_gen;
		/*
		 * Holding the function's start, not starting there: with
		 * call-depth tracking a call enters the accounting thunk in
		 * the padding before the function and falls through.
		 */
		for (int i = 0; i < nexcl; i++)
			if (excl[i] >= b->vaddr && excl[i] < b->vaddr + b->nbytes)
				b->excluded = 1;
	}
	if (b->excluded && !excl_slot && win_stack)
		excl_slot = last_call;
	if (excl_slot) {
		other += b->ninsns;
		return;
	}
	if (b->count++ > 0)
		return;
	if (ntouched == captouched) {
		captouched = captouched ? 2 * captouched : 4096;
		touched = realloc(touched, captouched * sizeof(*touched));
		if (!touched)
			die("out of memory");
	}
	touched[ntouched++] = b;
}

static void on_open(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	if (open_window)
		fprintf(out, "X open inside window %llu\n", (unsigned long long)windows);
	open_window = 1;
	/* The window's task is the one whose stack the next kernel call
	 * writes to: the syscall's entry, or an interrupt's. */
	win_stack = 0;
	other = 0;
	excl_slot = 0;
}

static void on_tell(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
	(void)vcpu;
	(void)info;
	if (udata == mark_base) {
		tell_base = vaddr;
		tell_val = 0;
		tell_parts = 0;
		return;
	}
	tell_val = tell_val << 16 | ((vaddr - tell_base) & 0xffff);
	if (++tell_parts < 4)
		return;
	tell_parts = 0;
	if (nexcl < (int)(sizeof(excl) / sizeof(excl[0]))) {
		excl[nexcl++] = tell_val;
		excl_gen++;
	}
	else
		fprintf(out, "X too many functions to leave out: %llx\n", (unsigned long long)tell_val);
}

static void on_call(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
	(void)vcpu;
	(void)info;
	(void)udata;
	if (ENTRY_AREA(vaddr))
		return;
	cur_stack = vaddr >> STACK_SHIFT;
	last_call = vaddr;
	if (open_window && !win_stack)
		win_stack = cur_stack;
	/* Back in the caller of the excluded function: it calls again from
	 * the slot it called that function from, or from higher. */
	if (excl_slot && cur_stack == win_stack && vaddr >= excl_slot)
		excl_slot = 0;
}

/* is_call says whether an instruction is a near call: e8 rel32, or ff /2,
 * after any legacy and REX prefixes. */
static int is_call(const uint8_t *p, size_t len)
{
	size_t i = 0;
	while (i < len && (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0x2e || p[i] == 0x3e || p[i] == 0xf2 ||
			   p[i] == 0xf3 || (p[i] & 0xf0) == 0x40))
		i++;
	if (i >= len)
		return 0;
	if (p[i] == 0xe8)
		return 1;
	return p[i] == 0xff && i + 1 < len && ((p[i + 1] >> 3) & 7) == 2;
}

static void on_close(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	if (!open_window) {
		fprintf(out, "X close without open after window %llu\n", (unsigned long long)windows);
		return;
	}
	open_window = 0;
	for (size_t i = 0; i < ntouched; i++) {
		struct block *b = touched[i];
		if (b->described)
			continue;
		b->described = 1;
		fprintf(out, "B %llu %llx %u ", (unsigned long long)b->id, (unsigned long long)b->vaddr,
			b->ninsns);
		for (uint32_t j = 0, k = 0; k < b->ninsns; k++) {
			if (k > 0)
				fputc('.', out);
			for (uint32_t e = j + b->lens[k]; j < e; j++)
				fprintf(out, "%02x", b->bytes[j]);
		}
		fputc('\n', out);
	}
	if (windows == 0)
		fprintf(out, "X leaving out %d functions\n", nexcl);
	fprintf(out, "W %llu %zu %llu\n", (unsigned long long)windows++, ntouched, (unsigned long long)other);
	for (size_t i = 0; i < ntouched; i++) {
		fprintf(out, "%llu %llu\n", (unsigned long long)touched[i]->id,
			(unsigned long long)touched[i]->count);
		touched[i]->count = 0;
	}
	ntouched = 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), size = 0;
	struct block *b = calloc(1, sizeof(*b));
	(void)id;
	if (!b)
		die("out of memory");
	/*
	 * QEMU 7.2 gives an instruction that crosses a page only the bytes
	 * on its first page: its length is where the next one starts, and
	 * the bytes missing are written as zeros, which leave its opcode.
	 */
	for (size_t i = 0; i < n; i++)
		size += i + 1 < n ? qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i + 1)) -
					    qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i))
				  : qemu_plugin_insn_size(qemu_plugin_tb_get_insn(tb, i));
	b->bytes = calloc(size ? size : 1, 1);
	b->lens = calloc(n ? n : 1, 1);
	if (!b->bytes || !b->lens)
		die("out of memory");
	b->id = next_id++;
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->ninsns = n;
	b->gen = -1;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		size_t len = qemu_plugin_insn_size(insn), full = len;
		const uint8_t *data = qemu_plugin_insn_data(insn);
		if (i + 1 < n)
			full = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i + 1)) - qemu_plugin_insn_vaddr(insn);
		if (full < len || full > 15)
			full = len;
		memcpy(b->bytes + b->nbytes, data, len);
		b->nbytes += full;
		b->lens[i] = full;
		if (len == sizeof(mark_open) && !memcmp(data, mark_open, len))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_open, QEMU_PLUGIN_CB_NO_REGS, NULL);
		else if (len == sizeof(mark_close) && !memcmp(data, mark_close, len))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_close, QEMU_PLUGIN_CB_NO_REGS, NULL);
		else if (len == sizeof(mark_base) && i + 1 < n &&
			 (!memcmp(data, mark_base, len) || !memcmp(data, mark_part, len)))
			qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i + 1), on_tell, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW,
							 (void *)(!memcmp(data, mark_base, len) ? mark_base : mark_part));
		else if (KERNEL(qemu_plugin_insn_vaddr(insn)) && is_call(data, len))
			qemu_plugin_register_vcpu_mem_cb(insn, on_call, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_W, NULL);
	}
	/*
	 * A block's callback runs before its first instruction, so a window
	 * counts the blocks that start after its open mark and those up to
	 * and including the one holding its close mark: the same few
	 * instructions in every window, which a difference of two windows
	 * cancels.
	 */
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void on_exit_(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	if (open_window)
		fprintf(out, "X exit inside window %llu\n", (unsigned long long)windows);
	fclose(out);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
							       int argc, char **argv)
{
	const char *path = NULL;
	if (info->version.cur != 1) {
		/* Version 2 changed qemu_plugin_insn_data's signature. */
		fprintf(stderr, "anatomy plugin: built for QEMU's plugin API 1, this QEMU has %d\n",
			info->version.cur);
		return -1;
	}
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	if (!path)
		die("usage: -plugin anatomy.so,out=FILE");
	out = fopen(path, "w");
	if (!out)
		die("cannot open the out= file");
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_exit_, NULL);
	return 0;
}
