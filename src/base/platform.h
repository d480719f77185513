/* Compiler, architecture and atomics shared by every part of fm5. Nothing here names an operating
 * system's API: that is base/os.h's job (os_windows.c for the DLLs, os_posix.c for the host build that
 * runs the tests under the sanitizers). */
#ifndef FM5_PLATFORM_H
#define FM5_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include "base/checked.h"

/* The layout follows the pointer size: FM5_32BIT is Win32's (8-byte steps, a flat address map),
 * FM5_64BIT Win64's, which the x86-64 host build shares. */
#if UINTPTR_MAX == 0xFFFFFFFFu
#  define FM5_32BIT 1
#  define FM5_POINTER_SIZE 4
#else
#  define FM5_64BIT 1
#  define FM5_POINTER_SIZE 8
#endif

/* Which OS layer the build has: FM5_WINDOWS (the shipped DLLs) or FM5_POSIX (the host build). */
#ifdef _WIN32
#  define FM5_WINDOWS 1
#else
#  define FM5_POSIX 1
#endif

#define FM5_LIKELY(x) __builtin_expect(!!(x), 1)
#define FM5_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FM5_INLINE static inline __attribute__((always_inline))
#define FM5_NOINLINE __attribute__((noinline))
#define FM5_CACHE_LINE 64
/* A function whose every call is its last act (a tail jump, or none): on Win32, where the build keeps
 * frame pointers for the EBP-chain stack traces, its frame would be built and torn down only to jump.
 * Leaving it out loses no frame of a trace: the jump leaves the caller's EBP and return address as
 * they were. A function that calls anything and then goes on must not carry it. */
#if defined(__i386__) && !defined(__clang__)
#  define FM5_TAIL_ONLY __attribute__((optimize("omit-frame-pointer")))
#else
#  define FM5_TAIL_ONLY
#endif
/* An optimistic reader: a function that reads memory another thread may be writing and trusts none of
 * it until checked: the pointer checks (what an unproven pointer points at may be a live block's user
 * data or a region being released), and the debug scan's check of a block its owner is changing, which
 * a flag re-read afterwards validates (docs/design.md, "Lock-free reads"). ThreadSanitizer is told not
 * to watch their reads. Nothing else may carry it. */
#define FM5_OPTIMISTIC_READER __attribute__((no_sanitize("thread")))
#define FM5_ALIGNED(n) __attribute__((aligned(n)))

/* The pure-C build (FM5_ASM=0) gives a routine that asm/ implements the body of its C twin, by this
 * attribute right after the twin's definition (api/asm_twins.h lists the twins). */
#if !FM5_ASM
#  define FM5_PUBLIC_NAME_OF_TWIN(twin) __attribute__((alias(#twin)))
#endif

/* A lock is one 32-bit word: 0 free, 1 held. Reading it first keeps a busy line shared instead of
 * bouncing it between cores with a failing locked exchange. */
typedef volatile int32_t fm5_lock;

FM5_INLINE int fm5_try_lock(fm5_lock *lock)
{
    return __atomic_load_n(lock, __ATOMIC_RELAXED) == 0 && __atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE) == 0;
}

/* Whether the lock is held now: a hint for choosing an arena, stale as soon as it is read. */
FM5_INLINE int fm5_lock_is_held(const fm5_lock *lock)
{
    return __atomic_load_n(lock, __ATOMIC_RELAXED) != 0;
}

FM5_INLINE void fm5_unlock(fm5_lock *lock)
{
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

FM5_INLINE void *fm5_atomic_load_ptr(void *volatile *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

FM5_INLINE int fm5_cas_ptr(void *volatile *p, void *expected, void *desired)
{
    return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

FM5_INLINE int fm5_cas_u64(volatile uint64_t *p, uint64_t expected, uint64_t desired)
{
    return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

FM5_INLINE int fm5_cas_u16(volatile uint16_t *p, uint16_t expected, uint16_t desired)
{
    return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

FM5_INLINE uint64_t fm5_load_u64(volatile uint64_t *p)
{
    /* On Win32 a plain 64-bit load can tear; the atomic builtin uses a single 8-byte access. */
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

FM5_INLINE size_t fm5_round_up(size_t value, size_t multiple)
{
    return (value + multiple - 1) & ~(multiple - 1);
}

#endif
