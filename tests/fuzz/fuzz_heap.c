/*
 * fuzz_heap.c — libFuzzer harness for fm5's public heap interface (the host build, host-fuzz preset).
 *
 * Each input is a program: a sequence of operations on a table of up to 64 live blocks. Every slot of
 * the table remembers the block's pointer, the size that was asked for, whether it is a debug block,
 * and a content key: the harness writes a pattern derived from the key over the whole requested size
 * and checks it back. After every step every live block's content is checked (in full up to 64 KB;
 * larger blocks in full before they are freed or reallocated, and their first and last 4 KB and the
 * 128 bytes around every 4 KB boundary after every step), and so is every result. At the end of each
 * input every block is freed, every mode that was entered is left, every setting is restored and
 * fault injection is off, so that inputs are independent (the heap keeps its spans, which is allowed);
 * then a walk must find no used block, and a debug scan (after inputs that used debug mode, and every
 * 16th input) must find nothing corrupted.
 *
 * Operations: the first byte of each picks one from byte % 32 (OPS below); its arguments follow.
 * Missing bytes read as 0, so every byte string is a valid program. tests/fuzz/make_corpus.py writes
 * the seeds of tests/fuzz/corpus/ in this format.
 *
 *   GETMEM    slot, size, content   FastMM_GetMem: aligned, outside every live block, usable >= size
 *   ALLOCMEM  slot, size, content   FastMM_AllocMem: the same, and zero-filled
 *   REALLOC   slot, how, size       FastMM_ReallocMem: content kept up to min(old, new); NULL only under
 *                                   fault injection, and then the old block is intact and still live
 *   BURST     slot, n, size, content
 *                                   n GetMems of one size (whole small spans, full medium spans)
 *   FREE      slot                  FastMM_FreeMem returns 0
 *   FREE_RANGE slot, how            FastMM_FreeMem of up to 64 slots, upwards or downwards
 *   BAD       what, slot, offset    free / realloc / size query of a pointer that is no live block:
 *                                   interior, misaligned, before or after a block, recently freed, from
 *                                   malloc, the stack, a global, NULL or wild. -1 / NULL / 0, exactly one
 *                                   event of the right kind, and the block it was derived from unchanged
 *   QUERY     slot                  BlockMaximumUserBytes >= size; BlockCurrentUserBytes between size and
 *                                   that, exact for debug and large blocks; fm5_usable_size agrees
 *   DEBUG_ON / DEBUG_OFF            FastMM_EnterDebugMode / FastMM_ExitDebugMode (balanced, depth <= 4)
 *   SCAN                            FastMM_ScanDebugBlocksForCorruption returns 1, with no event
 *   WALK      flags                 FastMM_WalkBlocks over every kind sees every live block once (and a
 *                                   used block only if it is in the table), then optionally a walk of
 *                                   some kinds only; fm5's address space (medium spans + large blocks)
 *                                   equals FastMM_GetCurrentMemoryUsage minus what the OS refused back
 *   FAULT_ON  flags, nth, rate      fm5_os_fault_injection: the nth OS call (and/or calls at random)
 *                                   refused; allocations may then fail cleanly, never more of them than
 *                                   calls were refused
 *   FAULT_OFF                       injection off
 *   STATUS                          FastMM_GetHeapStatus / FastMM_GetUsageSummary agree with the walk
 *   ALIGN     flags                 Enter/ExitMinimumAddressAlignment (and invalid uses: -1, one event)
 *   ERASE     flags                 Begin/End Erase{Allocated,Freed}BlockContent
 *   SETTINGS  what, value           optimization strategy, debug options, stack-trace depth (and invalid
 *                                   values: -1, one event), ProcessAllPendingFrees
 *   C_API     what, ...             fm5_malloc, fm5_calloc (and its overflow), fm5_realloc, fm5_free
 *
 * No event is expected from a correct operation, except OutOfMemory and ReleaseFailed while fault
 * injection is on. A failed check prints one line "fuzz_heap: check failed ..." and aborts.
 *
 * Memory usage does not return to its starting value when an input has freed everything, and need not:
 * the medium manager keeps an empty span (keep_empty_span in blocks/medium_blocks.c, except with
 * FastMM_OptimizeForLowMemoryUsage), a small size class keeps its feed span, and an OS refusal to
 * unmap leaves its bytes counted. (Small spans kept and medium blocks left unmerged by debug mode are
 * recycled when it ends: outside debug mode the walk must find no free medium block that carries
 * debug information, since no input corrupts a block and so none is quarantined.) What is checked instead is exact: usage == the walk's medium spans + large blocks + the bytes
 * of ReleaseFailed events, and after each input the walk finds no used block at all.
 *
 * A ReleaseFailed event's memory (no longer used by fm5, still counted) is unmapped here, so that a long
 * run under fault injection does not pile up resident memory; fm5 touching it again would then fault.
 *
 * Environment: FM5_FUZZ_LAST_INPUT=path writes each input to `path` before running it, since a failed
 * FM5_ASSERT ends the process with _exit(134), which libFuzzer cannot catch to save the input.
 * FM5_FUZZ_STATS=1 prints counts at exit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fm5.h"
#include "api/startup.h"
#include "base/os.h"
#include "blocks/geometry.h"

/* ---- limits ------------------------------------------------------------------------------------ */

#define SLOT_COUNT 64
#define FREED_RING_SIZE 16
#define MAX_STEPS 4096
#define MAX_SMALL_SIZE 2622u
#define MAX_MEDIUM_SIZE 558904u
#define MAX_LARGE_SIZE ((size_t)2 << 20)
#define MAX_REALLOC_SIZE ((size_t)4 << 20)
#define FULL_CHECK_LIMIT ((size_t)64 << 10)
#define DEBUG_DEPTH_LIMIT 4
#define NEST_LIMIT 3

_Static_assert(MAX_SMALL_SIZE == FM5_MAXIMUM_SMALL_USER_SIZE, "fm5.h's small range");
_Static_assert(MAX_MEDIUM_SIZE == FM5_MAXIMUM_MEDIUM_USER_SIZE, "fm5.h's medium range");

#define ALL_BLOCK_KINDS (FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock)
#define ALL_KINDS (ALL_BLOCK_KINDS | FastMM_SmallBlockSpan | FastMM_MediumBlockSpan)

/* ---- failing ----------------------------------------------------------------------------------- */

static unsigned long total_steps;
static unsigned step_in_input;
static const char *current_op = "start-up";

static void fail(const char *format, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "fuzz_heap: check failed at step %u of the input (%s): ", step_in_input, current_op);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    abort();
}

#define CHECK(condition, ...)        \
    do {                             \
        if (!(condition))            \
            fail(__VA_ARGS__);       \
    } while (0)

/* ---- the input --------------------------------------------------------------------------------- */

typedef struct reader {
    const uint8_t *data;
    size_t size;
    size_t position;
} reader;

static unsigned read_u8(reader *r)
{
    return r->position < r->size ? r->data[r->position++] : 0;
}

static unsigned read_u16(reader *r)
{
    unsigned low = read_u8(r);
    return low | read_u8(r) << 8;
}

static uint32_t read_u32(reader *r)
{
    uint32_t low = read_u16(r);
    return low | (uint32_t)read_u16(r) << 16;
}

static uint64_t read_u64(reader *r)
{
    uint64_t low = read_u32(r);
    return low | (uint64_t)read_u32(r) << 32;
}

/* ---- content patterns -------------------------------------------------------------------------- */

/* The loops over block contents are most of the work: without coverage and sanitizer instrumentation
 * (they touch only fm5's memory, which the sanitizers do not track) they run about ten times faster. */
#define UNINSTRUMENTED __attribute__((no_sanitize("coverage", "address", "undefined")))

