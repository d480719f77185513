/* What a pointer given to FreeMem, ReallocMem or a size query is, decided without touching memory that
 * fm5 does not own: the address map first, then the status word, then the owning span's bookkeeping. */
#ifndef FM5_BLOCK_IDENTITY_H
#define FM5_BLOCK_IDENTITY_H

#include "platform.h"

enum fm5_block_identity {
    FM5_NOT_A_BLOCK = 0,     /* foreign, interior, misaligned or wild */
    FM5_FREED_BLOCK,         /* a block of fm5 that is free already */
    FM5_LIVE_SMALL_BLOCK,
    FM5_LIVE_MEDIUM_BLOCK,
    FM5_LIVE_LARGE_BLOCK
};

typedef struct fm5_block_facts {
    void *owner;             /* the small-block span; unused for other kinds */
    const char *problem;     /* for FM5_NOT_A_BLOCK: why */
} fm5_block_facts;

enum fm5_block_identity fm5_identify_block(const void *user, fm5_block_facts *facts);

#endif
