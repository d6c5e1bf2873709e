/* Guest helper of the kernel boot tests (crates/btfkit/tests/kernel_boot.rs):
 * runs inside a kernel booted under QEMU, built with `gcc -static` at test time.
 *
 * It reads the kernel's own BTF (/sys/kernel/btf/vmlinux and a module's split
 * BTF over it), finds FUNCs by name, and loads a trivial BTF-typed fentry
 * program (BPF_PROG_TYPE_TRACING, expected_attach_type BPF_TRACE_FENTRY,
 * attach_btf_id, attach_btf_obj_fd for a module) and attaches it
 * (BPF_LINK_CREATE, or BPF_RAW_TRACEPOINT_OPEN on kernels without it).
 * The verifier resolves the FUNC's name to an address through kallsyms at
 * load, and ftrace must accept that address at attach: both steps are what
 * a FUNC is good for.
 *
 *   fentry btf                      the kernel's BTF objects (proves vmlinux BTF parsed)
 *   fentry vmlinux NAME...          attach to these functions of vmlinux
 *   fentry module MOD NAME...       of module MOD (its /sys/kernel/btf/MOD)
 *   fentry all vmlinux|MOD          every FUNC, one line each:
 *       FENTRY <obj> <btf_id> <name> ok
 *       FENTRY <obj> <btf_id> <name> load <errno> <first verifier log line>
 *       FENTRY <obj> <btf_id> <name> attach <errno>
 *     the links stay attached (see all())
 *   fentry all vmlinux K/N          the same for every FUNC whose index is K modulo N
 *   fentry instances                the entry of every instance of a name that several
 *                                   text symbols carry, read through /proc/kcore
 *
 * Verdicts are "BTFKIT-RESULT key value" lines; exit status 0 when every
 * named function attached (for `all`: when the walk finished).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BTF_MAGIC 0xeB9F
#define KIND_FUNC 12
/* Programs loaded, then attached, then reported together in `all` mode. */
#define BATCH 256

struct btf {
	const char *path;
	uint8_t *data;
	size_t size;
	const uint8_t *types, *strs;
	uint32_t types_len, strs_len;
	uint32_t nr;             /* types in this BTF */
	uint32_t first_id;       /* id of its first type (1, or base nr + 1) */
	const uint32_t **type;   /* type[i]: record of id first_id + i */
	const struct btf *base;
};

static int sys_bpf(int cmd, union bpf_attr *attr, unsigned size)
{
	return syscall(__NR_bpf, cmd, attr, size);
}

static uint8_t *read_file(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 20, len = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0) {
			free(buf);
			close(fd);
			return NULL;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	*size = len;
	return buf;
}

/* Bytes a type record takes after its 12-byte header, by kind; -1: unknown. */
static long extra_size(uint32_t info, const uint32_t *t)
{
	uint32_t kind = (info >> 24) & 0x1f, vlen = info & 0xffff;
	(void)t;
	switch (kind) {
	case 1: return 4;                     /* INT */
	case 2: case 7: case 8: case 9: case 10: case 11: case 12: case 16: case 18:
		return 0;                     /* PTR FWD TYPEDEF VOLATILE CONST RESTRICT FUNC FLOAT TYPE_TAG */
	case 3: return 12;                    /* ARRAY */
	case 4: case 5: return 12L * vlen;    /* STRUCT UNION */
	case 6: return 8L * vlen;             /* ENUM */
	case 13: return 8L * vlen;            /* FUNC_PROTO */
	case 14: return 4;                    /* VAR */
	case 15: return 12L * vlen;           /* DATASEC */
	case 17: return 4;                    /* DECL_TAG */
	case 19: return 12L * vlen;           /* ENUM64 */
	default: return -1;
	}
}