enum pattern_mode {
    PATTERN_MIXED = 0,     /* splitmix64(key + word index): looks like nothing fm5 writes */
    PATTERN_CONSTANT = 1,  /* the key in every word: forged status words and headers inside the block */
    PATTERN_COUNTER = 2    /* key + word index: forged headers that change from word to word */
};

typedef struct slot {
    uint8_t *p;
    size_t size;
    uint64_t key;
    unsigned mode;
    int live;
    int debug;       /* a debug block: allocated in debug mode, or a debug block reallocated */
    unsigned kind;   /* its FastMM_BlockKind at the last full walk; 0 before one */
} slot;

static slot slots[SLOT_COUNT];

UNINSTRUMENTED static uint64_t splitmix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

UNINSTRUMENTED static inline uint64_t pattern_word(const slot *s, size_t index)
{
    switch (s->mode) {
    case PATTERN_CONSTANT: return s->key;
    case PATTERN_COUNTER: return s->key + index;
    default: return splitmix64(s->key + index);
    }
}

UNINSTRUMENTED static inline uint8_t pattern_byte(const slot *s, size_t offset)
{
    return (uint8_t)(pattern_word(s, offset >> 3) >> ((offset & 7) * 8));
}

/* Bytes [from, to) of the block; offsets count from the block's start (which is 16-byte aligned). */
UNINSTRUMENTED static void pattern_fill(const slot *s, size_t from, size_t to)
{
    size_t i = from;
    for (; i < to && (i & 7); i++)
        s->p[i] = pattern_byte(s, i);
    for (; i + 8 <= to; i += 8) {
        uint64_t word = pattern_word(s, i >> 3);
        memcpy(s->p + i, &word, 8);
    }
    for (; i < to; i++)
        s->p[i] = pattern_byte(s, i);
}

/* The first offset in [from, to) that differs from the pattern, or SIZE_MAX. */
UNINSTRUMENTED static size_t pattern_mismatch(const slot *s, size_t from, size_t to)
{
    size_t i = from;
    for (; i < to && (i & 7); i++)
        if (s->p[i] != pattern_byte(s, i))
            return i;
    for (; i + 8 <= to; i += 8) {
        uint64_t word;
        memcpy(&word, s->p + i, 8);
        if (word != pattern_word(s, i >> 3))
            for (size_t j = i; j < i + 8; j++)
                if (s->p[j] != pattern_byte(s, j))
                    return j;
    }
    for (; i < to; i++)
        if (s->p[i] != pattern_byte(s, i))
            return i;
    return SIZE_MAX;
}

static void check_range(const slot *s, size_t from, size_t to, const char *when)
{
    if (to > s->size)
        to = s->size;
    if (from >= to)
        return;
    size_t bad = pattern_mismatch(s, from, to);
    CHECK(bad == SIZE_MAX,
          "%s: block %p (size %zu, %s) changed at offset %zu: 0x%02x instead of 0x%02x", when, (void *)s->p,
          s->size, s->debug ? "debug" : "ordinary", bad, s->p[bad], pattern_byte(s, bad));
}

static void check_content_full(const slot *s, const char *when)
{
    check_range(s, 0, s->size, when);
}

/* After every step: everything up to 64 KB; above, both ends and the lines around every 4 KB boundary
 * (where fm5's own headers would land). Blocks are checked in full before every free and realloc. */
static void check_content_sampled(const slot *s)
{
    if (s->size <= FULL_CHECK_LIMIT) {
        check_content_full(s, "after the step");
        return;
    }
    check_range(s, 0, 4096, "after the step");
    for (size_t page = 4096; page + 4096 < s->size; page += 4096)
        check_range(s, page - 64, page + 64, "after the step");
    check_range(s, s->size - 4096, s->size, "after the step");
}

static void check_all_contents(void)
{
    for (int i = 0; i < SLOT_COUNT; i++)
        if (slots[i].live)
            check_content_sampled(&slots[i]);
}

/* ---- events ------------------------------------------------------------------------------------ */

#define EVENT_KINDS 32

static size_t event_counts[EVENT_KINDS];
static size_t event_total;
static int last_event_kind;
static const void *last_event_pointer;
/* Bytes the OS refused to take back (ReleaseFailed): still counted in fm5's usage. */
static size_t refused_release_bytes;

static void FM5_CALL on_event(const FastMM_Event *event, void *user)
{
    (void)user;
    unsigned kind = event->Kind > 0 && event->Kind < EVENT_KINDS ? (unsigned)event->Kind : 0;
    event_counts[kind]++;
    event_total++;
    last_event_kind = event->Kind;
    last_event_pointer = event->Pointer;
    if (event->Kind == FastMM_EventReleaseFailed && event->Pointer && event->Size) {
        refused_release_bytes += event->Size;
        /* fm5 has let go of these bytes (base/memory_usage.h): give them back for it. */
        munmap((void *)event->Pointer, event->Size);
    }
}

static size_t marked_counts[EVENT_KINDS];
static size_t marked_total;

static void events_mark(void)
{
    memcpy(marked_counts, event_counts, sizeof event_counts);
    marked_total = event_total;
}

static int fault_armed;

/* Nothing to report, except what a refused OS call explains while injection is on. */
static void events_expect_none(const char *what)
{
    for (unsigned kind = 0; kind < EVENT_KINDS; kind++) {
        size_t count = event_counts[kind] - marked_counts[kind];
        if (!count)
            continue;
        if (fault_armed && (kind == FastMM_EventOutOfMemory || kind == FastMM_EventReleaseFailed))
            continue;
        fail("%s: %zu unexpected event(s) of kind %u", what, count, kind);
    }
}

static void events_expect_one(const char *what, const void *pointer, int kind_a, int kind_b)
{
    CHECK(event_total - marked_total == 1, "%s(%p): %zu events instead of exactly one", what, pointer,
          event_total - marked_total);
    CHECK(last_event_kind == kind_a || last_event_kind == kind_b, "%s(%p): event of kind %d, expected %d or %d",
          what, pointer, last_event_kind, kind_a, kind_b);
}

/* ---- state that each input must leave as it found it ------------------------------------------- */

static int debug_depth;
static int debug_used;                     /* this input entered debug mode */
static unsigned alignment_counts[4];       /* entered 8, 16, 32, 64 */
static int erase_allocated_count, erase_freed_count;
static unsigned default_debug_options, default_stack_depth;

/* Fault injection since it was last turned on. */
static uint32_t fault_refused;
static unsigned fault_failures;
static size_t fault_start_oom_events, fault_start_release_events;

static void *freed_ring[FREED_RING_SIZE];
static unsigned freed_count, freed_next;

static unsigned long stat_inputs, stat_failures_injected, stat_refused, stat_bad_pointer_tests;
static size_t stat_max_usage, stat_max_idle_usage;

static unsigned expected_alignment(void)
{
    unsigned alignment = FM5_DEFAULT_MINIMUM_ALIGNMENT;
    for (int i = 3; i >= 0; i--)
        if (alignment_counts[i]) {
            if ((8u << i) > alignment)
                alignment = 8u << i;
            break;
        }
    return alignment;
}

static void remember_freed(void *p)
{
    freed_ring[freed_next] = p;
    freed_next = (freed_next + 1) % FREED_RING_SIZE;
    if (freed_count < FREED_RING_SIZE)
        freed_count++;
}

/* ---- the table --------------------------------------------------------------------------------- */

static int live_index_of(const void *p)
{
    for (int i = 0; i < SLOT_COUNT; i++)
        if (slots[i].live && slots[i].p == p)
            return i;
    return -1;
}

static int find_live(unsigned start)
{
    for (int n = 0; n < SLOT_COUNT; n++) {
        int i = (int)((start + (unsigned)n) % SLOT_COUNT);
        if (slots[i].live)
            return i;
    }
    return -1;
}

