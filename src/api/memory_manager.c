/* FastMM5's core entry points: the release engine (blocks/release_engine.h) unless debug mode or an
 * erase mode is on, debug blocks to debug mode, another module's manager once fm5 uses it
 * (api/sharing.h), and every refusal reported as an event. */
#include "fm5.h"
#include "api/asm_twins.h"
#include "api/sharing.h"
#include "blocks/release_engine.h"
#include "blocks/block_identity.h"
#include "blocks/block_status.h"
#include "blocks/realloc_rules.h"
#include "blocks/small_blocks.h"
#include "blocks/large_blocks.h"
#include "blocks/medium_blocks.h"
#include "base/events.h"
#include "base/os.h"
#include "debug/debug_mode.h"
#include "debug/debug_blocks.h"
#include "debug/erase_modes.h"
#include <string.h>
#if defined(__i386__) && !defined(__SSE2__)
#include <emmintrin.h>
#endif

static FM5_NOINLINE void *get_mem_diverted(size_t size)
{
    if (fm5_using_shared_manager)
        return fm5_shared_get_mem(size);
    if (fm5_debug_mode_is_active())
        return fm5_debug_get_mem(size, 0);
    void *p = fm5_release_get_mem_inline(size);
    if (p && fm5_erase_allocated_active) {
        fm5_block_facts facts;
        enum fm5_block_identity identity = fm5_identify_block(p, &facts);
        memset(p, 0x90, fm5_live_block_usable_size(p, identity, &facts));
    }
    return p;
}

/* FastMM_GetMem's C twin; asm/ has the small-block fast path in front of it. The asm tests these modes
 * only off a cache's pop, since each holds the caches' epoch even (blocks/thread_cache.h): the same
 * decision as testing them first. */
void *FM5_CALL fm5_c_get_mem(size_t size)
{
    if (FM5_UNLIKELY(fm5_debug_mode_is_active() | fm5_erase_allocated_active | fm5_using_shared_manager))
        return get_mem_diverted(size);
    return fm5_release_get_mem_inline(size);
}

#if !FM5_ASM
void *FM5_CALL FastMM_GetMem(size_t size) FM5_PUBLIC_NAME_OF_TWIN(fm5_c_get_mem);
#endif

void *FM5_CALL FastMM_AllocMem(size_t size)
{
    if (FM5_UNLIKELY(fm5_using_shared_manager))
        return fm5_shared_alloc_mem(size);
    if (FM5_UNLIKELY(fm5_debug_mode_is_active()))
        return fm5_debug_get_mem(size, 1);
    /* A block whose bytes are the OS's zeros still gets one store per 4 KB page: under Wine (Linux) a
     * page read before it is written maps the shared zero page, and the first write then faults a
     * second time; allocmem reads its blocks first, and ran 19-22 % slower at scale 0.1 without the
     * stores. With them, against zeroing every block (2-core Xeon, 2026-12-05): scale 0.1, 21 pairs,
     * Win64 +0.7 % [-0.3, +2.4], Win32 +5.8 % [+4.8, +9.2]; scale 1, 11 pairs, +1.5 % [-0.3, +4.1] and
     * +2.5 % [+1.1, +6.2]. A fresh large mapping gets none, as before. */
    int zeroed;
    void *p = fm5_release_get_mem_noting_zero(size, &zeroed);
    if (p && !zeroed)
        fm5_zero_fill(p, size);
    else if (p && size <= FM5_MAXIMUM_MEDIUM_USER_SIZE)
        for (size_t page = 0; page < size; page += FM5_OS_PAGE_SIZE)
            ((volatile char *)p)[page] = 0;
    return p;
}

/* A freed block: with its history when it was a debug block whose outer block is still readable. */
static void report_freed_block(int kind, void *p, const fm5_block_facts *facts)
{
    if (fm5_status_load(p) == (FM5_STATUS_DEBUG_SUB_BLOCK | FM5_STATUS_FREE) && facts->owner &&
        facts->outer_identity == FM5_FREED_BLOCK)
        fm5_debug_report_freed_block_misuse(kind, p);
    else
        fm5_event_report(kind, p, 0, "the block is already free");
}

/* Everything but a live small block, and every failure, with its event. An optimistic reader, as the
 * twin that calls it: its medium test reads what an unproven pointer points at. */
