/*
 * test_arena_affinity — run-time arena counts and adaptive small-block arena affinity (seed 004), in
 * fm5_static, so that the test can hold arena locks and read the affinity records.
 *
 * Usage: test_arena_affinity SLOTS SMALL_ARENAS THREADS
 *   SLOTS 1 gives the affinity table one slot, so that every thread's record collides (the seed's
 *   collision build); 256 is the shipped table. The counts and the switch come from the environment
 *   (FM5_SMALL_ARENAS, FM5_MEDIUM_ARENAS, FM5_LARGE_ARENAS, FM5_ARENA_AFFINITY), set before
 *   fm5_initialize as a program would set them before loading the DLL.
 *
 * Asserted:
 *   - the environment set the counts and the switch; FastMM_SetArenaCounts refuses a count above the
 *     maximum, and any change once fm5 holds memory, each with an event, and changes nothing then;
 *   - placement, asm and C twin alike: a thread that found every arena of a class locked gets an
 *     arena of its own (round robin from 1) and its next allocations of that class start there (a
 *     freed block of its arena is taken although arena 0 has one too), while a thread without a
 *     record starts at arena 0, and a class that met no contention keeps arena 0 for everyone; with
 *     affinity switched off, the thread starts at arena 0 again;
 *   - the collision stress: THREADS threads allocate, fill, hand over and free blocks of eight small
 *     classes while the main thread keeps locking every arena of one class after another, so that
 *     threads record and replace records all the time (in one slot with SLOTS 1); every block keeps
 *     its pattern, every record is stable afterwards (even version, arena below the count);
 *   - the validation after it, with affinity active: every small size from 1 to 2,622 bytes (and
 *     medium and large ones) holds its content through allocation, growth and shrinking, on THREADS
 *     threads at once; every small block's span belongs to an arena below the count; the walk and the
 *     allocated byte count are back at the baseline at the end.
 */
#include "test_util.h"
#include "api/asm_twins.h"
#include "api/startup.h"
#include "base/os.h"
#include "blocks/arena_affinity.h"
#include "blocks/block_status.h"
#include "blocks/small_block_classes.h"
#include "blocks/small_blocks.h"

#define SEED 0xAFF1A17ull
#define STRESS_CLASSES 8
#define LOCAL_SLOTS 64
#define EXCHANGE_SLOTS 128
#define JOIN_TIMEOUT_MS 120000

static unsigned small_arenas;
static unsigned thread_count;

static unsigned class_slot_of(size_t size)
{
    return fm5_small_lookup[(size + 1) >> FM5_SMALL_GRANULARITY_SHIFT];
}

static unsigned arena_of(void *p)
{
    return fm5_small_span_of(p, *fm5_status_word(p))->manager->arena;
}

/* Read as the allocator writes it, atomically (host-tsan). */
static int class_active(unsigned slot)
{
    return __atomic_load_n(&fm5_small_managers[0][slot].affinity_active, __ATOMIC_RELAXED) != 0;
}

static void lock_arenas(unsigned slot, unsigned except, int lock)
{
    for (unsigned a = 0; a < fm5_small_arena_count; a++) {
        if (a == except)
            continue;
        fm5_lock *l = &fm5_small_managers[a][slot].gate.locked;
        if (lock)
            fm5_lock_with_timeout(l, FM5_WAIT_FOREVER);
        else
            fm5_unlock(l);
    }
}

/* ---- settings ------------------------------------------------------------------------------------ */

static void settings(void)
{
    SECTION("settings from the environment, and the rules of FastMM_SetArenaCounts");
    unsigned s = 0, m = 0, l = 0;
    FastMM_GetArenaCounts(&s, &m, &l);
    CHECK_EQ_INT(s, small_arenas);
    CHECK_EQ_INT(m, 3);
    CHECK_EQ_INT(l, 2);
    CHECK_EQ_INT(FastMM_GetAdaptiveSmallBlockArenaAffinity(), 1);

    long before = tu_events_count(FastMM_EventInvalidArgument);
    CHECK_EQ_INT(FastMM_SetArenaCounts(FastMM_MaximumArenaCount + 1, 0, 0), -1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventInvalidArgument), before + 1);
    /* A walk holds one medium arena while a small manager may need another. */
    CHECK_EQ_INT(FastMM_SetArenaCounts(0, 1, 0), -1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventInvalidArgument), before + 2);
    FastMM_GetArenaCounts(&s, &m, &l);
    CHECK_EQ_INT(s, small_arenas);
    CHECK_EQ_INT(m, 3);
    /* Nothing allocated yet: a change is allowed, and changing back too. */
    CHECK_EQ_INT(FastMM_SetArenaCounts(0, 4, 0), 0);
    FastMM_GetArenaCounts(&s, &m, &l);
    CHECK_EQ_INT(s, small_arenas);
    CHECK_EQ_INT(m, 4);
    CHECK_EQ_INT(FastMM_SetArenaCounts(0, 3, 0), 0);

    void *p = FastMM_GetMem(100);
    CHECK(p != NULL);
    CHECK_EQ_INT(FastMM_SetArenaCounts(small_arenas + 1, 0, 0), -1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventInvalidArgument), before + 3);
    FastMM_GetArenaCounts(&s, &m, &l);
    CHECK_EQ_INT(s, small_arenas);
    CHECK_EQ_INT(m, 3);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
}