static void check_no_overlap(int index)
{
    const slot *s = &slots[index];
    uintptr_t start = (uintptr_t)s->p, end = start + (s->size ? s->size : 1);
    for (int i = 0; i < SLOT_COUNT; i++) {
        if (i == index || !slots[i].live)
            continue;
        uintptr_t other = (uintptr_t)slots[i].p, other_end = other + (slots[i].size ? slots[i].size : 1);
        CHECK(end <= other || other_end <= start, "new block %p (size %zu) overlaps live block %p (size %zu)",
              (void *)s->p, s->size, (void *)slots[i].p, slots[i].size);
    }
}

static void check_new_block_address(const void *p, size_t size)
{
    unsigned alignment = expected_alignment();
    CHECK((uintptr_t)p % alignment == 0, "block %p (size %zu) is not %u-byte aligned", p, size, alignment);
    CHECK(size <= MAX_SMALL_SIZE || (uintptr_t)p % 64 == 0, "medium or large block %p (size %zu) is not 64-byte aligned",
          p, size);
}

static void check_usable(const slot *s, const char *when)
{
    size_t maximum = FastMM_BlockMaximumUserBytes(s->p);
    CHECK(maximum >= s->size, "%s: BlockMaximumUserBytes(%p) = %zu < requested %zu", when, (void *)s->p, maximum,
          s->size);
}

static void free_slot(int index, const char *why)
{
    slot *s = &slots[index];
    check_content_full(s, why);
    int result = FastMM_FreeMem(s->p);
    CHECK(result == 0, "%s: FastMM_FreeMem(%p) (size %zu) returned %d", why, (void *)s->p, s->size, result);
    remember_freed(s->p);
    s->live = 0;
}

/* An empty slot at or after `start`; when the table is full, the slot at `start` is freed for it. */
static int slot_for_new_block(unsigned start)
{
    for (int n = 0; n < SLOT_COUNT; n++) {
        int i = (int)((start + (unsigned)n) % SLOT_COUNT);
        if (!slots[i].live)
            return i;
    }
    int i = (int)(start % SLOT_COUNT);
    free_slot(i, "freeing a slot for a new block");
    return i;
}

static void adopt(int index, void *p, size_t size, unsigned mode, uint64_t key, int debug, const char *how)
{
    check_new_block_address(p, size);
    slot *s = &slots[index];
    s->p = p;
    s->size = size;
    s->mode = mode;
    s->key = key;
    s->live = 1;
    s->debug = debug;
    s->kind = 0;
    check_no_overlap(index);
    check_usable(s, how);
    pattern_fill(s, 0, size);
}

/* The first byte of [p, p + size) that is not zero, or SIZE_MAX. */
UNINSTRUMENTED static size_t first_nonzero(const uint8_t *p, size_t size)
{
    size_t i = 0;
    for (; i < size && ((uintptr_t)(p + i) & 7); i++)
        if (p[i])
            return i;
    for (; i + 8 <= size; i += 8) {
        uint64_t word;
        memcpy(&word, p + i, 8);
        if (word)
            break;
    }
    for (; i < size; i++)
        if (p[i])
            return i;
    return SIZE_MAX;
}

static void check_zeroed(const void *p, size_t size, const char *how)
{
    size_t bad = first_nonzero(p, size);
    CHECK(bad == SIZE_MAX, "%s(%zu) = %p: byte %zu is 0x%02x, not zero", how, size, p, bad, ((const uint8_t *)p)[bad]);
}

/* ---- sizes and contents from the input --------------------------------------------------------- */

static const size_t interesting_sizes[] = {
    0, 1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 46, 47, 48, 62, 63, 64, 65, 126, 127, 128, 254, 255, 256,
    1022, 1023, 1024, 2606, 2607, 2608, 2620, 2621, 2622, 2623, 2624, 2625, 2872, 2873, 3000, 4096,
    65464, 65536, 101176, 101177, 297784, 297785, 558840, 558903, 558904, 558905, 558906,
    65536 * 9 - 64, 65536 * 9 - 63, (size_t)1 << 20, ((size_t)2 << 20) - 64, (size_t)2 << 20,
};

/* Weighted towards small: 5/8 small, 1/16 boundary values, 1/4 medium, 1/16 large. */
static size_t read_size(reader *r)
{
    unsigned c = read_u8(r);
    unsigned band = c >> 4;
    if (band <= 4)
        return read_u8(r);
    if (band <= 9)
        return read_u16(r) % (MAX_SMALL_SIZE + 1);
    if (band == 10)
        return interesting_sizes[read_u8(r) % (sizeof interesting_sizes / sizeof interesting_sizes[0])];
    if (band <= 14)
        return MAX_SMALL_SIZE + 1 + read_u32(r) % (MAX_MEDIUM_SIZE - MAX_SMALL_SIZE);
    return MAX_MEDIUM_SIZE + 1 + read_u32(r) % (MAX_LARGE_SIZE - MAX_MEDIUM_SIZE);
}

static uint64_t key_counter;

static void read_content(reader *r, unsigned *mode, uint64_t *key)
{
    unsigned c = read_u8(r);
    switch (c % 4) {
    case 2:
        *mode = PATTERN_CONSTANT;
        *key = read_u64(r);
        break;
    case 3:
        *mode = PATTERN_COUNTER;
        *key = read_u64(r);
        break;
    default:
        *mode = PATTERN_MIXED;
        *key = splitmix64(++key_counter ^ ((uint64_t)c << 56));
        break;
    }
}

static size_t read_new_size(reader *r, size_t old)
{
    unsigned how = read_u8(r);
    size_t size;
    switch (how % 4) {
    case 0: size = read_size(r); break;
    case 1: size = old + read_u16(r); break;                                     /* a little larger */
    case 2: { size_t d = read_u16(r); size = old > d ? old - d : 0; break; }     /* a little smaller */
    default: size = (how & 4) ? old * 2 + 1 : old / 2; break;
    }
    return size > MAX_REALLOC_SIZE ? MAX_REALLOC_SIZE : size;
}

/* ---- fault injection --------------------------------------------------------------------------- */

static void fault_arm(unsigned kinds, uint32_t nth, uint32_t per_million, uint64_t seed)
{
    if (!fault_armed) {
        fault_failures = 0;
        fault_refused = 0;
        fault_start_oom_events = event_counts[FastMM_EventOutOfMemory];
        fault_start_release_events = event_counts[FastMM_EventReleaseFailed];
    }
    fault_refused += fm5_os_fault_injection(kinds, nth, per_million, seed);
    fault_armed = 1;
}

static void fault_disarm(void)
{
    if (!fault_armed)
        return;
    fault_refused += fm5_os_fault_injection(0, 0, 0, 0);
    fault_armed = 0;
    stat_refused += fault_refused;
    stat_failures_injected += fault_failures;
    size_t oom = event_counts[FastMM_EventOutOfMemory] - fault_start_oom_events;
    size_t release = event_counts[FastMM_EventReleaseFailed] - fault_start_release_events;
    CHECK(fault_failures <= fault_refused, "%u allocations failed but only %u OS calls were refused", fault_failures,
          fault_refused);
    CHECK(oom + release <= fault_refused, "%zu OutOfMemory and %zu ReleaseFailed events for %u refused OS calls", oom,
          release, fault_refused);
}

/* A NULL from an allocation: only a refused OS call explains it. */
static void allocation_failed(const char *what, size_t size)
{
    CHECK(fault_armed, "%s(%zu) returned NULL without fault injection", what, size);
    fault_failures++;
}

/* ---- walks ------------------------------------------------------------------------------------- */

#define HASH_SIZE 256

static int hash_slots[HASH_SIZE];

