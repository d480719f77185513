/* FastMM5's core entry points: the release engine (blocks/release_engine.h) unless debug mode or an
 * erase mode is on, debug blocks to debug mode, another module's manager once fm5 uses it
 * (api/sharing.h), and every refusal reported as an event. */
#include "fm5.h"
#include "api/asm_twins.h"
#include "api/sharing.h"
#include "blocks/release_engine.h"
#include "blocks/block_identity.h"
#include "blocks/block_status.h"
#include "blocks/large_blocks.h"
#include "base/events.h"
#include "debug/debug_mode.h"
#include "debug/debug_blocks.h"
#include "debug/erase_modes.h"
#include <string.h>

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

/* FastMM_GetMem's C twin; asm/ has the small-block fast path in front of it. */
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
    void *p = fm5_release_get_mem_inline(size);
    /* A large block is a fresh OS mapping, zero-filled, unless it came from the cache. */
    if (p && (size <= FM5_MAXIMUM_MEDIUM_USER_SIZE || fm5_large_header_of(p)->recycled))
        memset(p, 0, size);
    return p;
}

/* A freed block: with its history when it was a debug block whose outer block is still readable. */
static void report_freed_block(int kind, void *p, const fm5_block_facts *facts)
{
    if (*fm5_status_word(p) == (FM5_STATUS_DEBUG_SUB_BLOCK | FM5_STATUS_FREE) && facts->owner &&
        facts->outer_identity == FM5_FREED_BLOCK)
        fm5_debug_report_freed_block_misuse(kind, p);
    else
        fm5_event_report(kind, p, 0, "the block is already free");
}

/* Everything but a live small block, and every failure, with its event. */
FM5_NOINLINE int fm5_c_free_mem_slow_path(void *p)
{
    if (FM5_LIKELY(!fm5_erase_freed_active) && fm5_release_is_live_medium_block(p)) {
        if (FM5_LIKELY(fm5_medium_free(p) == 0))
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
        if (FM5_LIKELY(span != NULL) && FM5_LIKELY(fm5_small_free(p, span) == 0))
            return 0;
    }
    return fm5_c_free_mem_slow_path(p);
}

#if !FM5_ASM
int FM5_CALL FastMM_FreeMem(void *p) FM5_PUBLIC_NAME_OF_TWIN(fm5_c_free_mem);
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

/* FastMM_ReallocMem's C twin; asm/ repeats the small-block test and the in-place rule, and jumps to
 * fm5_c_realloc_moving_small_block or here otherwise. */
FM5_OPTIMISTIC_READER void *FM5_CALL fm5_c_realloc_mem(void *p, size_t new_size)
{
    if (FM5_LIKELY(!fm5_debug_mode_is_active())) {
        fm5_small_span *span = fm5_release_live_small_block_span(p);
        if (FM5_LIKELY(span != NULL))
            return fm5_release_realloc_small_block(p, new_size, span);
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

/* Also the trim: the regions the large-block cache holds go back to the OS. */
int FM5_CALL FastMM_ProcessAllPendingFrees(void)
{
    int complete = fm5_release_process_pending_frees();
    fm5_large_cache_release_all();
    return complete;
}
