/* What both OS layers share, built on their primitives: the lock wait, the processor's fast strings
 * (CPUID, the same on every OS), and failure injection (the tests and the fuzzer make the n-th call,
 * or calls at random, fail the way a refusing OS would, to prove that every entry point then fails
 * cleanly). */
#include "base/os.h"
#include "base/text_builder.h"

#if defined(__i386__) || defined(__x86_64__)
#include <cpuid.h>
#endif

uint8_t fm5_cpu_has_fast_strings;

void fm5_detect_fast_strings(void)
{
#if defined(__i386__) || defined(__x86_64__)
    unsigned eax, ebx, ecx, edx;
    fm5_cpu_has_fast_strings = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx >> 9 & 1u);
#else
    fm5_cpu_has_fast_strings = 0;
#endif
}

int fm5_lock_with_timeout(fm5_lock *lock, uint32_t timeout_ms)
{
    uint32_t start = fm5_os_tick_ms();
    for (;;) {
        if (fm5_try_lock(lock))
            return 1;
        if (timeout_ms != FM5_WAIT_FOREVER && fm5_os_tick_ms() - start >= timeout_ms)
            return 0;
        fm5_os_yield();
    }
}


static volatile uint32_t armed_kinds;   /* 0: off, the only thing the OS layer reads on its way */
static volatile uint32_t countdown;     /* refuse when this reaches 0 by counting down; 0: no count */
static uint32_t random_per_million;
static volatile uint64_t random_state;
static volatile uint32_t refused;

uint32_t fm5_os_fault_injection(unsigned kinds, uint32_t nth, uint32_t per_million, uint64_t seed)
{
    __atomic_store_n(&armed_kinds, 0, __ATOMIC_SEQ_CST);
    uint32_t previous = __atomic_exchange_n(&refused, 0, __ATOMIC_SEQ_CST);
    countdown = nth;
    random_per_million = per_million;
    random_state = seed | 1;
    __atomic_store_n(&armed_kinds, kinds & FM5_OS_FAULT_ALL, __ATOMIC_SEQ_CST);
    return previous;
}

/* splitmix64 step, shared by the threads that reach the OS at once; a lost update only repeats a
 * draw, which is as random as the test needs. */
static uint32_t draw_per_million(void)
{
    uint64_t z = __atomic_add_fetch(&random_state, 0x9E3779B97F4A7C15ull, __ATOMIC_RELAXED);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (uint32_t)(z % 1000000u);
}

int fm5_os_fault_due(unsigned kind)
{
    if (FM5_LIKELY((__atomic_load_n(&armed_kinds, __ATOMIC_RELAXED) & kind) == 0))
        return 0;
    int due = 0;
    uint32_t left = __atomic_load_n(&countdown, __ATOMIC_RELAXED);
    while (left != 0) {
        if (__atomic_compare_exchange_n(&countdown, &left, left - 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            due = left == 1;
            break;
        }
    }
    if (!due && random_per_million && draw_per_million() < random_per_million)
        due = 1;
    if (due)
        __atomic_add_fetch(&refused, 1, __ATOMIC_RELAXED);
    return due;
}

/* ---- the release guard's tombstones ------------------------------------------------------------------ */

static void *volatile standing_tombstones[FM5_OS_TOMBSTONES];
static volatile uint32_t tombstones_made;

void *fm5_os_record_tombstone(void *granule)
{
    uint32_t made = __atomic_fetch_add(&tombstones_made, 1, __ATOMIC_RELAXED);
    return __atomic_exchange_n(&standing_tombstones[made % FM5_OS_TOMBSTONES], granule, __ATOMIC_ACQ_REL);
}

uint32_t fm5_os_release_guard_tombstones(void)
{
    return __atomic_load_n(&tombstones_made, __ATOMIC_RELAXED);
}

/* ---- checked builds ---------------------------------------------------------------------------- */

#if FM5_CHECKED
void fm5_assertion_failed(const char *condition, const char *file, int line)
{
    char buffer[512];
    fm5_text text;
    fm5_text_init(&text, buffer, sizeof buffer);
    fm5_text_append(&text, "fm5: assertion failed: ");
    fm5_text_append(&text, condition);
    fm5_text_append(&text, " (");
    fm5_text_append(&text, file);
    fm5_text_append_char(&text, ':');
    fm5_text_append_unsigned(&text, (uint64_t)line);
    fm5_text_append(&text, ")\r\n");
    fm5_os_fail_fast(text.buffer, text.length);
}
#endif
