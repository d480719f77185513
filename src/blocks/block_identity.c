/* Deciding what a caller's pointer is. Each test reads only memory that an earlier test proved is
 * fm5's, so a wild pointer costs a refusal, never an access violation. */
#include "blocks/block_identity.h"
#include "base/address_map.h"
#include "blocks/block_status.h"
#include "blocks/small_blocks.h"
#include "blocks/medium_blocks.h"
#include "blocks/large_blocks.h"
#include "base/memory_usage.h"


__attribute__((cold)) static enum fm5_block_identity refuse(fm5_block_facts *facts, const char *problem)
{
    facts->problem = problem;
    return FM5_NOT_A_BLOCK;
}

FM5_OPTIMISTIC_READER static enum fm5_block_identity identify_small(const void *user, unsigned status, fm5_block_facts *facts)
{
    fm5_small_span *span = fm5_small_block_span(user, status);
    if (!span)
        return refuse(facts, "not the start of a block allocated by fm5");
    facts->owner = span;
    return (status & FM5_STATUS_FREE) ? FM5_FREED_BLOCK : FM5_LIVE_SMALL_BLOCK;
}

FM5_OPTIMISTIC_READER static enum fm5_block_identity identify_medium(const void *user, unsigned status, fm5_block_facts *facts)
{
    if (!fm5_medium_block_checks_out(user))
        return refuse(facts, "not the start of a block allocated by fm5");
    if (fm5_medium_header_of(user)->is_small_block_span)
        return refuse(facts, "an internal span of small blocks, not a block handed out by fm5");
    return (status & ~FM5_STATUS_HAS_DEBUG_INFO) == FM5_STATUS_MEDIUM ? FM5_LIVE_MEDIUM_BLOCK : FM5_FREED_BLOCK;
}

FM5_OPTIMISTIC_READER static enum fm5_block_identity identify_large(const void *user, unsigned status, fm5_block_facts *facts)
{
    if (!fm5_large_block_checks_out(user))
        return refuse(facts, "not the start of a block allocated by fm5");
    return (status & ~FM5_STATUS_HAS_DEBUG_INFO) == FM5_STATUS_LARGE ? FM5_LIVE_LARGE_BLOCK : FM5_FREED_BLOCK;
}

/* A debug sub-block sits at the start of an outer block that carries HasDebugInfo. */
FM5_OPTIMISTIC_READER static enum fm5_block_identity identify_debug(const void *user, unsigned status, fm5_block_facts *facts)
{
    void *outer = (char *)user - FM5_DEBUG_SUB_BLOCK_OFFSET;
    /* The outer block must be an ordinary block: a chain of debug-looking words is not followed. */
    if (!fm5_status_word_is_ours(outer))
        return refuse(facts, "not the start of a block allocated by fm5");
    unsigned outer_status = *fm5_status_word(outer);
    if (!(outer_status & FM5_STATUS_HAS_DEBUG_INFO) ||
        (!(outer_status & FM5_STATUS_SMALL) && (outer_status & FM5_STATUS_DEBUG_SUB_BLOCK)))
        return refuse(facts, "not the start of a block allocated by fm5");
    fm5_block_facts outer_facts;
    enum fm5_block_identity outer_identity = fm5_identify_outer_block(outer, &outer_facts);
    if (outer_identity == FM5_NOT_A_BLOCK || outer_identity == FM5_LIVE_DEBUG_BLOCK ||
        !(*fm5_status_word(outer) & FM5_STATUS_HAS_DEBUG_INFO))
        return refuse(facts, "not the start of a block allocated by fm5");
    facts->owner = outer;
    facts->outer_identity = outer_identity;
    facts->outer_owner = outer_facts.owner;
    if (outer_identity == FM5_FREED_BLOCK || status & FM5_STATUS_FREE)
        return FM5_FREED_BLOCK;
    return FM5_LIVE_DEBUG_BLOCK;
}

/* Optimistic readers, as every pointer check: they read whatever an unproven pointer points at (user
 * data of a live block, memory being released) and trust none of it until the checks have proved it. */
