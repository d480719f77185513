/*
 * harness.h — how a test program counts and reports its checks.
 *
 * Every test is one console program: it counts checks, prints each failure with file:line and the
 * values involved, and ends with the line "<name>: N passed, N failed" that CTest's log and the CI
 * summary read. A watchdog thread fails the test with a message when it hangs.
 */
#ifndef FM5_TEST_HARNESS_H
#define FM5_TEST_HARNESS_H

#include "arch.h"

#include <stdarg.h>
#include <stdio.h>

/* Worker threads check too, so the counters are updated atomically. */
extern tu_atomic_long tu_passed;
extern tu_atomic_long tu_failed;
/* The name tu_init was given, for the closing line. */
extern const char *tu_test_name;

/* A test that fails in a loop of a million iterations must not bury the first failures (nor take
 * minutes to print): past this many, failures are still counted but no longer printed. */
#define TU_MAX_PRINTED_FAILURES 200

/* Every test is meant to finish in well under 30 s; CTest's timeout is 300 s. A test that needs longer
 * defines TU_WATCHDOG_SECONDS before including test_util.h. */
#ifndef TU_WATCHDOG_SECONDS
#define TU_WATCHDOG_SECONDS 150
#endif

/* Names the test, makes stdout and stderr unbuffered, turns off error dialogs, prints the first line
 * and starts the watchdog: after `watchdog_seconds`, unless the environment variable
 * FM5_TEST_WATCHDOG_SECONDS says otherwise (0 turns the watchdog off). */
void tu_init_with_watchdog(const char *name, unsigned watchdog_seconds);
#define tu_init(name) tu_init_with_watchdog((name), TU_WATCHDOG_SECONDS)

/* Prints the closing line and returns the process exit code. A test that checked nothing fails. */
int test_finish(void);

/* For a watchdog that found the test stuck: counts one failure, prints `what` and the closing line and
 * terminates the process (nothing the stuck threads hold may be needed on the way out). */
void tu_abort_stuck(const char *what);

/* Counts a printed failure; returns 0 once TU_MAX_PRINTED_FAILURES have been printed (and says so
 * once). A check of its own calls it before printing its failure. */
int tu_report_failure_allowed(void);

/* Counts a failure and, within the report limit, prints it as "<tag> file:line: expr (message)". */
void tu_vfail(const char *tag, const char *expr, const char *file, int line, const char *fmt, va_list args)
    TU_PRINTF(5, 0);

int tu_check(int ok, const char *expr, const char *file, int line);
int tu_check_msg(int ok, const char *expr, const char *file, int line, const char *fmt, ...)
    TU_PRINTF(5, 6);
int tu_check_eq_u(unsigned long long a, unsigned long long b, const char *ea, const char *eb, const char *file,
                  int line);
int tu_check_eq_i(long long a, long long b, const char *ea, const char *eb, const char *file, int line);
int tu_check_eq_p(const void *a, const void *b, const char *ea, const char *eb, const char *file, int line);

/* Each macro evaluates to 1 when the check passed, so that a test can skip what depends on it. */
#define CHECK(cond) tu_check((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
#define CHECK_MSG(cond, ...) tu_check_msg((cond) ? 1 : 0, #cond, __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_EQ_SIZE(a, b) \
    tu_check_eq_u((unsigned long long)(a), (unsigned long long)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_INT(a, b) tu_check_eq_i((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_PTR(a, b) \
    tu_check_eq_p((const void *)(a), (const void *)(b), #a, #b, __FILE__, __LINE__)

#define SECTION(title) printf("== %s\n", (title))

/* One indented line of information (never a check). */
void tu_info(const char *fmt, ...) TU_PRINTF(1, 2);

/* argv[i] as a positive count, or `fallback`. */
unsigned long long tu_arg_count(int argc, char **argv, int i, unsigned long long fallback);

/* Whether `p` is a multiple of `alignment`, a power of two. */
int tu_is_aligned(const void *p, size_t alignment);

#endif /* FM5_TEST_HARNESS_H */