/* ---- placement ------------------------------------------------------------------------------------ */

/* The placement thread runs one command at a time from the main thread. */
enum placement_command { ALLOCATE_ASM = 1, ALLOCATE_C, QUIT };

typedef struct placement_thread {
    volatile long command;   /* set by the main thread, 0 again when done */
    tu_signal contend;
    tu_signal contended;
    size_t size;
    unsigned first_arena;
    void *volatile block;
} placement_thread;

static void placement_worker(void *argument)
{
    placement_thread *t = argument;
    tu_signal_wait(&t->contend, JOIN_TIMEOUT_MS);
    /* Every arena of the class is locked now: this waits, yielding, until the main thread unlocks. */
    t->block = FastMM_GetMem(t->size);
    t->first_arena = fm5_affinity_first_arena(class_slot_of(t->size));
    tu_signal_raise(&t->contended);
    unsigned long long start = tu_ms();
    while (tu_ms() - start < JOIN_TIMEOUT_MS) {
        long command = tu_atomic_load(&t->command);
        if (command == QUIT)
            return;
        if (command == 0) {
            tu_yield();
            continue;
        }
        t->block = command == ALLOCATE_ASM ? FastMM_GetMem(t->size) : fm5_c_get_mem(t->size);
        tu_atomic_exchange(&t->command, 0);
    }
}

/* Runs one command on the placement thread; returns its block. */
static void *placement_run(placement_thread *t, long command)
{
    tu_atomic_exchange(&t->command, command);
    unsigned long long start = tu_ms();
    while (tu_atomic_load(&t->command) != 0 && tu_ms() - start < JOIN_TIMEOUT_MS)
        tu_yield();
    CHECK_EQ_INT(tu_atomic_load(&t->command), 0);
    return t->block;
}

