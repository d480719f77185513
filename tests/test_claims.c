/*
 * test_claims — the sole claimer (src/blocks/claims.h): while one thread alone has freed blocks, its
 * thread cache claims them with a plain load and store; the first claim of another thread ends that
 * for good, after interrupting the sole claimer and waiting until it is outside its claim window.
 * Through fm5_static, so that it can read the claim state; on both Windows builds under Wine (the
 * NASM CACHE_PUSH and its C twin) and on the host builds, which cannot interrupt a thread and so
 * share claims from the first one.
 *
 * Asserted, run "race" (the default):
 *   - nobody is the sole claimer before the first free; the first thread to free one becomes it
 *     (Windows; the host build: claims are shared);
 *   - the sole claimer's second free of a small or a medium block fails with an event, as a
 *     compare-and-swap claim does;
 *   - the switch under fire: the sole claimer frees 200,000 small blocks of mixed sizes in a tight
 *     loop while a second thread frees the same blocks from the other end, its first free making the
 *     switch: every block is freed exactly once (one free returns 0, the other -1 with an event);
 *     claims are shared afterwards and the former sole claimer's record says so; when the second
 *     thread has ended (its cache flushed), 400,000 blocks allocated of the same sizes are all
 *     distinct and keep their patterns (no block was cached by both threads).
 * Run "window":
 *   - with the sole claimer (the main thread) made to look inside its claim window, a second thread's
 *     free turns its plain claims off at once and then waits (still waiting 300 ms later) until the
 *     window closes; then its free succeeds and claims are shared.
 * Run "killed" (Windows):
 *   - a sole claimer killed by TerminateThread inside its window is not waited for: another thread's
 *     free switches claims and succeeds.
 * Run "exit":
 *   - a thread that becomes the sole claimer and ends shares claims; the main thread's frees and
 *     double frees then behave as before.
 */
#include "test_util.h"

#include "api/startup.h"
#include "base/os.h"
#include "blocks/claims.h"
#include "blocks/thread_cache.h"

#include <string.h>

#ifdef _WIN32
#include <windows.h>
#endif

#define SEED 0xC1A135ull
#define RACE_BLOCKS 200000u
#define JOIN_TIMEOUT_MS 120000

/* The running thread's claimer record, or NULL when it has no cache. */
static fm5_claimer *own_claimer(void)
{
    fm5_thread_cache *cache = fm5_os_thread_slot_get();
    return cache ? &cache->claimer : NULL;
}

static int can_be_sole(void)
{
#ifdef _WIN32
    return 1;
#else
    return 0;
#endif
}

static void double_frees_fail(const char *what, size_t size)
{
    tu_events_reset();
    void *p = FastMM_GetMem(size);
    if (!CHECK(p != NULL))
        return;
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    if (!CHECK_EQ_INT(FastMM_FreeMem(p), -1))
        tu_info("%s: the second free of %p succeeded", what, p);
    CHECK_EQ_INT(tu_events_count(FastMM_EventDoubleFree), 1);
}

static void first_free_makes_the_sole_claimer(void)
{
    SECTION("the first thread that frees becomes the sole claimer");
    CHECK_EQ_PTR(fm5_sole_claimer, NULL);
    void *p = FastMM_GetMem(40);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    if (can_be_sole()) {
        CHECK(own_claimer() != NULL);
        CHECK_EQ_PTR(fm5_sole_claimer, own_claimer());
        CHECK_EQ_INT(own_claimer()->sole, 1);
    } else {
        CHECK_EQ_PTR(fm5_sole_claimer, FM5_CLAIMS_SHARED);
    }
    SECTION("the sole claimer's double frees fail");
    double_frees_fail("small", 40);
    double_frees_fail("small, 1,000 bytes", 1000);
    double_frees_fail("medium", 6000);
    double_frees_fail("medium again (a size now wanted: cached)", 6000);
}

/* ---- the switch under fire ------------------------------------------------------------------------ */

static void **race_blocks;
static size_t *race_sizes;
static signed char *sole_results, *other_results;
static tu_atomic_long other_ready, go;

static size_t race_size(tu_rng *rng)
{
    return 8 + (size_t)tu_rng_below(rng, 600);
}

static void other_thread(void *argument)
{
    (void)argument;
    tu_atomic_store(&other_ready, 1);
    while (!tu_atomic_load(&go))
        ;
    for (size_t i = RACE_BLOCKS; i-- > 0;)
        other_results[i] = (signed char)FastMM_FreeMem(race_blocks[i]);
}