FM5_OPTIMISTIC_READER FM5_NOINLINE int fm5_c_free_mem_slow_path(void *p)
{
    if (FM5_LIKELY(!fm5_erase_freed_active) && fm5_release_is_live_medium_block(p)) {
        /* Once fm5 uses another module's manager, nothing would take a cached block again. */
        if (FM5_LIKELY((fm5_using_shared_manager ? fm5_medium_free(p) : fm5_thread_cache_free_medium(p)) == 0))
            return 0;
        /* Another thread freed it between the test and the lock. */
        fm5_event_report(FastMM_EventDoubleFree, p, 0, "the block is already free");
        return -1;
    }
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_block(p, &facts);
    if (identity == FM5_LIVE_DEBUG_BLOCK)
        return fm5_debug_free_mem(p);
    if (identity >= FM5_LIVE_SMALL_BLOCK && fm5_erase_freed_active)
        memset(p, 0x80, fm5_live_block_usable_size(p, identity, &facts));
    if (FM5_LIKELY(identity >= FM5_LIVE_SMALL_BLOCK) && FM5_LIKELY(fm5_release_free_block(p, identity, &facts) == 0))
        return 0;
    if (identity == FM5_NOT_A_BLOCK && fm5_using_shared_manager)
        return fm5_shared_free_mem(p);
    if (identity == FM5_NOT_A_BLOCK)
        fm5_event_report(FastMM_EventInvalidFree, p, 0, facts.problem);
    else
        report_freed_block(FastMM_EventDoubleFree, p, &facts);
    return -1;
}

/* FastMM_FreeMem's C twin: asm/ repeats its small-block path and jumps here for everything else. An
 * optimistic reader: its pointer check reads what an unproven pointer points at (block_identity.c). */
FM5_OPTIMISTIC_READER int FM5_CALL fm5_c_free_mem(void *p)
{
    if (FM5_LIKELY(!fm5_erase_freed_active)) {
        fm5_small_span *span = fm5_release_live_small_block_span(p);
        if (FM5_LIKELY(span != NULL) && FM5_LIKELY(fm5_thread_cache_free(p, span) == 0))
            return 0;
    }
    return fm5_c_free_mem_slow_path(p);
}

/* The proof is not made again, but the status word is read again: a block that another thread freed
 * since (a program's bug) may have emptied its span and the span's region gone back to the OS, and a
 * read there meets the release guard's tombstone (base/os.h), zeros, which the claim's compare-and-swap
 * would take for the status it read. So anything but a live small block's status goes to FreeMem's own
 * code from scratch, which reports it. */
int fm5_c_free_proved_small_block(void *p, fm5_small_span *span, struct fm5_small_manager *manager)
{
    (void)manager; /* the asm's managers' free uses it; the twin's slow path finds it again */
    if (FM5_UNLIKELY(fm5_erase_freed_active) || FM5_UNLIKELY(!fm5_status_is_live_small(fm5_status_load(p))))
        return fm5_c_free_mem(p);
    if (FM5_LIKELY(fm5_thread_cache_free(p, span) == 0))
        return 0;
    return fm5_c_free_mem_slow_path(p);
}

#if !FM5_ASM
int FM5_CALL FastMM_FreeMem(void *p) FM5_PUBLIC_NAME_OF_TWIN(fm5_c_free_mem);
int fm5_free_proved_small_block(void *p, fm5_small_span *span, struct fm5_small_manager *manager)
    FM5_PUBLIC_NAME_OF_TWIN(fm5_c_free_proved_small_block);
#endif

/* What the program may write to. A debug block's footer follows its requested size at once, so for
 * a debug block that is all it may use, as FastMM5 answers: a caller that writes up to the usable
 * size (Free Pascal's SetLength, a CRT's _msize) must not reach the footer. */
static size_t usable_size(void *p, enum fm5_block_identity identity, const fm5_block_facts *facts)
{
    if (identity == FM5_LIVE_DEBUG_BLOCK)
        return fm5_debug_current_user_size(p);
    return fm5_live_block_usable_size(p, identity, facts);
}