static void placement(void)
{
    SECTION("placement: a contended thread's own first arena, asm and C twin; arena 0 for the others");
    /* Where the managers place blocks, below the thread caches: every GetMem must reach them. */
    int caches = FastMM_SetThreadCaches(0);
    if (small_arenas < 2) {
        tu_info("one small arena: nothing to place");
        CHECK(fm5_small_arena_count == 1);
        return;
    }
    /* The largest small class: few blocks per span, so that arena 0's feed runs out soon. */
    size_t size = FM5_MAXIMUM_SMALL_USER_SIZE;
    unsigned slot = class_slot_of(size);
    CHECK_EQ_INT(class_active(slot), 0);

    placement_thread t;
    memset(&t, 0, sizeof t);
    t.size = size;
    tu_thread thread = tu_thread_start(placement_worker, &t, 0);
    size_t contention_before = FastMM_SmallBlockThreadContentionCount();
    lock_arenas(slot, ~0u, 1);
    tu_signal_raise(&t.contend);
    unsigned long long start = tu_ms();
    while (!class_active(slot) && tu_ms() - start < 20000)
        tu_sleep_ms(1);
    CHECK_MSG(class_active(slot), "the contention did not activate the class");
    /* Arena 0 alone first, so that the thread's block comes from a new span there (with every lock
     * let go at once, it would take the first arena its scan found free). */
    fm5_unlock(&fm5_small_managers[0][slot].gate.locked);
    CHECK(tu_signal_wait(&t.contended, JOIN_TIMEOUT_MS));
    lock_arenas(slot, 0, 0);
    CHECK(FastMM_SmallBlockThreadContentionCount() > contention_before);
    /* The first record of the process: round robin from 1. */
    unsigned own = t.first_arena;
    CHECK_EQ_INT(own, 1);
    CHECK(t.block != NULL);
    /* Its block came from a second pass, which starts at arena 0: new spans converge there. */
    CHECK_EQ_INT(arena_of(t.block), 0);
    /* The main thread has no record. */
    CHECK_EQ_INT(fm5_affinity_first_arena(slot), 0);

    /* Arena 0's feed used up by the main thread, every block kept: arena 0 then has neither a free
     * block nor a feed. */
    enum { KEPT = 256 };
    void *kept[KEPT];
    unsigned kept_count = 0;
    kept[kept_count++] = t.block;
    while (kept_count < KEPT && (uint32_t)fm5_load_u64(&fm5_small_managers[0][slot].feed) > FM5_SMALL_SPAN_HEADER_SIZE) {
        kept[kept_count] = FastMM_GetMem(size);
        CHECK_EQ_INT(arena_of(kept[kept_count]), 0);
        kept_count++;
    }
    CHECK((uint32_t)fm5_load_u64(&fm5_small_managers[0][slot].feed) <= FM5_SMALL_SPAN_HEADER_SIZE);
    /* A span in the thread's arena: every other arena locked, the main thread allocates there. */
    lock_arenas(slot, own, 1);
    void *in_own = FastMM_GetMem(size);
    lock_arenas(slot, own, 0);
    CHECK_EQ_INT(arena_of(in_own), own);
    /* One free block in each of arena 0 and the thread's arena. */
    CHECK_EQ_INT(FastMM_FreeMem(in_own), 0);
    CHECK_EQ_INT(FastMM_FreeMem(kept[--kept_count]), 0);

    void *asm_block = placement_run(&t, ALLOCATE_ASM);
    CHECK_EQ_PTR(asm_block, in_own);
    CHECK_EQ_INT(arena_of(asm_block), own);
    CHECK_EQ_INT(FastMM_FreeMem(asm_block), 0);
    void *c_block = placement_run(&t, ALLOCATE_C);
    CHECK_EQ_PTR(c_block, in_own);
    CHECK_EQ_INT(arena_of(c_block), own);
    /* The main thread, without a record, takes arena 0's free block. */
    void *main_block = FastMM_GetMem(size);
    CHECK_EQ_INT(arena_of(main_block), 0);
    CHECK_EQ_INT(FastMM_FreeMem(main_block), 0);
    CHECK_EQ_INT(FastMM_FreeMem(c_block), 0);

    /* Another class met no contention: arena 0 for the thread too. */
    unsigned other = class_slot_of(200);
    CHECK(other != slot);
    CHECK_EQ_INT(class_active(other), 0);

    /* Switched off: every class back to the ordinary path, the thread starts at arena 0. */
    CHECK_EQ_INT(FastMM_SetAdaptiveSmallBlockArenaAffinity(0), 1);
    CHECK_EQ_INT(class_active(slot), 0);
    void *off_block = placement_run(&t, ALLOCATE_ASM);
    CHECK_EQ_INT(arena_of(off_block), 0);
    CHECK_EQ_INT(FastMM_FreeMem(off_block), 0);
    off_block = placement_run(&t, ALLOCATE_C);
    CHECK_EQ_INT(arena_of(off_block), 0);
    CHECK_EQ_INT(FastMM_FreeMem(off_block), 0);
    CHECK_EQ_INT(FastMM_SetAdaptiveSmallBlockArenaAffinity(1), 0);
    tu_atomic_exchange(&t.command, QUIT);
    CHECK(tu_thread_join(thread, JOIN_TIMEOUT_MS));

    while (kept_count)
        CHECK_EQ_INT(FastMM_FreeMem(kept[--kept_count]), 0);
    FastMM_SetThreadCaches(caches);
}

/* ---- the collision stress ------------------------------------------------------------------------- */

/* At least the 16-byte description. */
static const size_t stress_sizes[STRESS_CLASSES] = { 16, 24, 40, 64, 100, 250, 700, 1500 };
static void *volatile exchange[EXCHANGE_SLOTS];
static tu_atomic_long stress_stop;
static tu_signal stress_start;

typedef struct live_block {
    uint8_t *p;
    size_t size;
    uint64_t key;
} live_block;

/* Blocks that travel carry their size and key in their first 16 bytes; the pattern covers the rest. */
static void describe(live_block *b)
{
    uint64_t header[2] = { b->size, b->key };
    memcpy(b->p, header, sizeof header);
    tu_pattern_fill_range(b->p, sizeof header, b->size, b->key);
}

