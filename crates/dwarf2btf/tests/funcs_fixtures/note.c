typedef struct { int si_signo; int si_code; long pad[14]; } siginfo_t;
typedef struct { int si_signo; int si_code; int pad[29]; } compat_siginfo_t;
#ifdef COMPAT
#define user_siginfo_t compat_siginfo_t
#define fill_note_info compat_fill_note_info
#else
#define user_siginfo_t siginfo_t
#endif
struct elf_note_info { long size; user_siginfo_t csigdata; int thread_notes; };
static __attribute__((noinline, noclone)) long fill_thread_core_info(struct elf_note_info *info, long n)
{ return info->csigdata.si_signo + n + info->size; }
long fill_note_info(struct elf_note_info *info, long n) { return fill_thread_core_info(info, n) + 1; }
