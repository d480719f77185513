/* FastMM5's core entry points: dispatch on the size (GetMem) or on what the pointer is (FreeMem,
 * ReallocMem, size queries), and FastMM5's reallocation rules. */
#include "fm5.h"
#include "memory_manager.h"
#include "block_identity.h"
#include "small_blocks.h"
#include "medium_blocks.h"
#include "large_blocks.h"
#include "events.h"
#include "debug_mode.h"
#include "debug_blocks.h"
#include "erase_modes.h"
#include "block_status.h"
#include "realloc_rules.h"
#include "asm_twins.h"
#include <string.h>

/* GetMem without debug mode: the size picks the manager. */
FM5_INLINE void *release_get_mem(size_t size)
{
    if (FM5_LIKELY(size <= FM5_MAXIMUM_SMALL_USER_SIZE))
        return fm5_small_get_mem(size);
    if (size <= FM5_MAXIMUM_MEDIUM_USER_SIZE)
        return fm5_medium_get_mem(size);
    return fm5_large_get_mem(size);
}

void *fm5_release_get_mem(size_t size)
{
    return release_get_mem(size);
}

static FM5_NOINLINE void *get_mem_diverted(size_t size)
{
    if (fm5_debug_mode_active)
        return fm5_debug_get_mem(size, 0);
    void *p = release_get_mem(size);
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
    if (FM5_UNLIKELY(fm5_debug_mode_active | fm5_erase_allocated_active))
        return get_mem_diverted(size);
    return release_get_mem(size);
}

#if !FM5_ASM
void *FM5_CALL FastMM_GetMem(size_t size) FM5_PUBLIC_NAME_OF_TWIN(fm5_c_get_mem);
#endif

void *FM5_CALL FastMM_AllocMem(size_t size)
{
    if (FM5_UNLIKELY(fm5_debug_mode_active))
        return fm5_debug_get_mem(size, 1);
    void *p = release_get_mem(size);
    /* Large blocks come straight from VirtualAlloc, which zero-fills. */
    if (p && size <= FM5_MAXIMUM_MEDIUM_USER_SIZE)
        memset(p, 0, size);
    return p;
}

static int release_live_block(void *p, enum fm5_block_identity identity, const fm5_block_facts *facts)
{
    switch (identity) {
    case FM5_LIVE_SMALL_BLOCK:
        return fm5_small_free(p, facts->owner);
    case FM5_LIVE_MEDIUM_BLOCK:
        return fm5_medium_free(p);
    case FM5_LIVE_LARGE_BLOCK:
        return fm5_large_free(p);
    case FM5_LIVE_DEBUG_BLOCK:
        return fm5_debug_free_mem(p);
    default:
        return -1;
    }
}