static int intact(const live_block *b)
{
    uint64_t header[2];
    memcpy(header, b->p, sizeof header);
    return CHECK_MSG(header[0] == b->size && header[1] == b->key, "block %p lost its description", (void *)b->p) &&
           CHECK_PATTERN_RANGE(b->p, sizeof header, b->size, b->key);
}

static void stress_worker(void *argument)
{
    uint64_t id = (uint64_t)(uintptr_t)argument;
    tu_rng r;
    tu_rng_seed(&r, SEED ^ (id * 0x9E3779B97F4A7C15ull));
    live_block local[LOCAL_SLOTS];
    memset(local, 0, sizeof local);
    uint64_t generation = 0;
    tu_signal_wait(&stress_start, JOIN_TIMEOUT_MS);
    while (!tu_atomic_load(&stress_stop)) {
        live_block *b = &local[tu_rng_below(&r, LOCAL_SLOTS)];
        if (!b->p) {
            b->size = stress_sizes[tu_rng_below(&r, STRESS_CLASSES)] + tu_rng_below(&r, 8);
            b->p = tu_rng_below(&r, 2) ? FastMM_GetMem(b->size) : fm5_c_get_mem(b->size);
            if (!CHECK(b->p != NULL))
                break;
            b->key = tu_pattern_key(SEED, id, ++generation);
            describe(b);
            continue;
        }
        if (!intact(b)) {
            b->p = NULL;
            continue;
        }
        if (tu_rng_below(&r, 3) == 0) {
            /* Hand it over: what comes back was allocated by another thread. */
            uint8_t *got = tu_atomic_exchange(&exchange[tu_rng_below(&r, EXCHANGE_SLOTS)], b->p);
            b->p = NULL;
            if (got) {
                uint64_t header[2];
                memcpy(header, got, sizeof header);
                live_block received = { got, (size_t)header[0], header[1] };
                if (intact(&received))
                    *b = received;
            }
        } else {
            if (!CHECK_EQ_INT(FastMM_FreeMem(b->p), 0)) {
                char text[512];
                tu_events_last(NULL, NULL, NULL, text, sizeof text);
                tu_info("block %p of %zu bytes: %s", (void *)b->p, b->size, text);
            }
            b->p = NULL;
        }
    }
    for (unsigned i = 0; i < LOCAL_SLOTS; i++)
        if (local[i].p && intact(&local[i]))
            CHECK_EQ_INT(FastMM_FreeMem(local[i].p), 0);
}

static void collision_stress(void)
{
    SECTION("collision stress: records made and replaced while threads allocate and hand blocks over");
    tu_info("%u threads, %u small arenas, %u affinity slot(s)", thread_count, small_arenas,
            fm5_affinity_slot_mask + 1);
    tu_thread threads[64];
    for (unsigned i = 0; i < thread_count; i++)
        threads[i] = tu_thread_start(stress_worker, (void *)(uintptr_t)(i + 1), 0);
    size_t contention_before = FastMM_SmallBlockThreadContentionCount();
    tu_signal_raise(&stress_start);
    /* Every arena of one class after another locked for a moment: the threads that meet it record. */
    for (unsigned round = 0; round < 120; round++) {
        unsigned slot = class_slot_of(stress_sizes[round % STRESS_CLASSES]);
        lock_arenas(slot, ~0u, 1);
        tu_sleep_ms(3);
        lock_arenas(slot, ~0u, 0);
        tu_sleep_ms(2);
    }
    tu_atomic_exchange(&stress_stop, 1);
    CHECK_EQ_INT(tu_thread_join_all(threads, thread_count, JOIN_TIMEOUT_MS), thread_count);
    for (unsigned i = 0; i < EXCHANGE_SLOTS; i++) {
        uint8_t *p = tu_atomic_exchange(&exchange[i], NULL);
        if (p)
            CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    }
    CHECK(FastMM_SmallBlockThreadContentionCount() > contention_before);

    unsigned active = 0, records = 0;
    for (unsigned s = 0; s < FM5_SMALL_CLASS_COUNT; s++)
        active += class_active(s);
    for (unsigned i = 0; i <= fm5_affinity_slot_mask; i++) {
        const fm5_affinity_slot *record = &fm5_affinity_slots[i];
        CHECK_MSG(record->version % 2 == 0, "record %u left changing (version %u)", i, record->version);
        if (record->key) {
            records++;
            CHECK_MSG(record->arena < fm5_small_arena_count, "record %u: arena %u", i, record->arena);
        }
    }
    tu_info("%u classes active, %u records", active, records);
    CHECK(active >= 1);
    CHECK(records >= 1);
}