static unsigned hash_of(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return (unsigned)(x >> 56);
}

static void hash_build(void)
{
    for (int i = 0; i < HASH_SIZE; i++)
        hash_slots[i] = -1;
    for (int i = 0; i < SLOT_COUNT; i++) {
        if (!slots[i].live)
            continue;
        unsigned h = hash_of(slots[i].p);
        while (hash_slots[h] >= 0)
            h = (h + 1) % HASH_SIZE;
        hash_slots[h] = i;
    }
}

static int hash_find(const void *p)
{
    for (unsigned h = hash_of(p);; h = (h + 1) % HASH_SIZE) {
        int i = hash_slots[h];
        if (i < 0)
            return -1;
        if (slots[i].p == p)
            return i;
    }
}

typedef struct walk_context {
    unsigned kinds;        /* what was asked for (all kinds when 0) */
    int used_only;
    int learn_kinds;
    unsigned char found[SLOT_COUNT];
    size_t address_space;  /* medium spans + large blocks */
    size_t used_blocks;
    size_t items;
    int debug_mode;        /* debug mode was on when the walk began */
} walk_context;

static int FM5_CALL walk_visit(const FastMM_WalkBlockInfo *info, void *user)
{
    walk_context *walk = user;
    walk->items++;
    unsigned kind = info->Kind;
    CHECK(kind == FastMM_SmallBlock || kind == FastMM_MediumBlock || kind == FastMM_LargeBlock ||
              kind == FastMM_SmallBlockSpan || kind == FastMM_MediumBlockSpan,
          "walk: item %p of unknown kind %u", info->Address, kind);
    CHECK(kind & walk->kinds, "walk of kinds 0x%x reported an item of kind %u at %p", walk->kinds, kind, info->Address);
    CHECK(!walk->used_only || !info->IsFree, "walk of used blocks reported a free block at %p (kind %u)", info->Address,
          kind);
    if (kind == FastMM_MediumBlockSpan || kind == FastMM_LargeBlock)
        walk->address_space += info->BlockSize;
    if (!(kind & ALL_BLOCK_KINDS))
        return 0;
    int i = hash_find(info->Address);
    CHECK(!info->IsFree || kind != FastMM_MediumBlock || !info->IsDebugBlock || walk->debug_mode,
          "walk: free medium block %p (size %zu) still carries debug information after debug mode", info->Address,
          info->BlockSize);
    if (info->IsFree) {
        CHECK(i < 0, "walk reported live block %p (size %zu) as free (kind %u)", info->Address, i >= 0 ? slots[i].size : 0,
              kind);
        return 0;
    }
    walk->used_blocks++;
    CHECK(i >= 0, "walk reported a used block %p (kind %u, usable %zu, debug %d) that the program does not hold",
          info->Address, kind, info->UsableSize, info->IsDebugBlock);
    const slot *s = &slots[i];
    CHECK(!walk->found[i], "walk reported block %p twice", info->Address);
    walk->found[i] = 1;
    CHECK(info->IsDebugBlock == s->debug, "walk: block %p (size %zu) has IsDebugBlock %d, expected %d", info->Address,
          s->size, info->IsDebugBlock, s->debug);
    if (s->debug)
        CHECK(info->UsableSize == s->size, "walk: debug block %p has UsableSize %zu, requested %zu", info->Address,
              info->UsableSize, s->size);
    else
        CHECK(info->UsableSize >= s->size, "walk: block %p has UsableSize %zu < requested %zu", info->Address,
              info->UsableSize, s->size);
    CHECK(info->BlockSize >= info->UsableSize, "walk: block %p has BlockSize %zu < UsableSize %zu", info->Address,
          info->BlockSize, info->UsableSize);
    if (!s->debug) {
        CHECK(s->size <= MAX_SMALL_SIZE || kind != FastMM_SmallBlock, "walk: %zu-byte block %p is a small block", s->size,
              info->Address);
        CHECK(s->size <= MAX_MEDIUM_SIZE || kind == FastMM_LargeBlock, "walk: %zu-byte block %p is not a large block",
              s->size, info->Address);
    }
    if (walk->learn_kinds)
        slots[i].kind = kind;
    return 0;
}

static size_t fm5_usage_expected_from(size_t address_space)
{
    return address_space + refused_release_bytes;
}

/* A walk of `kinds` (0: all). Every live block whose kind was selected must be seen. Returns the number
 * of used blocks it saw; a walk of every kind also checks the memory usage against the address space. */
static size_t walk_and_check(unsigned kinds, int used_only, const char *why)
{
    walk_context walk;
    memset(&walk, 0, sizeof walk);
    unsigned selected = kinds ? kinds & ALL_KINDS : ALL_KINDS;
    walk.kinds = selected;
    walk.used_only = used_only;
    walk.learn_kinds = (selected & ALL_BLOCK_KINDS) == ALL_BLOCK_KINDS;
    walk.debug_mode = FastMM_DebugModeActive();
    hash_build();
    int complete = FastMM_WalkBlocks(walk_visit, &walk, kinds, used_only, 1000);
    CHECK(complete == 1, "%s: FastMM_WalkBlocks(kinds 0x%x, used_only %d) returned %d", why, kinds, used_only, complete);
    for (int i = 0; i < SLOT_COUNT; i++) {
        if (!slots[i].live)
            continue;
        int expected = walk.learn_kinds || (slots[i].kind && (slots[i].kind & selected));
        if (expected)
            CHECK(walk.found[i], "%s: the walk of kinds 0x%x did not report live block %p (size %zu, %s, kind %u)", why,
                  selected, (void *)slots[i].p, slots[i].size, slots[i].debug ? "debug" : "ordinary", slots[i].kind);
    }
    if ((selected & (FastMM_MediumBlockSpan | FastMM_LargeBlock)) == (FastMM_MediumBlockSpan | FastMM_LargeBlock)) {
        size_t usage = FastMM_GetCurrentMemoryUsage();
        CHECK(usage == fm5_usage_expected_from(walk.address_space),
              "%s: FastMM_GetCurrentMemoryUsage() = %zu, but the walk found %zu bytes of spans and large blocks and "
              "the OS refused to take back %zu",
              why, usage, walk.address_space, refused_release_bytes);
        if (usage > stat_max_usage)
            stat_max_usage = usage;
    }
    return walk.used_blocks;
}

/* ---- the operations ---------------------------------------------------------------------------- */

static void op_get_mem(reader *r, int zeroed)
{
    current_op = zeroed ? "AllocMem" : "GetMem";
    int i = slot_for_new_block(read_u8(r));
    size_t size = read_size(r);
    unsigned mode;
    uint64_t key;
    read_content(r, &mode, &key);
    int debug = FastMM_DebugModeActive();
    void *p = zeroed ? FastMM_AllocMem(size) : FastMM_GetMem(size);
    if (!p) {
        allocation_failed(current_op, size);
        return;
    }
    if (zeroed)
        check_zeroed(p, size, "FastMM_AllocMem");
    adopt(i, p, size, mode, key, debug, current_op);
}

/* What a reallocation of slot i to `new_size` returned (`q`): NULL leaves the old block intact and
 * live (only under fault injection); otherwise the content is kept up to the smaller size, wherever
 * the block now is. `debug`: debug mode was on, so the block is a debug block now. */