/* Releases an ordinary block that fm5 itself holds (a debug block's outer block). */
int fm5_release_free_mem(void *p)
{
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_block(p, &facts);
    if (identity == FM5_LIVE_DEBUG_BLOCK || release_live_block(p, identity, &facts) != 0) {
        fm5_event_report(FastMM_EventInvalidFree, p, 0, "an internal block could not be released");
        return -1;
    }
    return 0;
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

/* The span of a live small block without debug information, proved without looking further, or NULL:
 * the fast paths of FreeMem and ReallocMem (the asm makes the same tests). */
FM5_INLINE fm5_small_span *live_small_block_span(void *p)
{
    if (FM5_UNLIKELY(!fm5_status_word_is_ours(p)))
        return NULL;
    unsigned status = *fm5_status_word(p);
    if (FM5_UNLIKELY((status & (FM5_STATUS_SMALL | FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO)) !=
                     FM5_STATUS_SMALL))
        return NULL;
    return fm5_small_block_span(p, status);
}

/* Everything but a live small block, and every failure, with its event. */
FM5_NOINLINE int fm5_c_free_mem_slow_path(void *p)
{
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_block(p, &facts);
    if (identity == FM5_LIVE_DEBUG_BLOCK)
        return fm5_debug_free_mem(p);
    if (identity >= FM5_LIVE_SMALL_BLOCK && fm5_erase_freed_active)
        memset(p, 0x80, fm5_live_block_usable_size(p, identity, &facts));
    if (FM5_LIKELY(identity >= FM5_LIVE_SMALL_BLOCK) && FM5_LIKELY(release_live_block(p, identity, &facts) == 0))
        return 0;
    if (identity == FM5_NOT_A_BLOCK)
        fm5_event_report(FastMM_EventInvalidFree, p, 0, facts.problem);
    else
        report_freed_block(FastMM_EventDoubleFree, p, &facts);
    return -1;
}

/* FastMM_FreeMem's C twin: asm/ repeats its small-block path and jumps here for everything else. */
int FM5_CALL fm5_c_free_mem(void *p)
{
    if (FM5_LIKELY(!fm5_erase_freed_active)) {
        fm5_small_span *span = live_small_block_span(p);
        if (FM5_LIKELY(span != NULL) && FM5_LIKELY(fm5_small_free(p, span) == 0))
            return 0;
    }
    return fm5_c_free_mem_slow_path(p);
}

#if !FM5_ASM
int FM5_CALL FastMM_FreeMem(void *p) FM5_PUBLIC_NAME_OF_TWIN(fm5_c_free_mem);
#endif

static size_t usable_size(void *p, enum fm5_block_identity identity, const fm5_block_facts *facts)
{
    size_t usable = fm5_live_block_usable_size(p, identity, facts);
    return identity == FM5_LIVE_DEBUG_BLOCK ? fm5_debug_maximum_user_size(p, usable) : usable;
}

/* Moves the block: the old one is released only once the new one exists. */
static void *move_block(void *p, enum fm5_block_identity identity, const fm5_block_facts *facts,
                        size_t new_size, size_t preferred_size, size_t bytes_to_copy)
{
    size_t obtained_size = preferred_size;
    void *q = release_get_mem(preferred_size);
    if (!q && preferred_size != new_size) {
        obtained_size = new_size;
        q = release_get_mem(new_size);
    }
    if (!q)
        return NULL;
    memcpy(q, p, bytes_to_copy);
    release_live_block(p, identity, facts);
    /* A large block records the size asked for, not the growth allowance. */
    if (obtained_size > FM5_MAXIMUM_MEDIUM_USER_SIZE)
        fm5_large_header_of(q)->user_size = new_size;
    return q;
}

/* A small block's reallocation by FastMM5's rules, `span` its proved span: in place (PR #98) when the
 * new size still fits and the block would not be mostly empty, else moved - upsized with room to grow. */
static void *realloc_small_block(void *p, size_t new_size, fm5_small_span *span)
{
    size_t available = (size_t)span->manager->block_size - FM5_SMALL_HEADER_SIZE;
    if (fm5_small_realloc_stays(new_size, available))
        return p;
    fm5_block_facts facts = { span, NULL, FM5_NOT_A_BLOCK, NULL };
    if (new_size <= available)
        return move_block(p, FM5_LIVE_SMALL_BLOCK, &facts, new_size, new_size, new_size);
    size_t preferred = 2 * available + FM5_SMALL_UPSIZE_ADDER;
    return move_block(p, FM5_LIVE_SMALL_BLOCK, &facts, new_size, preferred > new_size ? preferred : new_size,
                      available);
}

void *fm5_c_realloc_moving_small_block(void *p, size_t new_size)
{
    return realloc_small_block(p, new_size, fm5_small_span_of(p, *fm5_status_word(p)));
}

/* FastMM_ReallocMem's C twin; asm/ repeats the small-block test and the in-place rule, and jumps to
 * fm5_c_realloc_moving_small_block or here otherwise. */
void *FM5_CALL fm5_c_realloc_mem(void *p, size_t new_size)
{
    fm5_small_span *span = fm5_debug_mode_active ? NULL : live_small_block_span(p);
    if (FM5_LIKELY(span != NULL))
        return realloc_small_block(p, new_size, span);
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_block(p, &facts);
    if (identity < FM5_LIVE_SMALL_BLOCK) {
        if (identity == FM5_NOT_A_BLOCK)
            fm5_event_report(FastMM_EventInvalidRealloc, p, new_size, facts.problem);
        else
            report_freed_block(FastMM_EventReallocOfFreedBlock, p, &facts);
        return NULL;
    }
    if (identity == FM5_LIVE_DEBUG_BLOCK)
        return fm5_debug_realloc_mem(p, new_size);
    size_t available = usable_size(p, identity, &facts);
    if (FM5_UNLIKELY(fm5_debug_mode_active))
        return fm5_debug_realloc_ordinary(p, available, new_size);
    switch (identity) {
    case FM5_LIVE_SMALL_BLOCK:
        return realloc_small_block(p, new_size, facts.owner);
    case FM5_LIVE_MEDIUM_BLOCK:
        if (new_size <= FM5_MAXIMUM_MEDIUM_USER_SIZE && fm5_medium_resize_in_place(p, new_size))
            return p;
        break;
    default:
        if (fm5_large_resize_in_place(p, new_size))
            return p;
        break;
    }
    if (new_size > available) {
        size_t preferred = available + available / 4;
        return move_block(p, identity, &facts, new_size, preferred > new_size ? preferred : new_size, available);
    }
    return move_block(p, identity, &facts, new_size, new_size, new_size);
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

int FM5_CALL FastMM_ProcessAllPendingFrees(void)
{
    /* Small first: releasing a small block can free its span into the medium manager. */
    int small = fm5_small_process_pending_frees(0);
    int medium = fm5_medium_process_pending_frees(0);
    int large = fm5_large_process_pending_frees(0);
    return small && medium && large;
}
