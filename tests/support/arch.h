/*
 * arch.h — what every piece of fm5's test support sees first: MinGW's C99 printf (so that %zu and %llu
 * mean the same on both architectures; it must be selected before any C library header is seen), the
 * Windows API, and which of the two targets this is.
 */
#ifndef FM5_TEST_ARCH_H
#define FM5_TEST_ARCH_H

#ifndef __USE_MINGW_ANSI_STDIO
#define __USE_MINGW_ANSI_STDIO 1
#endif

#include <windows.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN64)
#define TU_WIN64 1
#define TU_ARCH "win64"
#else
#define TU_WIN64 0
#define TU_ARCH "win32"
#endif

#endif /* FM5_TEST_ARCH_H */