static void accept_reallocation(int i, uint8_t *q, size_t new_size, int debug, const char *what)
{
    slot *s = &slots[i];
    char after_failure[96];
    snprintf(after_failure, sizeof after_failure, "after a failed %s", what);
    if (!q) {
        allocation_failed(what, new_size);
        check_content_full(s, after_failure);
        check_usable(s, after_failure);
        return;
    }
    uint8_t *old = s->p;
    if (q != old) {
        check_new_block_address(q, new_size);
        remember_freed(old);
    }
    size_t kept = s->size < new_size ? s->size : new_size;
    s->p = q;
    s->size = new_size;
    s->debug = s->debug || debug;
    s->kind = 0;
    char kept_by[96], after[96];
    snprintf(kept_by, sizeof kept_by, "content kept by %s", what);
    snprintf(after, sizeof after, "after %s", what);
    check_range(s, 0, kept, kept_by);
    check_no_overlap(i);
    check_usable(s, after);
    pattern_fill(s, kept, new_size);
}

static void op_realloc(reader *r)
{
    current_op = "ReallocMem";
    int i = find_live(read_u8(r));
    size_t new_size = read_new_size(r, i >= 0 ? slots[i].size : 0);
    if (i < 0)
        return;
    slot *s = &slots[i];
    check_content_full(s, "before ReallocMem");
    int debug_active = FastMM_DebugModeActive();
    accept_reallocation(i, FastMM_ReallocMem(s->p, new_size), new_size, debug_active, "FastMM_ReallocMem");
}

static void op_free(reader *r)
{
    current_op = "FreeMem";
    int i = find_live(read_u8(r));
    if (i >= 0)
        free_slot(i, "FreeMem");
}

/* Many blocks of one size at once: enough to feed whole small spans and fill medium spans, which
 * FREE_RANGE can then empty again (so that spans go back to the medium manager and to the OS). */
static void op_burst(reader *r)
{
    current_op = "GetMem burst";
    unsigned start = read_u8(r);
    unsigned count = 1 + read_u8(r) % 48;
    size_t size = read_size(r);
    unsigned mode;
    uint64_t key;
    read_content(r, &mode, &key);
    int debug = FastMM_DebugModeActive();
    for (unsigned n = 0; n < count; n++) {
        int i = -1;
        for (int k = 0; k < SLOT_COUNT && i < 0; k++)
            if (!slots[(start + (unsigned)k) % SLOT_COUNT].live)
                i = (int)((start + (unsigned)k) % SLOT_COUNT);
        if (i < 0)
            return;
        void *p = FastMM_GetMem(size);
        if (!p) {
            allocation_failed("FastMM_GetMem (burst)", size);
            return;
        }
        adopt(i, p, size, mode, key + n * 0x9E3779B97F4A7C15ull, debug, current_op);
    }
}

/* Frees up to 64 slots from `start` on, upwards or downwards (the order decides what merges). */
static void op_free_range(reader *r)
{
    current_op = "FreeMem range";
    unsigned start = read_u8(r);
    unsigned how = read_u8(r);
    unsigned count = 1 + how % 64;
    for (unsigned n = 0; n < count; n++) {
        unsigned i = (how & 64) ? (start + SLOT_COUNT * 2 - n) % SLOT_COUNT : (start + n) % SLOT_COUNT;
        if (slots[i].live)
            free_slot((int)i, current_op);
    }
}

static char global_buffer[256] __attribute__((aligned(64)));

enum bad_pointer_kind {
    BAD_INTERIOR, BAD_INTERIOR_ALIGNED, BAD_MISALIGNED, BAD_BEFORE, BAD_AFTER, BAD_FREED, BAD_MALLOC, BAD_STACK,
    BAD_GLOBAL, BAD_NULL, BAD_WILD, BAD_KIND_COUNT
};

static const char *const bad_pointer_names[BAD_KIND_COUNT] = {
    "interior", "aligned interior", "misaligned", "before a block", "after a block", "recently freed", "malloc'd",
    "stack", "global", "NULL", "wild",
};

static void op_bad_pointer(reader *r)
{
    char stack_buffer[256] __attribute__((aligned(64)));
    memset(stack_buffer, 0x5A, sizeof stack_buffer);
    unsigned what = read_u8(r);
    unsigned kind = what % BAD_KIND_COUNT;
    unsigned action = (what / BAD_KIND_COUNT) % 3;
    unsigned slot_byte = read_u8(r);
    unsigned offset = read_u16(r);
    static const char *const action_names[3] = { "bad FreeMem", "bad ReallocMem", "bad size query" };
    current_op = action_names[action];

    int parent = -1;
    uint8_t *p = NULL;
    void *malloced = NULL;
    int maybe_freed_block = 0;   /* the pointer may be the start of a block that is free (double free) */
    switch (kind) {
    case BAD_INTERIOR:
    case BAD_INTERIOR_ALIGNED:
    case BAD_MISALIGNED:
    case BAD_BEFORE:
    case BAD_AFTER:
        parent = find_live(slot_byte);
        if (parent < 0)
            return;
        p = slots[parent].p;
        if (kind == BAD_INTERIOR) {
            if (slots[parent].size == 0)
                return;
            p += 1 + offset % slots[parent].size;
        } else if (kind == BAD_INTERIOR_ALIGNED) {
            if (slots[parent].size < 16)
                return;
            p += 16 * (1 + offset % (slots[parent].size / 16));
        } else if (kind == BAD_MISALIGNED) {
            p += 1 + offset % 15;
        } else if (kind == BAD_BEFORE) {
            p -= 16 * (1 + offset % 8);
            maybe_freed_block = 1;
        } else {
            p += ((slots[parent].size + 15) & ~(size_t)15) + 16 * (offset % 8);
            maybe_freed_block = 1;
        }
        break;
    case BAD_FREED:
        if (!freed_count)
            return;
        p = freed_ring[offset % freed_count];
        maybe_freed_block = 1;
        break;
    case BAD_MALLOC:
        malloced = malloc(1 + offset % 512);
        CHECK(malloced != NULL, "malloc failed");
        p = malloced;
        break;
    case BAD_STACK:
        p = (uint8_t *)stack_buffer + 16 * (offset % 16);
        break;
    case BAD_GLOBAL:
        p = (uint8_t *)global_buffer + 16 * (offset % 16);
        break;
    case BAD_NULL:
        p = NULL;
        break;
    default:
        /* Anywhere in the 47-bit user address space, 16-byte aligned, or near a live block. */
        if (slot_byte & 1) {
            int near = find_live(slot_byte >> 1);
            if (near < 0)
                return;
            p = slots[near].p + ((int64_t)(int16_t)offset) * 16;
        } else {
            p = (uint8_t *)(uintptr_t)(read_u64(r) & ((((uint64_t)1) << 47) - 16));
        }
        maybe_freed_block = 1;
        break;
    }
    /* A live block is no bad pointer (a wild one may hit one; a freed address may have been reused). */
    if (p && live_index_of(p) >= 0) {
        free(malloced);
        return;
    }
    stat_bad_pointer_tests++;
    events_mark();
    const char *name = bad_pointer_names[kind];
    if (action == 0) {
        int result = FastMM_FreeMem(p);
        CHECK(result == -1, "FastMM_FreeMem of a %s pointer %p returned %d", name, (void *)p, result);
        events_expect_one("FastMM_FreeMem", p, FastMM_EventInvalidFree,
                          maybe_freed_block ? FastMM_EventDoubleFree : FastMM_EventInvalidFree);
    } else if (action == 1) {
        size_t size = read_size(r);
        void *q = FastMM_ReallocMem(p, size);
        CHECK(q == NULL, "FastMM_ReallocMem of a %s pointer %p returned %p", name, (void *)p, q);
        events_expect_one("FastMM_ReallocMem", p, FastMM_EventInvalidRealloc,
                          maybe_freed_block ? FastMM_EventReallocOfFreedBlock : FastMM_EventInvalidRealloc);
    } else {
        size_t maximum = FastMM_BlockMaximumUserBytes(p);
        CHECK(maximum == 0, "FastMM_BlockMaximumUserBytes of a %s pointer %p returned %zu", name, (void *)p, maximum);
        events_expect_one("FastMM_BlockMaximumUserBytes", p, FastMM_EventInvalidQuery, FastMM_EventInvalidQuery);
        events_mark();
        size_t current = FastMM_BlockCurrentUserBytes(p);
        CHECK(current == 0, "FastMM_BlockCurrentUserBytes of a %s pointer %p returned %zu", name, (void *)p, current);
        CHECK(event_total - marked_total <= 1 && (event_total == marked_total || last_event_kind == FastMM_EventInvalidQuery),
              "FastMM_BlockCurrentUserBytes of a %s pointer %p: %zu events, the last of kind %d", name, (void *)p,
              event_total - marked_total, last_event_kind);
    }
    CHECK(last_event_pointer == p, "the event of a %s pointer %p names %p", name, (void *)p, last_event_pointer);
    free(malloced);
    if (kind == BAD_STACK)
        for (size_t i = 0; i < sizeof stack_buffer; i++)
            CHECK(stack_buffer[i] == 0x5A, "a bad pointer call wrote to the stack buffer at %zu", i);
    if (parent >= 0) {
        /* Still live, and (with the check after the step) unchanged. */
        events_mark();
        check_usable(&slots[parent], "the block a bad pointer was derived from");
        events_expect_none("the block a bad pointer was derived from");
    }
}