/* ---- validation ----------------------------------------------------------------------------------- */

static tu_atomic_long validation_failures;

static void validation_worker(void *argument)
{
    uint64_t id = (uint64_t)(uintptr_t)argument;
    enum { HELD = 96 };
    live_block held[HELD];
    unsigned count = 0;
    /* Every small size in turn, a step that differs per thread; some medium and large ones. */
    for (size_t size = 1 + id % 7; size <= FM5_MAXIMUM_SMALL_USER_SIZE + 40000; size += size < 3000 ? 7 : 9973) {
        live_block *b = &held[count % HELD];
        if (count >= HELD) {
            if (!CHECK_PATTERN(b->p, b->size, b->key))
                tu_atomic_increment(&validation_failures);
            CHECK_EQ_INT(FastMM_FreeMem(b->p), 0);
        }
        b->size = size;
        b->key = tu_pattern_key(SEED, id, size);
        b->p = FastMM_GetMem(size);
        if (!CHECK(b->p != NULL))
            return;
        if (size <= FM5_MAXIMUM_SMALL_USER_SIZE)
            CHECK_MSG(arena_of(b->p) < fm5_small_arena_count, "block of %zu bytes in arena %u", size, arena_of(b->p));
        tu_pattern_fill(b->p, size, b->key);
        /* Grow and shrink the block: its content moves with it. */
        size_t grown = size + size / 2 + 1;
        uint8_t *q = FastMM_ReallocMem(b->p, grown);
        if (!CHECK(q != NULL))
            return;
        if (!CHECK_PATTERN(q, size, b->key))
            tu_atomic_increment(&validation_failures);
        q = FastMM_ReallocMem(q, size);
        if (!CHECK(q != NULL))
            return;
        if (!CHECK_PATTERN(q, size, b->key))
            tu_atomic_increment(&validation_failures);
        b->p = q;
        count++;
    }
    for (unsigned i = 0; i < HELD && i < count; i++) {
        if (!CHECK_PATTERN(held[i].p, held[i].size, held[i].key))
            tu_atomic_increment(&validation_failures);
        CHECK_EQ_INT(FastMM_FreeMem(held[i].p), 0);
    }
}

static void validation(size_t baseline_bytes, size_t baseline_blocks)
{
    SECTION("validation after the contention, affinity active");
    tu_thread threads[64];
    for (unsigned i = 0; i < thread_count; i++)
        threads[i] = tu_thread_start(validation_worker, (void *)(uintptr_t)(i + 1), 0);
    CHECK_EQ_INT(tu_thread_join_all(threads, thread_count, JOIN_TIMEOUT_MS), thread_count);
    CHECK_EQ_INT(tu_atomic_load(&validation_failures), 0);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
}

int main(int argc, char **argv)
{
    tu_init("test_arena_affinity");
    unsigned slots = (unsigned)tu_arg_count(argc, argv, 1, FM5_AFFINITY_SLOT_COUNT);
    small_arenas = (unsigned)tu_arg_count(argc, argv, 2, 4);
    thread_count = (unsigned)tu_arg_count(argc, argv, 3, 24);
    if (!CHECK(slots == 1 || slots == FM5_AFFINITY_SLOT_COUNT) || !CHECK(thread_count <= 64) ||
        !CHECK(small_arenas >= 1 && small_arenas <= FastMM_MaximumArenaCount))
        return test_finish();
    char text[16];
    snprintf(text, sizeof text, "%u", small_arenas);
    tu_setenv("FM5_SMALL_ARENAS", text);
    tu_setenv("FM5_MEDIUM_ARENAS", "3");
    tu_setenv("FM5_LARGE_ARENAS", "2");
    tu_setenv("FM5_ARENA_AFFINITY", "1");
    fm5_affinity_slot_mask = slots - 1;
    fm5_initialize();
    tu_events_install(TU_KEEP_LAST_EVENT);

    settings();
    size_t baseline_bytes = tu_allocated_bytes();
    size_t baseline_blocks = tu_used_block_count();
    placement();
    collision_stress();
    validation(baseline_bytes, baseline_blocks);
    CHECK_EQ_INT(tu_events_total(), tu_events_count(FastMM_EventInvalidArgument));
    return test_finish();
}
