/*
 * arch.h — what every piece of fm5's test support sees first: MinGW's C99 printf (so that %zu and %llu
 * mean the same on both architectures; it must be selected before any C library header is seen), the
 * tests' door to the OS (system.h), and which layout this is.
 *
 * The Windows API is visible only in the Windows builds (TU_WINDOWS), for the few tests that are
 * about Windows itself; every other test reaches the OS through system.h, so that it runs on the host
 * build (TU_HOST) too.
 */
#ifndef FM5_TEST_ARCH_H
#define FM5_TEST_ARCH_H

#ifdef _WIN32
#  ifndef __USE_MINGW_ANSI_STDIO
#    define __USE_MINGW_ANSI_STDIO 1
#  endif
#  include <windows.h>
#  define TU_WINDOWS 1
#  define TU_HOST 0
#else
#  define TU_WINDOWS 0
#  define TU_HOST 1
#endif

#include <stddef.h>
#include <stdint.h>

#include "system.h"

/* TU_64BIT: Win64's layout (16-byte steps), which the x86-64 host build shares; else Win32's. */
#if UINTPTR_MAX > 0xFFFFFFFFu
#  define TU_64BIT 1
#else
#  define TU_64BIT 0
#endif

#if !TU_WINDOWS
#  define TU_ARCH "host"
#elif TU_64BIT
#  define TU_ARCH "win64"
#else
#  define TU_ARCH "win32"
#endif

/* A function that must keep its own frame and address: GCC also needs noclone, which clang lacks. */
#ifdef __clang__
#  define TU_NOINLINE __attribute__((noinline))
#else
#  define TU_NOINLINE __attribute__((noinline, noclone))
#endif

/* printf-style checking: MinGW's C99 printf is gnu_printf, glibc's is printf. */
#if TU_WINDOWS
#  define TU_PRINTF(format_index, first_index) __attribute__((format(gnu_printf, format_index, first_index)))
#else
#  define TU_PRINTF(format_index, first_index) __attribute__((format(printf, format_index, first_index)))
#endif

#endif /* FM5_TEST_ARCH_H */