static int btf_load(struct btf *b, const char *path, const struct btf *base)
{
	memset(b, 0, sizeof(*b));
	b->path = path;
	b->base = base;
	b->data = read_file(path, &b->size);
	if (!b->data) {
		fprintf(stderr, "fentry: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (b->size < 24) {
		fprintf(stderr, "fentry: %s: too short for a BTF header\n", path);
		return -1;
	}
	const uint8_t *d = b->data;
	uint16_t magic;
	uint32_t hdr_len, type_off, type_len, str_off, str_len;
	memcpy(&magic, d, 2);
	memcpy(&hdr_len, d + 4, 4);
	memcpy(&type_off, d + 8, 4);
	memcpy(&type_len, d + 12, 4);
	memcpy(&str_off, d + 16, 4);
	memcpy(&str_len, d + 20, 4);
	if (magic != BTF_MAGIC || (uint64_t)hdr_len + type_off + type_len > b->size ||
	    (uint64_t)hdr_len + str_off + str_len > b->size || type_len % 4) {
		fprintf(stderr, "fentry: %s: bad BTF header\n", path);
		return -1;
	}
	b->types = d + hdr_len + type_off;
	b->types_len = type_len;
	b->strs = d + hdr_len + str_off;
	b->strs_len = str_len;
	b->first_id = base ? base->first_id + base->nr : 1;
	size_t cap = 1024;
	b->type = malloc(cap * sizeof(*b->type));
	for (uint32_t off = 0; off < type_len;) {
		if (off + 12 > type_len) {
			fprintf(stderr, "fentry: %s: type at %u truncated\n", path, off);
			return -1;
		}
		const uint32_t *t = (const uint32_t *)(b->types + off);
		long extra = extra_size(t[1], t);
		if (extra < 0 || off + 12 + extra > type_len) {
			fprintf(stderr, "fentry: %s: type at %u: unknown kind or truncated\n", path, off);
			return -1;
		}
		if (b->nr == cap) {
			cap *= 2;
			b->type = realloc(b->type, cap * sizeof(*b->type));
		}
		b->type[b->nr++] = t;
		off += 12 + extra;
	}
	return 0;
}

/* A name offset of a split BTF continues its base's string section. */
static const char *btf_str(const struct btf *b, uint32_t off)
{
	if (b->base) {
		if (off < b->base->strs_len)
			return btf_str(b->base, off);
		off -= b->base->strs_len;
	}
	if (off >= b->strs_len || !memchr(b->strs + off, 0, b->strs_len - off))
		return "<bad name>";
	return (const char *)b->strs + off;
}

static uint32_t find_func(const struct btf *b, const char *name)
{
	for (uint32_t i = 0; i < b->nr; i++) {
		const uint32_t *t = b->type[i];
		if (((t[1] >> 24) & 0x1f) == KIND_FUNC && !strcmp(btf_str(b, t[0]), name))
			return b->first_id + i;
	}
	return 0;
}

/* The fd of the kernel's BTF object named `name` ("vmlinux", a module), or -1. */
static int kernel_btf_fd(const char *name, int print)
{
	uint32_t id = 0;
	for (;;) {
		union bpf_attr a;
		memset(&a, 0, sizeof(a));
		a.start_id = id;
		if (sys_bpf(BPF_BTF_GET_NEXT_ID, &a, sizeof(a)))
			return -1;
		id = a.next_id;
		memset(&a, 0, sizeof(a));
		a.btf_id = id;
		int fd = sys_bpf(BPF_BTF_GET_FD_BY_ID, &a, sizeof(a));
		if (fd < 0)
			continue;
		char objname[64] = "";
		struct bpf_btf_info info;
		memset(&info, 0, sizeof(info));
		info.name = (uint64_t)(uintptr_t)objname;
		info.name_len = sizeof(objname);
		memset(&a, 0, sizeof(a));
		a.info.bpf_fd = fd;
		a.info.info_len = sizeof(info);
		a.info.info = (uint64_t)(uintptr_t)&info;
		if (!sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a, sizeof(a))) {
			if (print)
				printf("BTFKIT-RESULT btf-object %u %s %u\n", info.id, objname, info.btf_size);
			if (name && !strcmp(objname, name))
				return fd;
		}
		close(fd);
	}
}

static char log_buf[1 << 16];

/* Loads the trivial fentry program on `btf_id` (of `obj_fd`'s BTF when >= 0).
 * With `log`, a failed load's verifier log is kept in log_buf. */
static int load(uint32_t btf_id, int obj_fd, const char *name, int log)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_TRACING;
	a.expected_attach_type = BPF_TRACE_FENTRY;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = 2;
	a.license = (uint64_t)(uintptr_t) "GPL";
	a.attach_btf_id = btf_id;
	if (obj_fd >= 0)
		a.attach_btf_obj_fd = obj_fd;
	snprintf(a.prog_name, sizeof(a.prog_name), "%.15s", name);
	for (char *c = a.prog_name; *c; c++)
		if (*c == '.')
			*c = '_';
	if (log) {
		log_buf[0] = 0;
		a.log_buf = (uint64_t)(uintptr_t)log_buf;
		a.log_size = sizeof(log_buf);
		a.log_level = 1;
	}
	return sys_bpf(BPF_PROG_LOAD, &a, sizeof(a));
}