static void switch_under_fire(void)
{
    SECTION("a second thread's first free ends the sole claimer's plain claims, mid-loop");
    race_blocks = calloc(RACE_BLOCKS, sizeof *race_blocks);
    race_sizes = calloc(RACE_BLOCKS, sizeof *race_sizes);
    sole_results = calloc(RACE_BLOCKS, 1);
    other_results = calloc(RACE_BLOCKS, 1);
    if (!CHECK(race_blocks && race_sizes && sole_results && other_results))
        tu_abort_stuck("no memory for the race's tables");
    tu_rng rng;
    tu_rng_seed(&rng, SEED);
    for (size_t i = 0; i < RACE_BLOCKS; i++) {
        race_sizes[i] = race_size(&rng);
        race_blocks[i] = FastMM_GetMem(race_sizes[i]);
        if (!race_blocks[i])
            tu_abort_stuck("GetMem failed");
    }
    fm5_claimer *sole = own_claimer();
    if (can_be_sole())
        CHECK(sole != NULL && fm5_sole_claimer == sole && sole->sole == 1);
    tu_events_reset();
    tu_thread other = tu_thread_start(other_thread, NULL, 0);
    if (!CHECK(other != NULL))
        tu_abort_stuck("no second thread");
    while (!tu_atomic_load(&other_ready))
        tu_yield();
    tu_atomic_store(&go, 1);
    for (size_t i = 0; i < RACE_BLOCKS; i++)
        sole_results[i] = (signed char)FastMM_FreeMem(race_blocks[i]);
    CHECK(tu_thread_join(other, JOIN_TIMEOUT_MS));

    size_t wrong = 0, by_sole = 0;
    for (size_t i = 0; i < RACE_BLOCKS; i++) {
        int sole_won = sole_results[i] == 0, other_won = other_results[i] == 0;
        int failures_are_errors = (sole_won || sole_results[i] == -1) && (other_won || other_results[i] == -1);
        if ((sole_won + other_won != 1 || !failures_are_errors) && wrong++ < 5)
            tu_info("block %zu (%p, %zu bytes): results %d and %d", i, race_blocks[i], race_sizes[i],
                    sole_results[i], other_results[i]);
        by_sole += sole_won;
    }
    tu_info("the sole claimer freed %zu of %u blocks, the other thread %zu", by_sole, RACE_BLOCKS,
            RACE_BLOCKS - by_sole);
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(tu_events_count(FastMM_EventDoubleFree) + tu_events_count(FastMM_EventInvalidFree), RACE_BLOCKS);
    CHECK_EQ_PTR(fm5_sole_claimer, FM5_CLAIMS_SHARED);
    if (sole)
        CHECK_EQ_INT(sole->sole, 0);

    SECTION("no block was cached by both threads");
    size_t count = 2 * RACE_BLOCKS;
    void **again = calloc(count, sizeof *again);
    if (!CHECK(again != NULL))
        tu_abort_stuck("no memory for the check");
    for (size_t i = 0; i < count; i++) {
        again[i] = FastMM_GetMem(race_sizes[i % RACE_BLOCKS]);
        if (!again[i])
            tu_abort_stuck("GetMem failed");
        tu_pattern_fill(again[i], race_sizes[i % RACE_BLOCKS], tu_pattern_key(SEED, i, 1));
    }
    size_t damaged = 0;
    for (size_t i = 0; i < count; i++)
        damaged += tu_pattern_find_mismatch(again[i], 0, race_sizes[i % RACE_BLOCKS], tu_pattern_key(SEED, i, 1)) !=
                   SIZE_MAX;
    CHECK_EQ_INT(damaged, 0);
    CHECK_EQ_INT(tu_count_duplicates(again, count), 0);
    for (size_t i = 0; i < count; i++)
        CHECK_EQ_INT(FastMM_FreeMem(again[i]), 0);
    free(again);
    free(race_blocks);
    free(race_sizes);
    free(sole_results);
    free(other_results);
}

/* ---- the wait for the window ---------------------------------------------------------------------- */

static void *volatile waiting_block;
static tu_atomic_long waiting_result = 99, waiting_done;

static void free_the_waiting_block(void *argument)
{
    (void)argument;
    tu_atomic_store(&waiting_result, FastMM_FreeMem(waiting_block));
    tu_atomic_store(&waiting_done, 1);
}

/* The sole claimer (the main thread) is made to look inside its window; a second thread's free must
 * switch its plain claims off at once and then wait until the window closes. */