#if defined(__i386__) && !defined(__SSE2__)
/* Win32's C is built for any i686, SSE2 or not (fm5_cpu_has_sse2 decides at run time): there a
 * 16-byte unit is four 4-byte moves, and the loop spills a register besides. With SSE2 a unit is
 * one load and one store; the units are those of copy_small_block, n >= 16. */
__attribute__((target("sse2"))) static void copy_small_block_sse2(char *to, const char *from, size_t n)
{
    for (size_t i = 0; i + 16 < n; i += 16)
        _mm_storeu_si128((__m128i *)(to + i), _mm_loadu_si128((const __m128i *)(from + i)));
    _mm_storeu_si128((__m128i *)(to + n - 16), _mm_loadu_si128((const __m128i *)(from + n - 16)));
}
#endif

/* memcpy for the few bytes of a small block (at most FM5_MAXIMUM_SMALL_USER_SIZE), inline: the CRT's
 * memcpy is a call into another DLL (Wine's msvcrt under Wine). 16 bytes at a time, the last unit
 * overlapping the one before, or `rep movsb` from FM5_SMALL_COPY_BY_STRING_MINIMUM bytes on a processor
 * with fast strings (realloc_rules.h); never a byte outside [0, n) of either block, since the next
 * block's status word may follow at once. */