static int attach(int prog)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = prog;
	a.link_create.attach_type = BPF_TRACE_FENTRY;
	int fd = sys_bpf(BPF_LINK_CREATE, &a, sizeof(a));
	if (fd >= 0 || errno != EINVAL)
		return fd;
	memset(&a, 0, sizeof(a));
	a.raw_tracepoint.prog_fd = prog;
	return sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a, sizeof(a));
}

static const char *first_line(void)
{
	static char line[200];
	const char *s = log_buf;
	while (*s == '\n')
		s++;
	size_t n = strcspn(s, "\n");
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	memcpy(line, s, n);
	line[n] = 0;
	return n ? line : "-";
}

/* Loads with a log after a failure (the first try has none: cheaper). */
static int load_logged(uint32_t id, int obj_fd, const char *name, int *err)
{
	int fd = load(id, obj_fd, name, 0);
	if (fd >= 0)
		return fd;
	*err = errno;
	fd = load(id, obj_fd, name, 1);
	if (fd >= 0)
		return fd;
	*err = errno;
	return -1;
}

struct target {
	struct btf vmlinux, module;
	const struct btf *btf;
	int obj_fd;
	const char *label;
};

static int open_target(struct target *t, const char *module)
{
	if (btf_load(&t->vmlinux, "/sys/kernel/btf/vmlinux", NULL))
		return -1;
	t->btf = &t->vmlinux;
	t->obj_fd = -1;
	t->label = "vmlinux";
	if (!module)
		return 0;
	static char path[256];
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", module);
	if (btf_load(&t->module, path, &t->vmlinux))
		return -1;
	t->btf = &t->module;
	t->label = module;
	t->obj_fd = kernel_btf_fd(module, 0);
	if (t->obj_fd < 0) {
		fprintf(stderr, "fentry: no kernel BTF object named %s\n", module);
		return -1;
	}
	return 0;
}

static int named(struct target *t, char **names, int n)
{
	int failed = 0;
	for (int i = 0; i < n; i++) {
		uint32_t id = find_func(t->btf, names[i]);
		if (!id) {
			printf("BTFKIT-RESULT fentry:%s:%s nofunc\n", t->label, names[i]);
			failed++;
			continue;
		}
		int err = 0;
		int prog = load_logged(id, t->obj_fd, names[i], &err);
		if (prog < 0) {
			printf("BTFKIT-RESULT fentry:%s:%s load %d %s\n", t->label, names[i], err, first_line());
			failed++;
			continue;
		}
		int link = attach(prog);
		if (link < 0) {
			printf("BTFKIT-RESULT fentry:%s:%s attach %d\n", t->label, names[i], errno);
			failed++;
		} else {
			printf("BTFKIT-RESULT fentry:%s:%s ok\n", t->label, names[i]);
			close(link);
		}
		close(prog);
	}
	return failed ? 1 : 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* Nanoseconds spent per phase of `all`. */
struct phases {
	uint64_t load, attach, close;
};

/* Every FUNC whose index among the FUNCs is `part` modulo `parts`, BATCH at
 * a time: load all, attach all, report. The links stay attached: closing
 * one detaches it, and a detach waits for RCU tasks grace periods (~75 ms
 * each under TCG, measured: 20 times the load and attach together). At the
 * end a child process keeps the link fds open and the caller returns, so
 * that nothing detaches until the guest reboots (`reboot -f` closes no fd),
 * and `fentry instances` sees every attached entry patched. */
static int all(struct target *t, unsigned part, unsigned parts)
{
	unsigned ok = 0, load_failed = 0, attach_failed = 0, nth = 0, batches = 0;
	int progs[BATCH], links[BATCH], errs[BATCH];
	char *logs[BATCH];
	uint32_t ids[BATCH];
	struct phases ph = { 0 };
	uint64_t t0 = now_ns();
	uint32_t i = 0;
	while (i < t->btf->nr) {
		int n = 0;
		uint64_t a = now_ns();
		for (; i < t->btf->nr && n < BATCH; i++) {
			const uint32_t *ty = t->btf->type[i];
			if (((ty[1] >> 24) & 0x1f) != KIND_FUNC || nth++ % parts != part)
				continue;
			ids[n] = t->btf->first_id + i;
			errs[n] = 0;
			logs[n] = NULL;
			progs[n] = load_logged(ids[n], t->obj_fd, btf_str(t->btf, ty[0]), &errs[n]);
			if (progs[n] < 0)
				logs[n] = strdup(first_line());
			n++;
		}
		uint64_t b = now_ns();
		for (int k = 0; k < n; k++) {
			links[k] = -1;
			if (progs[k] >= 0) {
				links[k] = attach(progs[k]);
				if (links[k] < 0)
					errs[k] = errno;
			}
		}
		uint64_t c = now_ns();
		for (int k = 0; k < n; k++) {
			const uint32_t *ty = t->btf->type[ids[k] - t->btf->first_id];
			const char *name = btf_str(t->btf, ty[0]);
			if (progs[k] < 0) {
				printf("FENTRY %s %u %s load %d %s\n", t->label, ids[k], name, errs[k], logs[k]);
				load_failed++;
			} else if (links[k] < 0) {
				printf("FENTRY %s %u %s attach %d\n", t->label, ids[k], name, errs[k]);
				attach_failed++;
			} else {
				printf("FENTRY %s %u %s ok\n", t->label, ids[k], name);
				ok++;
			}
			free(logs[k]);
		}
		/* A link holds its program. */
		uint64_t e = now_ns();
		for (int k = 0; k < n; k++)
			if (progs[k] >= 0)
				close(progs[k]);
		uint64_t f = now_ns();
		ph.load += b - a;
		ph.attach += c - b;
		ph.close += f - e;
		batches++;
		printf("FENTRY-TIME %s part=%u/%u batch=%u funcs=%d load_ms=%llu attach_ms=%llu close_ms=%llu\n",
		       t->label, part, parts, batches, n, (unsigned long long)(b - a) / 1000000,
		       (unsigned long long)(c - b) / 1000000, (unsigned long long)(f - e) / 1000000);
		fflush(stdout);
	}
	printf("BTFKIT-RESULT fentry-all:%s:%u/%u ok=%u load=%u attach=%u\n", t->label, part, parts,
	       ok, load_failed, attach_failed);
	printf("BTFKIT-RESULT fentry-time:%s:%u/%u total_ms=%llu load_ms=%llu attach_ms=%llu close_ms=%llu\n",
	       t->label, part, parts, (unsigned long long)(now_ns() - t0) / 1000000,
	       (unsigned long long)ph.load / 1000000, (unsigned long long)ph.attach / 1000000,
	       (unsigned long long)ph.close / 1000000);
	fflush(stdout);
	pid_t holder = fork();
	if (holder < 0) {
		perror("fentry: fork");
		return 1;
	}
	if (holder == 0) {
		close(1);
		close(2);
		for (;;)
			pause();
	}
	return 0;
}

/* A text symbol of vmlinux from /proc/kallsyms. */
struct ksym {
	uint64_t addr;
	char *name;
};

static int ksym_by_name(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->addr > y->addr) - (x->addr < y->addr);
}