static void switch_waits_for_the_window(void)
{
    SECTION("the switch waits while the sole claimer is inside its window");
    void *p = FastMM_GetMem(40);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    fm5_claimer *sole = own_claimer();
    if (!can_be_sole()) {
        CHECK_EQ_PTR(fm5_sole_claimer, FM5_CLAIMS_SHARED);
        return;
    }
    if (!CHECK(sole != NULL && fm5_sole_claimer == sole))
        return;
    waiting_block = FastMM_GetMem(48);
    sole->claiming = 1;
    tu_thread thread = tu_thread_start(free_the_waiting_block, NULL, 0);
    if (!CHECK(thread != NULL))
        tu_abort_stuck("no thread");
    unsigned long long until = tu_ms() + 10000;
    while (sole->sole && tu_ms() < until)
        tu_yield();
    CHECK_EQ_INT(sole->sole, 0);
    tu_sleep_ms(300);
    CHECK_EQ_INT(tu_atomic_load(&waiting_done), 0);
    CHECK_EQ_PTR(fm5_sole_claimer, sole);
    sole->claiming = 0;
    CHECK(tu_thread_join(thread, JOIN_TIMEOUT_MS));
    CHECK_EQ_INT(tu_atomic_load(&waiting_result), 0);
    CHECK_EQ_PTR(fm5_sole_claimer, FM5_CLAIMS_SHARED);
    double_frees_fail("small, claims shared", 40);
}

#ifdef _WIN32
/* A sole claimer killed inside its window is not waited for. */
static tu_atomic_long victim_in_window;

static DWORD WINAPI claim_then_hang(void *argument)
{
    (void)argument;
    void *p = FastMM_GetMem(40);
    FastMM_FreeMem(p);
    fm5_claimer *mine = own_claimer();
    if (mine && fm5_sole_claimer == mine) {
        mine->claiming = 1;
        tu_atomic_store(&victim_in_window, 1);
    } else {
        tu_atomic_store(&victim_in_window, -1);
    }
    for (;;)
        Sleep(1000);
    return 0;
}

static void killed_inside_the_window(void)
{
    SECTION("a sole claimer killed inside its window is not waited for");
    CHECK_EQ_PTR(fm5_sole_claimer, NULL);
    HANDLE victim = CreateThread(NULL, 0, claim_then_hang, NULL, 0, NULL);
    if (!CHECK(victim != NULL))
        return;
    unsigned long long until = tu_ms() + 10000;
    while (!tu_atomic_load(&victim_in_window) && tu_ms() < until)
        tu_yield();
    CHECK_EQ_INT(tu_atomic_load(&victim_in_window), 1);
    CHECK(TerminateThread(victim, 0));
    CHECK_EQ_INT(WaitForSingleObject(victim, 10000), WAIT_OBJECT_0);
    CloseHandle(victim);
    /* The main thread's first free: its cache's adoption switches claims, past the dead thread. */
    waiting_block = FastMM_GetMem(48);
    tu_thread thread = tu_thread_start(free_the_waiting_block, NULL, 0);
    if (!CHECK(thread != NULL))
        tu_abort_stuck("no thread");
    CHECK(tu_thread_join(thread, 30000));
    CHECK_EQ_INT(tu_atomic_load(&waiting_result), 0);
    CHECK_EQ_PTR(fm5_sole_claimer, FM5_CLAIMS_SHARED);
    double_frees_fail("small, claims shared", 40);
}
#endif

/* ---- a sole claimer that ends ------------------------------------------------------------------- */

static fm5_claimer *volatile ended_claimer;
static tu_atomic_long ended_was_sole;

static void free_one_and_end(void *argument)
{
    (void)argument;
    void *p = FastMM_GetMem(100);
    FastMM_FreeMem(p);
    ended_claimer = own_claimer();
    tu_atomic_store(&ended_was_sole, fm5_sole_claimer == own_claimer() && ended_claimer && ended_claimer->sole);
}

static void sole_claimer_ends(void)
{
    SECTION("a sole claimer that ends shares claims");
    CHECK_EQ_PTR(fm5_sole_claimer, NULL);
    tu_thread thread = tu_thread_start(free_one_and_end, NULL, 0);
    if (!CHECK(thread != NULL))
        tu_abort_stuck("no thread");
    CHECK(tu_thread_join(thread, JOIN_TIMEOUT_MS));
    CHECK_EQ_INT(tu_atomic_load(&ended_was_sole), can_be_sole());
    CHECK_EQ_PTR(fm5_sole_claimer, FM5_CLAIMS_SHARED);
    SECTION("the main thread's frees then");
    double_frees_fail("small", 72);
    double_frees_fail("medium", 9000);
    CHECK(own_claimer() == NULL || own_claimer()->sole == 0);
}

int main(int argc, char **argv)
{
    fm5_initialize();
    tu_init("test_claims");
    tu_events_install(TU_KEEP_LAST_EVENT);
    if (argc > 1 && strcmp(argv[1], "exit") == 0) {
        sole_claimer_ends();
    } else if (argc > 1 && strcmp(argv[1], "window") == 0) {
        switch_waits_for_the_window();
#ifdef _WIN32
    } else if (argc > 1 && strcmp(argv[1], "killed") == 0) {
        killed_inside_the_window();
#endif
    } else {
        first_free_makes_the_sole_claimer();
        switch_under_fire();
    }
    return test_finish();
}