FM5_OPTIMISTIC_READER enum fm5_block_identity fm5_identify_outer_block(const void *user, fm5_block_facts *facts)
{
    facts->owner = NULL;
    facts->problem = NULL;
    if (!user)
        return refuse(facts, "a NULL pointer");
    if ((uintptr_t)user % FM5_DEFAULT_MINIMUM_ALIGNMENT)
        return refuse(facts, "a misaligned pointer: fm5 never hands out such an address");
    /* The status word is two bytes below the pointer, in the same granule as user - 1. */
    if (!fm5_status_word_is_ours(user))
        return refuse(facts, "not in memory managed by fm5 (another heap, the stack, or a wild pointer)");
    unsigned status = *fm5_status_word(user);
    if (status & FM5_STATUS_SMALL)
        return identify_small(user, status, facts);
    if (status == FM5_STATUS_DEBUG_SUB_BLOCK || status == (FM5_STATUS_DEBUG_SUB_BLOCK | FM5_STATUS_FREE))
        return identify_debug(user, status, facts);
    switch (status & ~FM5_STATUS_HAS_DEBUG_INFO) {
    case FM5_STATUS_MEDIUM:
    case FM5_STATUS_MEDIUM | FM5_STATUS_FREE:
    case FM5_STATUS_MEDIUM | FM5_STATUS_PENDING_FREE:
    case FM5_STATUS_MEDIUM_CACHED:
        return identify_medium(user, status, facts);
    case FM5_STATUS_LARGE:
    case FM5_STATUS_LARGE | FM5_STATUS_FREE:
    case FM5_STATUS_LARGE | FM5_STATUS_PENDING_FREE:
        return identify_large(user, status, facts);
    default:
        return refuse(facts, "not the start of a block allocated by fm5");
    }
}

FM5_OPTIMISTIC_READER enum fm5_block_identity fm5_identify_block(const void *user, fm5_block_facts *facts)
{
    enum fm5_block_identity identity = fm5_identify_outer_block(user, facts);
    /* An ordinary block that carries debug information was never handed out: the program holds the
     * debug block 64 bytes into it, and only that address may free it. */
    if ((identity == FM5_FREED_BLOCK || (identity >= FM5_LIVE_SMALL_BLOCK && identity <= FM5_LIVE_LARGE_BLOCK)) &&
        (*fm5_status_word(user) & FM5_STATUS_HAS_DEBUG_INFO))
        return refuse(facts, "the start of a debug block's header, 64 bytes before the address fm5 handed out");
    return identity;
}

size_t fm5_block_usable_size_by_status(const void *user)
{
    unsigned status = *fm5_status_word(user);
    if (status & FM5_STATUS_SMALL)
        return (size_t)fm5_small_span_of(user, status)->manager->block_size - FM5_SMALL_HEADER_SIZE;
    if ((status & ~(FM5_STATUS_HAS_DEBUG_INFO | FM5_STATUS_FREE | FM5_STATUS_PENDING_FREE)) == FM5_STATUS_MEDIUM)
        return fm5_medium_block_size(user) - FM5_MEDIUM_HEADER_SIZE;
    return 0;
}

size_t fm5_live_block_usable_size(const void *user, enum fm5_block_identity identity, const fm5_block_facts *facts)
{
    switch (identity) {
    case FM5_LIVE_SMALL_BLOCK:
    case FM5_LIVE_MEDIUM_BLOCK:
        return fm5_block_usable_size_by_status(user);
    case FM5_LIVE_LARGE_BLOCK:
        return fm5_large_header_of(user)->block_size - FM5_LARGE_HEADER_SIZE;
    case FM5_LIVE_DEBUG_BLOCK: {
        fm5_block_facts outer = { facts->outer_owner, NULL, FM5_NOT_A_BLOCK, NULL };
        return fm5_live_block_usable_size(facts->owner, (enum fm5_block_identity)facts->outer_identity, &outer) -
               FM5_DEBUG_SUB_BLOCK_OFFSET;
    }
    default:
        return 0;
    }
}
