/*
 * standalone_check.h — CHECK for the test programs that must not link fm5's test harness (it links
 * fm5_NN.dll, and these load another DLL or must hold no fm5 block before a switch): a failed check
 * prints its line and message and counts; the program exits with `failures`. And a content pattern
 * for their blocks (byte i of a block filled with `key` is i * 13 + key).
 */
#ifndef FM5_STANDALONE_CHECK_H
#define FM5_STANDALONE_CHECK_H

#include <stdarg.h>
#include <stddef.h>
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

static inline void standalone_fill(unsigned char *p, size_t n, unsigned key)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 13 + key);
}

static inline int standalone_intact(const unsigned char *p, size_t n, unsigned key)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 13 + key))
            return 0;
    return 1;
}

#endif