/* /proc/kcore's PT_LOAD segments. */
struct kcore {
	int fd;
	Elf64_Phdr *ph;
	unsigned n;
};

static int kcore_open(struct kcore *k)
{
	Elf64_Ehdr eh;
	k->fd = open("/proc/kcore", O_RDONLY);
	if (k->fd < 0 || pread(k->fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_phentsize != sizeof(Elf64_Phdr)) {
		fprintf(stderr, "fentry: /proc/kcore: %s\n", strerror(errno));
		return -1;
	}
	k->n = eh.e_phnum;
	k->ph = calloc(k->n, sizeof(*k->ph));
	if (pread(k->fd, k->ph, k->n * sizeof(*k->ph), eh.e_phoff) != (ssize_t)(k->n * sizeof(*k->ph))) {
		fprintf(stderr, "fentry: /proc/kcore: program headers unreadable\n");
		return -1;
	}
	return 0;
}

static int kcore_read(const struct kcore *k, uint64_t addr, uint8_t *buf, size_t len)
{
	for (unsigned i = 0; i < k->n; i++) {
		const Elf64_Phdr *p = &k->ph[i];
		if (p->p_type == PT_LOAD && addr >= p->p_vaddr && addr + len <= p->p_vaddr + p->p_filesz)
			return pread(k->fd, buf, len, p->p_offset + (addr - p->p_vaddr)) == (ssize_t)len ? 0 : -1;
	}
	return -1;
}

/* For every name that several text symbols of vmlinux carry, the entry of
 * each instance as the CPU runs it now (read through /proc/kcore):
 *   INSTANCE <name> <addr> call <target>   a call at the fentry site (offset
 *                                          0, or 4 after an endbr64 or its
 *                                          sealed nop4): patched
 *   INSTANCE <name> <addr> nop             the 5-byte nop of an idle site
 *   INSTANCE <name> <addr> other <bytes>   no fentry site there
 * Run while `all vmlinux` keeps its links: exactly the instance that
 * kallsyms_lookup_name picks must be patched. */
static int instances(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f) {
		fprintf(stderr, "fentry: /proc/kallsyms: %s\n", strerror(errno));
		return 1;
	}
	size_t n = 0, cap = 1 << 16;
	struct ksym *syms = malloc(cap * sizeof(*syms));
	char line[512], name[256], type;
	unsigned long long addr;
	while (fgets(line, sizeof(line), f)) {
		/* Module symbols end with "\t[module]". */
		if (strchr(line, '[') || sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (type != 't' && type != 'T')
			continue;
		if (n == cap) {
			cap *= 2;
			syms = realloc(syms, cap * sizeof(*syms));
		}
		syms[n].addr = addr;
		syms[n].name = strdup(name);
		n++;
	}
	fclose(f);
	qsort(syms, n, sizeof(*syms), ksym_by_name);
	struct kcore k;
	if (kcore_open(&k))
		return 1;
	static const uint8_t nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	/* An endbr64 that IBT sealed (no indirect caller). */
	static const uint8_t nop4[] = { 0x0f, 0x1f, 0x40, 0x00 };
	unsigned names = 0, read_failed = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && !strcmp(syms[j].name, syms[i].name))
			j++;
		if (j - i >= 2)
			names++;
		for (size_t m = i; j - i >= 2 && m < j; m++) {
			uint8_t b[9];
			if (kcore_read(&k, syms[m].addr, b, sizeof(b))) {
				printf("INSTANCE %s %llx unreadable\n", syms[m].name, (unsigned long long)syms[m].addr);
				read_failed++;
				continue;
			}
			unsigned off = memcmp(b, endbr64, 4) && memcmp(b, nop4, 4) ? 0 : 4;
			if (b[off] == 0xe8) {
				int32_t rel;
				memcpy(&rel, b + off + 1, 4);
				printf("INSTANCE %s %llx call %llx\n", syms[m].name, (unsigned long long)syms[m].addr,
				       (unsigned long long)(syms[m].addr + off + 5 + (int64_t)rel));
			} else if (!memcmp(b + off, nop5, 5)) {
				printf("INSTANCE %s %llx nop\n", syms[m].name, (unsigned long long)syms[m].addr);
			} else {
				printf("INSTANCE %s %llx other %02x%02x%02x%02x%02x%02x%02x%02x%02x\n", syms[m].name,
				       (unsigned long long)syms[m].addr, b[0], b[1], b[2], b[3], b[4], b[5], b[6],
				       b[7], b[8]);
			}
		}
		i = j;
	}
	printf("BTFKIT-RESULT instances names=%u unreadable=%u\n", names, read_failed);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: fentry btf | vmlinux NAME... | module MOD NAME... | all vmlinux|MOD [K/N] | instances\n");
	return 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct rlimit r = { RLIM_INFINITY, RLIM_INFINITY };
	setrlimit(RLIMIT_MEMLOCK, &r);
	/* `all` holds a link fd per attached FUNC. */
	struct rlimit files = { 1 << 20, 1 << 20 };
	setrlimit(RLIMIT_NOFILE, &files);
	if (argc >= 2 && !strcmp(argv[1], "btf")) {
		int fd = kernel_btf_fd("vmlinux", 1);
		printf("BTFKIT-RESULT vmlinux-btf-object %s\n", fd >= 0 ? "yes" : "no");
		return fd >= 0 ? 0 : 1;
	}
	if (argc == 2 && !strcmp(argv[1], "instances"))
		return instances();
	struct target t;
	if (argc >= 3 && !strcmp(argv[1], "vmlinux")) {
		if (open_target(&t, NULL))
			return 1;
		return named(&t, argv + 2, argc - 2);
	}
	if (argc >= 4 && !strcmp(argv[1], "module")) {
		if (open_target(&t, argv[2]))
			return 1;
		return named(&t, argv + 3, argc - 3);
	}
	if (argc >= 3 && !strcmp(argv[1], "all")) {
		unsigned part = 0, parts = 1;
		if (argc > 4 || (argc == 4 && (sscanf(argv[3], "%u/%u", &part, &parts) != 2 ||
					       !parts || part >= parts)))
			return usage();
		uint64_t t0 = now_ns();
		if (open_target(&t, strcmp(argv[2], "vmlinux") ? argv[2] : NULL))
			return 1;
		printf("BTFKIT-RESULT fentry-btf-parse:%s:%u/%u ms=%llu\n", t.label, part, parts,
		       (unsigned long long)(now_ns() - t0) / 1000000);
		return all(&t, part, parts);
	}
	return usage();
}