static void op_query(reader *r)
{
    current_op = "size query";
    int i = find_live(read_u8(r));
    if (i < 0)
        return;
    const slot *s = &slots[i];
    size_t maximum = FastMM_BlockMaximumUserBytes(s->p);
    size_t current = FastMM_BlockCurrentUserBytes(s->p);
    CHECK(maximum >= s->size, "BlockMaximumUserBytes(%p) = %zu < requested %zu", (void *)s->p, maximum, s->size);
    CHECK(current >= s->size && current <= maximum, "BlockCurrentUserBytes(%p) = %zu, requested %zu, maximum %zu",
          (void *)s->p, current, s->size, maximum);
    if (s->debug || s->size > MAX_MEDIUM_SIZE)
        CHECK(current == s->size, "BlockCurrentUserBytes(%p) = %zu of a %s block of %zu bytes: not exact", (void *)s->p,
              current, s->debug ? "debug" : "large", s->size);
    size_t usable = fm5_usable_size(s->p);
    CHECK(usable == maximum, "fm5_usable_size(%p) = %zu, BlockMaximumUserBytes %zu", (void *)s->p, usable, maximum);
}

static void op_debug_mode(int enter)
{
    current_op = enter ? "EnterDebugMode" : "ExitDebugMode";
    if (enter) {
        if (debug_depth >= DEBUG_DEPTH_LIMIT)
            return;
        int active = FastMM_EnterDebugMode();
        debug_depth++;
        debug_used = 1;
        CHECK(active == 1, "FastMM_EnterDebugMode returned %d at depth %d", active, debug_depth);
    } else {
        if (debug_depth == 0)
            return;
        int active = FastMM_ExitDebugMode();
        debug_depth--;
        CHECK(active == (debug_depth > 0), "FastMM_ExitDebugMode returned %d at depth %d", active, debug_depth);
    }
    CHECK(FastMM_DebugModeActive() == (debug_depth > 0), "FastMM_DebugModeActive() is %d at depth %d",
          FastMM_DebugModeActive(), debug_depth);
}

static void op_scan(void)
{
    current_op = "ScanDebugBlocksForCorruption";
    int intact = FastMM_ScanDebugBlocksForCorruption();
    CHECK(intact == 1, "FastMM_ScanDebugBlocksForCorruption returned %d with nothing corrupted", intact);
}

static void op_walk(reader *r)
{
    current_op = "WalkBlocks";
    unsigned flags = read_u8(r);
    walk_and_check((flags & 2) ? ALL_KINDS : 0, flags & 1, "full walk");
    if (flags & 4)
        walk_and_check((flags >> 3) & ALL_KINDS, (flags >> 1) & 1, "walk of some kinds");
}

static void op_fault_on(reader *r)
{
    current_op = "fault injection on";
    unsigned flags = read_u8(r);
    unsigned kinds = (flags & 7) ? (flags & 7) : FM5_OS_FAULT_ALL;
    uint32_t nth = (flags & 8) ? 0 : 1 + read_u8(r) % 24;
    uint32_t per_million = (flags & 16) ? (1 + read_u8(r)) * 2000u : 0;
    if (!nth && !per_million)
        nth = 1;
    fault_arm(kinds, nth, per_million, splitmix64(++key_counter));
}

static void op_fault_off(void)
{
    current_op = "fault injection off";
    fault_disarm();
}

static void op_status(void)
{
    current_op = "heap status";
    FastMM_HeapStatus status;
    int complete = FastMM_GetHeapStatus(&status, 1000);
    CHECK(complete == 1, "FastMM_GetHeapStatus returned %d", complete);
    size_t usage = FastMM_GetCurrentMemoryUsage();
    CHECK(usage == fm5_usage_expected_from(status.TotalAddrSpace),
          "FastMM_GetCurrentMemoryUsage() = %zu, heap status TotalAddrSpace %zu, refused releases %zu", usage,
          status.TotalAddrSpace, refused_release_bytes);
    CHECK(status.TotalCommitted == status.TotalAddrSpace, "TotalCommitted %zu != TotalAddrSpace %zu",
          status.TotalCommitted, status.TotalAddrSpace);
    CHECK(status.TotalFree == status.FreeSmall + status.FreeBig + status.Unused,
          "TotalFree %zu != FreeSmall %zu + FreeBig %zu + Unused %zu", status.TotalFree, status.FreeSmall, status.FreeBig,
          status.Unused);
    CHECK(status.TotalAllocated + status.TotalFree <= status.TotalAddrSpace,
          "TotalAllocated %zu + TotalFree %zu > TotalAddrSpace %zu", status.TotalAllocated, status.TotalFree,
          status.TotalAddrSpace);
    CHECK(status.Overhead == status.TotalAddrSpace - status.TotalAllocated - status.TotalFree,
          "Overhead %zu does not add up", status.Overhead);
    CHECK(status.HeapErrorCode == 0, "HeapErrorCode %zu", status.HeapErrorCode);
    size_t requested = 0;
    for (int i = 0; i < SLOT_COUNT; i++)
        if (slots[i].live)
            requested += slots[i].size;
    CHECK(status.TotalAllocated >= requested, "TotalAllocated %zu < the %zu bytes the program holds",
          status.TotalAllocated, requested);
    FastMM_UsageSummary summary;
    complete = FastMM_GetUsageSummary(&summary);
    CHECK(complete == 1, "FastMM_GetUsageSummary returned %d", complete);
    CHECK(summary.AllocatedBytes == status.TotalAllocated, "usage summary AllocatedBytes %zu, heap status %zu",
          summary.AllocatedBytes, status.TotalAllocated);
    CHECK(summary.OverheadBytes == status.TotalAddrSpace - status.TotalAllocated,
          "usage summary OverheadBytes %zu does not add up", summary.OverheadBytes);
}