FM5_INLINE void copy_small_block(char *to, const char *from, size_t n)
{
#if defined(__i386__) || defined(__x86_64__)
    if (n >= FM5_SMALL_COPY_BY_STRING_MINIMUM && fm5_cpu_has_fast_strings) {
        __asm__ volatile("rep movsb" : "+D"(to), "+S"(from), "+c"(n) : : "memory");
        return;
    }
#endif
#if defined(__i386__) && !defined(__SSE2__)
    if (n >= 64 && fm5_cpu_has_sse2) {
        copy_small_block_sse2(to, from, n);
        return;
    }
#endif
    if (n >= 16) {
        size_t i = 0;
        for (; i + 16 < n; i += 16)
            __builtin_memcpy(to + i, from + i, 16);
        __builtin_memcpy(to + n - 16, from + n - 16, 16);
    } else if (n >= 8) {
        __builtin_memcpy(to, from, 8);
        __builtin_memcpy(to + n - 8, from + n - 8, 8);
    } else if (n >= 4) {
        __builtin_memcpy(to, from, 4);
        __builtin_memcpy(to + n - 4, from + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            to[i] = from[i];
    }
}

/* A live small block outside debug mode that does not stay in place: a new block of the new size
 * (realloc_rules.h) from `get_mem`, the copy, then `free_proved` of the old one, as a program would do
 * it but for the second proof of the old block that FreeMem would make (its caller has proved it). The
 * entry points' fast paths serve both halves, where the release engine's mover (for the erase modes,
 * which ReallocMem does not apply, fm5.h) would take the C managers' slower first passes. Measured
 * against FreeMem of the old block (15 pairs at scale 0.5 on the 2-core Xeon, 2026-12-04): Win64
 * realloc_small +6.2 % [+0.3, +16.5], st_tiny_realloc +6.4 % [+3.1, +15.0]; Win32 +8.2 % [-0.1, +19.4]
 * and +5.8 % [+3.1, +7.1]. */
FM5_INLINE void *move_small_block(void *p, size_t new_size, void *(FM5_CALL *get_mem)(size_t),
                                  int (*free_proved)(void *, fm5_small_span *, struct fm5_small_manager *))
{
    fm5_small_span *span = fm5_small_span_of(p, *fm5_status_word(p));
    if (FM5_UNLIKELY(fm5_erase_allocated_active | fm5_erase_freed_active | fm5_using_shared_manager))
        return fm5_release_realloc_small_block(p, new_size, span);
    size_t usable = (size_t)span->block_size - FM5_SMALL_HEADER_SIZE;
    void *q = get_mem(new_size);
    if (FM5_UNLIKELY(!q))
        return NULL;
    copy_small_block(q, p, new_size < usable ? new_size : usable);
    free_proved(p, span, span->manager);
    return q;
}

/* The asm ReallocMem's mover: through GetMem's public entry and the proved free, the NASM fast paths in
 * those builds. */
void *fm5_c_realloc_moving_small_block(void *p, size_t new_size)
{
    return move_small_block(p, new_size, FastMM_GetMem, fm5_free_proved_small_block);
}

/* The asm ReallocMem's own move (both architectures), when the old block's bin refuses it after the
 * new block was taken and filled: FreeMem of the old block, which proves it again (a lost claim may
 * have released its span), and the new block for the caller. */
void *fm5_c_free_moved_small_block(void *old_block, void *new_block)
{
    FastMM_FreeMem(old_block);
    return new_block;
}

/* FastMM_ReallocMem's C twin; asm/ repeats the small-block test and the in-place rule, and jumps to
 * fm5_c_realloc_moving_small_block or here otherwise. */
FM5_OPTIMISTIC_READER void *FM5_CALL fm5_c_realloc_mem(void *p, size_t new_size)
{
    if (FM5_LIKELY(!fm5_debug_mode_is_active())) {
        fm5_small_span *span = fm5_release_live_small_block_span(p);
        if (FM5_LIKELY(span != NULL)) {
            /* The asm's tests and mover, with the C twins of GetMem and FreeMem. */
            if (fm5_small_realloc_stays(new_size, (size_t)span->block_size - FM5_SMALL_HEADER_SIZE))
                return p;
            return move_small_block(p, new_size, fm5_c_get_mem, fm5_c_free_proved_small_block);
        }
        if (fm5_release_is_live_medium_block(p)) {
            /* Proved as fm5_identify_block would; a medium block's resizing needs no facts. */
            fm5_block_facts facts = { NULL, NULL, FM5_NOT_A_BLOCK, NULL };
            return fm5_release_realloc_block(p, FM5_LIVE_MEDIUM_BLOCK, &facts, new_size);
        }
    }
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_block(p, &facts);
    if (identity < FM5_LIVE_SMALL_BLOCK) {
        if (identity == FM5_NOT_A_BLOCK && fm5_using_shared_manager)
            return fm5_shared_realloc_mem(p, new_size);
        if (identity == FM5_NOT_A_BLOCK)
            fm5_event_report(FastMM_EventInvalidRealloc, p, new_size, facts.problem);
        else
            report_freed_block(FastMM_EventReallocOfFreedBlock, p, &facts);
        return NULL;
    }
    if (identity == FM5_LIVE_DEBUG_BLOCK)
        return fm5_debug_realloc_mem(p, new_size);
    if (FM5_UNLIKELY(fm5_debug_mode_is_active()))
        return fm5_debug_realloc_ordinary(p, usable_size(p, identity, &facts), new_size);
    return fm5_release_realloc_block(p, identity, &facts, new_size);
}

#if !FM5_ASM
void *FM5_CALL FastMM_ReallocMem(void *p, size_t new_size) FM5_PUBLIC_NAME_OF_TWIN(fm5_c_realloc_mem);
#endif

size_t FM5_CALL FastMM_BlockMaximumUserBytes(void *p)
{
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_block(p, &facts);
    if (identity < FM5_LIVE_SMALL_BLOCK) {
        fm5_event_report(FastMM_EventInvalidQuery, p, 0,
                         identity == FM5_NOT_A_BLOCK ? facts.problem : "the block is already free");
        return 0;
    }
    return usable_size(p, identity, &facts);
}

size_t FM5_CALL FastMM_BlockCurrentUserBytes(void *p)
{
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_block(p, &facts);
    if (identity == FM5_LIVE_LARGE_BLOCK)
        return fm5_large_header_of(p)->user_size;
    if (identity == FM5_LIVE_DEBUG_BLOCK)
        return fm5_debug_current_user_size(p);
    return FastMM_BlockMaximumUserBytes(p);
}

_Static_assert(FM5_MEDIUM_KEPT_SPAN_BYTES == FastMM_KeptMediumSpanBytes, "fm5.h states the medium blocks' bound");

/* Also the trim: the kept empty medium spans and the regions the large-block cache holds go back to
 * the OS. */
int FM5_CALL FastMM_ProcessAllPendingFrees(void)
{
    /* The thread caches first, so that what they give back to busy managers is drained below. */
    fm5_thread_cache_flush_current();
    fm5_thread_cache_request_flush();
    fm5_thread_cache_flush_ended_threads();
    int complete = fm5_release_process_pending_frees();
    complete &= fm5_medium_release_kept_spans(0);
    fm5_large_cache_release_all();
    return complete;
}
