struct device { long d; };
struct device_attribute { long da; };
static __attribute__((noinline, noclone)) long wakeup_show(struct device *dev, struct device_attribute *attr, char *buf)
{ return dev->d - attr->da + buf[1]; }
long b_entry(struct device *d, struct device_attribute *a, char *b) { return wakeup_show(d, a, b) * 5; }
__attribute__((noinline)) int weak_fn(int x) { return x + 2; }
void sink(long v) { __asm__ volatile("" :: "r"(v)); }
void die(const char *m) { __asm__ volatile("" :: "r"(m)); __builtin_trap(); }
long owner(void) { long v; __asm__ volatile("" : "=r"(v)); return v; }
long kill_group(long pgrp, int sig) { __asm__ volatile("" : "+r"(pgrp) : "r"(sig)); return pgrp; }
int main(void) { return 0; }