static void op_alignment(reader *r)
{
    current_op = "minimum address alignment";
    unsigned flags = read_u8(r);
    unsigned index = flags & 3;
    unsigned alignment = 8u << index;
    if (flags & 0x80) {
        /* Invalid uses: a value that is no alignment, or an Exit without an Enter. */
        events_mark();
        int result;
        if ((flags & 0x40) || alignment_counts[index]) {
            unsigned bad = (flags & 0x20) ? 24u : 0u;
            result = (flags & 4) ? FastMM_EnterMinimumAddressAlignment(bad) : FastMM_ExitMinimumAddressAlignment(bad);
        } else {
            result = FastMM_ExitMinimumAddressAlignment(alignment);
        }
        CHECK(result == -1, "an invalid minimum address alignment call returned %d", result);
        events_expect_one("minimum address alignment", NULL, FastMM_EventInvalidArgument, FastMM_EventInvalidArgument);
    } else if ((flags & 4) ? alignment_counts[index] < NEST_LIMIT : alignment_counts[index] == 0) {
        int result = FastMM_EnterMinimumAddressAlignment(alignment);
        CHECK(result == 0, "FastMM_EnterMinimumAddressAlignment(%u) returned %d", alignment, result);
        alignment_counts[index]++;
        events_expect_none("FastMM_EnterMinimumAddressAlignment");
    } else {
        int result = FastMM_ExitMinimumAddressAlignment(alignment);
        CHECK(result == 0, "FastMM_ExitMinimumAddressAlignment(%u) returned %d", alignment, result);
        alignment_counts[index]--;
        events_expect_none("FastMM_ExitMinimumAddressAlignment");
    }
    unsigned current = FastMM_GetCurrentMinimumAddressAlignment();
    CHECK(current == expected_alignment(), "minimum address alignment is %u, expected %u", current,
          expected_alignment());
}

static void op_erase(reader *r)
{
    current_op = "erase modes";
    unsigned flags = read_u8(r);
    int allocated = flags & 1;
    int *count = allocated ? &erase_allocated_count : &erase_freed_count;
    if ((flags & 2) && *count < NEST_LIMIT) {
        if (allocated)
            FastMM_BeginEraseAllocatedBlockContent();
        else
            FastMM_BeginEraseFreedBlockContent();
        ++*count;
    } else {
        int result = allocated ? FastMM_EndEraseAllocatedBlockContent() : FastMM_EndEraseFreedBlockContent();
        CHECK(result == (*count ? 0 : -1), "End of an erase mode at count %d returned %d", *count, result);
        if (*count)
            --*count;
    }
    CHECK(FastMM_EraseAllocatedBlockContentActive() == (erase_allocated_count > 0) &&
              FastMM_EraseFreedBlockContentActive() == (erase_freed_count > 0),
          "erase modes active %d/%d, expected %d/%d", FastMM_EraseAllocatedBlockContentActive(),
          FastMM_EraseFreedBlockContentActive(), erase_allocated_count > 0, erase_freed_count > 0);
}

static void op_settings(reader *r)
{
    current_op = "settings";
    unsigned what = read_u8(r);
    unsigned value = read_u8(r);
    int result;
    events_mark();
    switch (what % 7) {
    case 0:
        result = FastMM_SetOptimizationStrategy((int)(value % 3));
        CHECK(result == 0 && FastMM_GetCurrentOptimizationStrategy() == (int)(value % 3),
              "FastMM_SetOptimizationStrategy(%u) returned %d", value % 3, result);
        events_expect_none("FastMM_SetOptimizationStrategy");
        break;
    case 1:
        result = FastMM_SetOptimizationStrategy((value & 1) ? 3 : -1);
        CHECK(result == -1, "FastMM_SetOptimizationStrategy of an unknown strategy returned %d", result);
        events_expect_one("FastMM_SetOptimizationStrategy", NULL, FastMM_EventInvalidArgument, FastMM_EventInvalidArgument);
        break;
    case 2:
        result = FastMM_SetDebugModeOptions(value & 15);
        CHECK(result == 0 && FastMM_GetDebugModeOptions() == (value & 15), "FastMM_SetDebugModeOptions(%u) returned %d",
              value & 15, result);
        events_expect_none("FastMM_SetDebugModeOptions");
        break;
    case 3:
        result = FastMM_SetDebugModeOptions((value & 15) | (16u << (value % 8)));
        CHECK(result == -1, "FastMM_SetDebugModeOptions with unknown bits returned %d", result);
        events_expect_one("FastMM_SetDebugModeOptions", NULL, FastMM_EventInvalidArgument, FastMM_EventInvalidArgument);
        break;
    case 4:
        result = FastMM_SetDebugModeStackTraceEntryCount(value % 65);
        CHECK(result == 0 && FastMM_GetDebugModeStackTraceEntryCount() == value % 65,
              "FastMM_SetDebugModeStackTraceEntryCount(%u) returned %d", value % 65, result);
        events_expect_none("FastMM_SetDebugModeStackTraceEntryCount");
        break;
    case 5:
        result = FastMM_SetDebugModeStackTraceEntryCount(65 + value);
        CHECK(result == -1, "FastMM_SetDebugModeStackTraceEntryCount(%u) returned %d", 65 + value, result);
        events_expect_one("FastMM_SetDebugModeStackTraceEntryCount", NULL, FastMM_EventInvalidArgument,
                          FastMM_EventInvalidArgument);
        break;
    default:
        result = FastMM_ProcessAllPendingFrees();
        CHECK(result == 1, "FastMM_ProcessAllPendingFrees returned %d with one thread", result);
        events_expect_none("FastMM_ProcessAllPendingFrees");
        break;
    }
}

static void op_c_api(reader *r)
{
    current_op = "C family";
    unsigned what = read_u8(r) % 7;
    unsigned slot_byte = read_u8(r);
    int debug = FastMM_DebugModeActive();
    switch (what) {
    case 0:
    case 4: {
        int i = slot_for_new_block(slot_byte);
        size_t size = read_size(r);
        unsigned mode;
        uint64_t key;
        read_content(r, &mode, &key);
        void *p = what == 0 ? fm5_malloc(size) : fm5_realloc(NULL, size);
        if (!p) {
            allocation_failed(what == 0 ? "fm5_malloc" : "fm5_realloc(NULL)", size);
            return;
        }
        adopt(i, p, size, mode, key, debug, "fm5_malloc");
        break;
    }
    case 1: {
        int i = slot_for_new_block(slot_byte);
        size_t count = 1 + read_u8(r) % 16;
        size_t size = read_u16(r) % 600;
        void *p = fm5_calloc(count, size);
        if (!p) {
            allocation_failed("fm5_calloc", count * size);
            return;
        }
        check_zeroed(p, count * size, "fm5_calloc");
        adopt(i, p, count * size, PATTERN_MIXED, splitmix64(++key_counter), debug, "fm5_calloc");
        break;
    }
    case 2: {
        size_t count = ((size_t)1 << 40) + read_u8(r);
        void *p = fm5_calloc(count, (size_t)1 << 30);
        CHECK(p == NULL, "fm5_calloc of an overflowing size returned %p", p);
        CHECK(fm5_usable_size(NULL) == 0, "fm5_usable_size(NULL) is not 0");
        fm5_free(NULL);
        break;
    }
    case 3: {
        int i = find_live(slot_byte);
        size_t new_size = read_new_size(r, i >= 0 ? slots[i].size : 0);
        if (i < 0)
            return;
        slot *s = &slots[i];
        check_content_full(s, "before fm5_realloc");
        uint8_t *old = s->p;
        uint8_t *q = fm5_realloc(old, new_size);
        if (new_size == 0) {
            CHECK(q == NULL, "fm5_realloc(%p, 0) returned %p", (void *)old, (void *)q);
            remember_freed(old);
            s->live = 0;
            return;
        }
        accept_reallocation(i, q, new_size, debug, "fm5_realloc");
        break;
    }
    default: {
        int i = find_live(slot_byte);
        if (i < 0)
            return;
        check_content_full(&slots[i], "before fm5_free");
        fm5_free(slots[i].p);
        remember_freed(slots[i].p);
        slots[i].live = 0;
        break;
    }
    }
}

/* ---- one input --------------------------------------------------------------------------------- */

