/*
 * harness.c — check counting and reporting, the watchdog, and the small helpers of harness.h.
 */
#include "harness.h"

#include <stdlib.h>

tu_atomic_long tu_passed;
tu_atomic_long tu_failed;
const char *tu_test_name = "test";

/* Failures printed so far, against TU_MAX_PRINTED_FAILURES. */
static tu_atomic_long tu_printed_failures;

/* A hang (a self-cycle in a free list, a lock never released) must fail the test with a message,
 * well before CTest's own timeout kills it without one. */
static void tu_watchdog_thread(void *arg)
{
    unsigned seconds = (unsigned)(uintptr_t)arg;
    tu_sleep_ms(seconds * 1000);
    char what[128];
    snprintf(what, sizeof what, "watchdog: %s still running after %lu s (hang or deadlock)", tu_test_name,
             (unsigned long)seconds);
    tu_abort_stuck(what);
}

static void tu_start_watchdog(unsigned seconds)
{
    /* Never joined: the watchdog either fires or ends with the process. */
    tu_thread_start(tu_watchdog_thread, (void *)(uintptr_t)seconds, 64 * 1024);
}

void tu_init_with_watchdog(const char *name, unsigned watchdog_seconds)
{
    tu_test_name = name;
    /* Under CTest stdout is a pipe, which the CRT buffers fully: a crash or a watchdog kill would
     * then lose the very lines that explain it. */
    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    /* A crash must end the test, not wait for a debugger dialog under Wine. */
    tu_no_crash_dialogs();
    printf("%s (%s)\n", name, TU_ARCH);
    /* FM5_TEST_WATCHDOG_SECONDS overrides the limit (0 turns it off), e.g. for long manual runs. */
    unsigned seconds = watchdog_seconds;
    char value[32];
    if (tu_getenv("FM5_TEST_WATCHDOG_SECONDS", value, sizeof value))
        seconds = (unsigned)strtoul(value, NULL, 10);
    if (seconds)
        tu_start_watchdog(seconds);
}

int tu_report_failure_allowed(void)
{
    long n = tu_atomic_increment(&tu_printed_failures);
    if (n == TU_MAX_PRINTED_FAILURES + 1)
        printf("  ... further failures are counted but not printed\n");
    return n <= TU_MAX_PRINTED_FAILURES;
}

void tu_vfail(const char *tag, const char *expr, const char *file, int line, const char *fmt, va_list args)
{
    tu_atomic_increment(&tu_failed);
    if (tu_report_failure_allowed()) {
        char text[768];
        vsnprintf(text, sizeof text, fmt, args);
        printf("%s %s:%d: %s (%s)\n", tag, file, line, expr, text);
    }
}

int tu_check(int ok, const char *expr, const char *file, int line)
{
    if (ok) {
        tu_atomic_increment(&tu_passed);
        return 1;
    }
    tu_atomic_increment(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: %s\n", file, line, expr);
    return 0;
}

int tu_check_msg(int ok, const char *expr, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        tu_atomic_increment(&tu_passed);
        return 1;
    }
    va_list args;
    va_start(args, fmt);
    tu_vfail("FAIL", expr, file, line, fmt, args);
    va_end(args);
    return 0;
}

int tu_check_eq_u(unsigned long long a, unsigned long long b, const char *ea, const char *eb, const char *file,
                  int line)
{
    if (a == b) {
        tu_atomic_increment(&tu_passed);
        return 1;
    }
    tu_atomic_increment(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: %s == %s (%llu [0x%llx] vs %llu [0x%llx])\n", file, line, ea, eb, a, a, b, b);
    return 0;
}

int tu_check_eq_i(long long a, long long b, const char *ea, const char *eb, const char *file, int line)
{
    if (a == b) {
        tu_atomic_increment(&tu_passed);
        return 1;
    }
    tu_atomic_increment(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: %s == %s (%lld vs %lld)\n", file, line, ea, eb, a, b);
    return 0;
}

int tu_check_eq_p(const void *a, const void *b, const char *ea, const char *eb, const char *file, int line)
{
    if (a == b) {
        tu_atomic_increment(&tu_passed);
        return 1;
    }
    tu_atomic_increment(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: %s == %s (%p vs %p)\n", file, line, ea, eb, a, b);
    return 0;
}

void tu_info(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    printf("   ");
    vprintf(fmt, args);
    printf("\n");
    va_end(args);
}

int test_finish(void)
{
    long passed = tu_passed, failed = tu_failed;
    if (passed == 0 && failed == 0) {
        /* A test that checked nothing has not shown anything: count that as a failure. */
        printf("FAIL: no check ran\n");
        failed = 1;
    }
    printf("%s: %ld passed, %ld failed\n", tu_test_name, (long)passed, (long)failed);
    fflush(stdout);
    return failed ? 1 : 0;
}

void tu_abort_stuck(const char *what)
{
    tu_atomic_increment(&tu_failed);
    printf("FAIL: %s\n", what);
    printf("%s: %ld passed, %ld failed\n", tu_test_name, (long)tu_passed, (long)tu_failed);
    tu_exit_now(3);
}

unsigned long long tu_arg_count(int argc, char **argv, int i, unsigned long long fallback)
{
    if (argc > i && argv[i] && argv[i][0]) {
        char *end = NULL;
        unsigned long long v = strtoull(argv[i], &end, 0);
        if (end && *end == 0 && v > 0)
            return v;
    }
    return fallback;
}

int tu_is_aligned(const void *p, size_t alignment)
{
    return ((uintptr_t)p & (alignment - 1)) == 0;
}
