/* Same-name static functions with different prototypes (this file and b.c),
 * clones of each kind GCC 12 makes at -O2, a 16-byte struct by value, and a
 * weak definition that b.c overrides. */
struct kobject { int k; };
struct kobj_attribute { int a; };
static __attribute__((noinline, noclone)) long wakeup_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{ return kobj->k + attr->a + buf[0]; }
long a_entry(struct kobject *k, struct kobj_attribute *a, char *b) { return wakeup_show(k, a, b) * 3; }

/* .isra: only s->x is read (IPA-SRA passes it instead of s), 'unused' is dropped */
struct big { long x, y, z; };
static __attribute__((noinline)) long isra_fn(struct big *s, int unused, long mul) { return s->x * mul; }
long isra_caller(struct big *s, long m) { return isra_fn(s, 1, m) + isra_fn(s, 2, m + 1); }

/* .constprop: the first argument is always the same constant */
static __attribute__((noinline)) long cp_fn(long k, long v) { long r = 0; for (long i = 0; i < v; i++) r += k * i ^ (r >> 3); return r; }
long cp_caller1(long v) { return cp_fn(7, v); }
long cp_caller2(long v) { return cp_fn(7, v + 1); }

/* .cold: the error path of an inlined helper moves out of line */
extern void sink(long);
extern void __attribute__((cold, noreturn)) die(const char *);
static long part_fn(long *p, long n)
{
    if (!p)
        return 0;
    for (long i = 0; i < n; i++) { if (p[i] < 0) die("neg"); sink(p[i] * i); }
    return n;
}
long part_caller1(long *p, long n) { return part_fn(p, n) + 1; }
long part_caller2(long *p, long n) { return part_fn(p, n * 2) + 2; }

/* a 16-byte struct by value with one half unused (the kernel's sockptr_t) */
typedef struct { union { void *kernel; void *user; }; _Bool is_kernel : 1; } sockptr_t;
static __attribute__((noinline)) int coerce_fn(long *attr, sockptr_t uattr) { return uattr.is_kernel ? (int)attr[1] : 5; }
int coerce_caller(long *a, sockptr_t u) { return coerce_fn(a, u) + coerce_fn(a + 1, u); }

/* weak definition; b.c holds the strong one */
__attribute__((weak, noinline)) int weak_fn(int x) { return x + 1; }

/* .isra without its return value: no caller uses it, so IPA-SRA drops it
 * while the DWARF keeps `long` */
long ret_total;
static __attribute__((noinline)) long ret_drop(long a, long b) { ret_total += a * b; return ret_total; }
void ret_caller1(long a) { ret_drop(a, 2); }
void ret_caller2(long a) { ret_drop(a, 3); }