enum op {
    OP_GETMEM, OP_BURST, OP_ALLOCMEM, OP_REALLOC, OP_FREE, OP_FREE_RANGE, OP_BAD, OP_QUERY, OP_DEBUG_ON,
    OP_DEBUG_OFF, OP_SCAN, OP_WALK, OP_FAULT_ON, OP_FAULT_OFF, OP_STATUS, OP_ALIGN, OP_ERASE, OP_SETTINGS, OP_C_API
};

/* byte % 32 -> operation: allocation and release are the most frequent (make_corpus.py uses the first
 * byte value of each). */
static const uint8_t OPS[32] = {
    OP_GETMEM, OP_GETMEM, OP_GETMEM, OP_GETMEM, OP_GETMEM, OP_GETMEM, OP_BURST,    /* 0-6 */
    OP_ALLOCMEM, OP_ALLOCMEM,                                                      /* 7-8 */
    OP_REALLOC, OP_REALLOC, OP_REALLOC, OP_REALLOC,                                /* 9-12 */
    OP_FREE, OP_FREE, OP_FREE, OP_FREE, OP_FREE_RANGE,                             /* 13-17 */
    OP_BAD, OP_BAD,                                                                /* 18-19 */
    OP_QUERY,                                                                      /* 20 */
    OP_DEBUG_ON, OP_DEBUG_OFF, OP_SCAN, OP_WALK,                                   /* 21-24 */
    OP_FAULT_ON, OP_FAULT_OFF, OP_STATUS,                                          /* 25-27 */
    OP_ALIGN, OP_ERASE, OP_SETTINGS, OP_C_API                                      /* 28-31 */
};

static void run_op(reader *r)
{
    unsigned op = OPS[read_u8(r) % 32];
    events_mark();
    switch (op) {
    case OP_GETMEM: op_get_mem(r, 0); break;
    case OP_BURST: op_burst(r); break;
    case OP_ALLOCMEM: op_get_mem(r, 1); break;
    case OP_REALLOC: op_realloc(r); break;
    case OP_FREE: op_free(r); break;
    case OP_FREE_RANGE: op_free_range(r); break;
    case OP_BAD: op_bad_pointer(r); return;  /* checks its own events */
    case OP_QUERY: op_query(r); break;
    case OP_DEBUG_ON: op_debug_mode(1); break;
    case OP_DEBUG_OFF: op_debug_mode(0); break;
    case OP_SCAN: op_scan(); break;
    case OP_WALK: op_walk(r); break;
    case OP_FAULT_ON: op_fault_on(r); break;
    case OP_FAULT_OFF: op_fault_off(); break;
    case OP_STATUS: op_status(); break;
    case OP_ALIGN: op_alignment(r); return;
    case OP_ERASE: op_erase(r); break;
    case OP_SETTINGS: op_settings(r); return;
    default: op_c_api(r); break;
    }
    events_expect_none(current_op);
}

/* Everything back as it was, and the heap holds nothing of the program's. */
static void finish_input(void)
{
    current_op = "end of input";
    events_mark();
    fault_disarm();
    for (int i = 0; i < SLOT_COUNT; i++)
        if (slots[i].live)
            free_slot(i, "freeing at the end of the input");
    while (debug_depth > 0) {
        FastMM_ExitDebugMode();
        debug_depth--;
    }
    CHECK(!FastMM_DebugModeActive(), "debug mode still active after the balancing exits");
    for (unsigned index = 0; index < 4; index++)
        for (; alignment_counts[index]; alignment_counts[index]--)
            CHECK(FastMM_ExitMinimumAddressAlignment(8u << index) == 0, "ExitMinimumAddressAlignment(%u) failed",
                  8u << index);
    CHECK(FastMM_GetCurrentMinimumAddressAlignment() == FM5_DEFAULT_MINIMUM_ALIGNMENT,
          "minimum address alignment %u after every Exit", FastMM_GetCurrentMinimumAddressAlignment());
    for (; erase_allocated_count; erase_allocated_count--)
        CHECK(FastMM_EndEraseAllocatedBlockContent() == 0, "EndEraseAllocatedBlockContent failed");
    for (; erase_freed_count; erase_freed_count--)
        CHECK(FastMM_EndEraseFreedBlockContent() == 0, "EndEraseFreedBlockContent failed");
    CHECK(FastMM_SetOptimizationStrategy(FastMM_Balanced) == 0, "SetOptimizationStrategy(Balanced) failed");
    CHECK(FastMM_SetDebugModeOptions(default_debug_options) == 0, "SetDebugModeOptions failed");
    CHECK(FastMM_SetDebugModeStackTraceEntryCount(default_stack_depth) == 0, "SetDebugModeStackTraceEntryCount failed");
    CHECK(FastMM_ProcessAllPendingFrees() == 1, "FastMM_ProcessAllPendingFrees returned 0 with one thread");
    size_t used = walk_and_check(ALL_BLOCK_KINDS | FastMM_MediumBlockSpan, 1, "walk after freeing everything");
    CHECK(used == 0, "%zu used blocks left after the input freed every block", used);
    /* The scan checks every freed debug block kept so far, however old: after inputs that made some, and
     * now and then (blocks freed in debug mode stay in place, so it gets slower as they pile up). */
    if (debug_used || stat_inputs % 16 == 0)
        op_scan();
    debug_used = 0;
    current_op = "end of input";
    events_expect_none("end of input");
    size_t idle = FastMM_GetCurrentMemoryUsage() - refused_release_bytes;
    if (idle > stat_max_idle_usage)
        stat_max_idle_usage = idle;
}

/* ---- set-up ------------------------------------------------------------------------------------ */

static int print_stats;
static const char *last_input_path;

static void report_stats(void)
{
    fprintf(stderr,
            "fuzz_heap: %lu inputs, %lu steps, %lu bad-pointer calls, %lu OS calls refused, %lu allocations failed by "
            "them; usage now %zu (of which %zu refused back), at most %zu, at most %zu between inputs\n",
            stat_inputs, total_steps, stat_bad_pointer_tests, stat_refused, stat_failures_injected,
            FastMM_GetCurrentMemoryUsage(), refused_release_bytes, stat_max_usage, stat_max_idle_usage);
}

static void set_up(void)
{
    fm5_initialize();
    /* The usage equation (walk_and_check) counts the blocks a walk sees: regions the large-block cache
     * keeps are in none, so the cache is off here (test_large_block_cache covers it). */
    FastMM_SetLargeBlockCacheLimit(0);
    FastMM_SetLogToFileEvents(0);
    FastMM_SetOutputDebugStringEvents(0);
    FastMM_SetMessageBoxEvents(0);
    FastMM_SetEventCallback(on_event, NULL);
    default_debug_options = FastMM_GetDebugModeOptions();
    default_stack_depth = FastMM_GetDebugModeStackTraceEntryCount();
    /* FM5_DEBUG=1 in the environment would have entered debug mode: leave it, inputs start outside. */
    while (FastMM_DebugModeActive())
        FastMM_ExitDebugMode();
    print_stats = getenv("FM5_FUZZ_STATS") != NULL;
    last_input_path = getenv("FM5_FUZZ_LAST_INPUT");
    if (print_stats)
        atexit(report_stats);
}

static void save_input(const uint8_t *data, size_t size)
{
    int file = open(last_input_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (file < 0)
        return;
    while (size) {
        ssize_t written = write(file, data, size);
        if (written <= 0)
            break;
        data += written;
        size -= (size_t)written;
    }
    close(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int initialized;
    if (!initialized) {
        set_up();
        initialized = 1;
    }
    if (last_input_path)
        save_input(data, size);
    stat_inputs++;
    freed_count = freed_next = 0;
    reader r = { data, size, 0 };
    for (step_in_input = 0; r.position < r.size && step_in_input < MAX_STEPS; step_in_input++) {
        total_steps++;
        run_op(&r);
        check_all_contents();
    }
    finish_input();
    return 0;
}
