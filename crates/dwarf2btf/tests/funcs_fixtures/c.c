extern void sink(long);
static __attribute__((noinline)) long isra_drop(long a, int unused, long b) { sink(a); return a * b; }
long isra_drop_caller(long a, long b) { return isra_drop(a, (int)b, b) + isra_drop(b, (int)a, a); }
static long part_fn(long *p, long n)
{
    if (__builtin_expect(n < 4, 1))
        return n;
    long r = 0;
    for (long i = 0; i < n; i++) { sink(p[i]); r += p[i] * i; sink(r); sink(r ^ i); sink(r + i); }
    for (long i = 0; i < n; i++) { sink(p[i] + r); r -= p[i]; }
    return r;
}
long pcall1(long *p, long n) { return part_fn(p, n) + 1; }
long pcall2(long *p, long n) { return part_fn(p, n * 2) + 2; }
long pcall3(long *p, long n) { return part_fn(p + 1, n * 3) + 2; }
/* a split part that its parent returns by a tail jump: the value is kept
 * (the shape of the kernel's __tty_check_change) */
extern long owner(void);
extern long kill_group(long pgrp, int sig);
struct tty { long pgrp; };
long part_kept(struct tty *tty, int sig)
{
    long ret = 0;
    if (owner() != (long)tty)
        return 0;
    sink(sig);
    if (tty->pgrp <= 0)
        ret = kill_group(tty->pgrp, 1);
    else if (kill_group(tty->pgrp, 0)) {
        if (sig == 21)
            ret = -5;
    } else if (kill_group(tty->pgrp, sig))
        ret = -512;
    sink(ret);
    if (!tty->pgrp)
        ret = kill_group(ret, sig) + ret;
    return ret;
}
long part_user(struct tty *tty) { return part_kept(tty, 21) + 1; }
__attribute__((weak)) int weak_only(int x) { return x * 3; }
