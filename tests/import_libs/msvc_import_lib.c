/*
 * The checks, built with clang for the MSVC ABI and linked by lld-link against fm5_NN.lib with no C
 * runtime: the only imports are fm5 and three kernel32 functions (from kernel32_NN.def).
 */
#include "checks.h"

#define STD_OUTPUT_HANDLE ((unsigned long)-11)

/* The Windows prototypes by hand, since there is no SDK: stdcall, which on i686 makes the
 * imported symbols _ExitProcess@4 etc., matching kernel32_32.def. */
__declspec(dllimport) __declspec(noreturn) void __stdcall ExitProcess(unsigned exit_code);
__declspec(dllimport) void *__stdcall GetStdHandle(unsigned long which);
__declspec(dllimport) int __stdcall WriteFile(void *file, const void *data, unsigned long size,
                                              unsigned long *written, void *overlapped);

static void write_str(const char *s)
{
    unsigned long n = 0, written;
    while (s[n] != '\0')
        ++n;
    WriteFile(GetStdHandle(STD_OUTPUT_HANDLE), s, n, &written, 0);
}

static void report(const char *line)
{
    write_str(line);
    write_str("\r\n");
}

/* The process entry point (lld-link /entry:fm5_entry). It never returns, so its calling
 * convention does not matter; on i686 lld-link looks it up as _fm5_entry. */
__declspec(noreturn) void fm5_entry(void);

void fm5_entry(void)
{
    int failures = fm5_checks_dllimport(report) + fm5_checks_thunk(report);
    write_str(sizeof(void *) == 4 ? "msvc_import_lib (32-bit): " : "msvc_import_lib (64-bit): ");
    report(failures == 0 ? "all checks passed" : "FAILED");
    ExitProcess(failures == 0 ? 0 : 1);
}
