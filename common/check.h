/* check.h: exit codes shared by every memclaims program, and the host-side
 * CHECK macro. Plain C; no CUDA needed (CUDA checks are in check_cuda.h). */
#ifndef MC_CHECK_H
#define MC_CHECK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes, the same for every program (DESIGN.md). */
enum mc_exit {
    MC_EXIT_OK = 0,      /* ran, whatever the verdict */
    MC_EXIT_VERIFY = 1,  /* a verification of the measurement itself failed */
    MC_EXIT_USAGE = 2,   /* bad command line or input */
    MC_EXIT_CUDA = 3,    /* CUDA or cuBLAS error */
    MC_EXIT_WAIVED = 77  /* no CUDA device, or this GPU cannot show the claim */
};

/* Print "file:line: message" to stderr and exit with code. Never returns. */
void mc_die(int code, const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

/* Prints "file:line: CHECK(cond) failed: message" and exits MC_EXIT_VERIFY. */
void mc_die_check(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

/* Host check: if cond is false, print the condition's text and the message
 * (printf-style, required) and exit with MC_EXIT_VERIFY. For invariants and
 * host allocations. The condition's text is an argument, never a format. */
#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) mc_die_check(__FILE__, __LINE__, #cond, __VA_ARGS__);   \
    } while (0)

/* malloc that exits (MC_EXIT_VERIFY) on failure; size in bytes. */
void *mc_xmalloc(unsigned long long bytes);

#ifdef __cplusplus
}
#endif
#endif
