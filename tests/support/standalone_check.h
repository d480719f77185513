/*
 * standalone_check.h — CHECK for the test programs that must not link fm5's test harness (it links
 * fm5_NN.dll, and these load another DLL or must hold no fm5 block before a switch): a failed check
 * prints its line and message and counts; the program exits with `failures`.
 */
#ifndef FM5_STANDALONE_CHECK_H
#define FM5_STANDALONE_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int failures;

#define CHECK(condition, ...) standalone_check((condition) != 0, __LINE__, #condition, __VA_ARGS__)

static inline int standalone_check(int ok, int line, const char *text, const char *format, ...)
{
    if (!ok) {
        va_list args;
        va_start(args, format);
        printf("FAIL line %d: %s: ", line, text);
        vprintf(format, args);
        printf("\n");
        va_end(args);
        failures++;
    }
    return ok;
}

#endif
