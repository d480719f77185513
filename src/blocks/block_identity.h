/* What a pointer given to FreeMem, ReallocMem or a size query is, decided without touching memory that
 * fm5 does not own: the address map first, then the status word, then the owning span's bookkeeping. */
#ifndef FM5_BLOCK_IDENTITY_H
#define FM5_BLOCK_IDENTITY_H

#include "base/platform.h"
#include "base/address_map.h"
#include "blocks/small_blocks.h"
#include "blocks/medium_blocks.h"
#include "blocks/pointer_checks.h"

enum fm5_block_identity {
    FM5_NOT_A_BLOCK = 0,     /* foreign, interior, misaligned or wild */
    FM5_FREED_BLOCK,         /* a block of fm5 that is free already */
    FM5_LIVE_SMALL_BLOCK,
    FM5_LIVE_MEDIUM_BLOCK,
    FM5_LIVE_LARGE_BLOCK,
    FM5_LIVE_DEBUG_BLOCK     /* a debug sub-block; facts.owner is its outer block */
};

typedef struct fm5_block_facts {
    void *owner;             /* the small-block span, or a debug block's outer block */
    const char *problem;     /* for FM5_NOT_A_BLOCK: why */
    int outer_identity;      /* for debug blocks: what the outer block is */
    void *outer_owner;       /* for debug blocks: the outer block's owner */
} fm5_block_facts;

/* What a caller's pointer is. An ordinary block that carries debug information (a debug block's outer
 * block) is FM5_NOT_A_BLOCK here: the program never got its address. */
enum fm5_block_identity fm5_identify_block(const void *user, fm5_block_facts *facts);

/* The same without that refusal, for fm5's own look-ups of a debug block's outer block. */
enum fm5_block_identity fm5_identify_outer_block(const void *outer, fm5_block_facts *facts);

/* What the small or medium block at `user` holds, live or freed, read from its status word and medium
 * header; 0 for anything else. The caller has proved the block is fm5's (a freed debug block's outer
 * block stays committed). */
size_t fm5_block_usable_size_by_status(const void *user);

/* What a live block can hold; for a debug block, what its outer block can hold for the sub-block. */
size_t fm5_live_block_usable_size(const void *user, enum fm5_block_identity identity, const fm5_block_facts *facts);

#endif
