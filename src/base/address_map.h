/* Which 64 KB granules of the address space belong to fm5. Checked before any pointer from a caller is
 * dereferenced, so foreign heap pointers, stack addresses and wild pointers are rejected without reading
 * memory fm5 does not own. One byte per granule, in leaves of 4 GB created on demand.
 *
 * A granule's byte: 0 when it is not fm5's; else its kind in the low two bits and, above them, how many
 * granules of the same region come before it (its run, at most FM5_GRANULE_RUN_LIMIT). A region's first
 * granule has run 0, so its byte is its kind alone. The run lets a check that has proved one granule
 * read the memory before it, up to the run, without another look-up (fm5_granule_run_start): a small
 * span's header lies up to FM5_SMALL_MAXIMUM_SPAN_REACH before its blocks, often in the granule before. */
#ifndef FM5_ADDRESS_MAP_H
#define FM5_ADDRESS_MAP_H

#include "base/platform.h"

enum fm5_granule_owner {
    FM5_GRANULE_NOT_OURS = 0,
    FM5_GRANULE_INSIDE = 1,       /* any granule of an fm5 region other than its first */
    FM5_GRANULE_MEDIUM_SPAN = 2,  /* the first granule of a medium-block span */
    FM5_GRANULE_LARGE_BLOCK = 3   /* the first granule of a large block */
};

#define FM5_GRANULE_SHIFT 16
#define FM5_LEAF_SHIFT 32
#define FM5_GRANULE_KIND_MASK 3u
#define FM5_GRANULE_RUN_SHIFT 2
/* The largest run a byte holds: a longer one is recorded as this, which only shortens what it proves. */
#define FM5_GRANULE_RUN_LIMIT 63u

#ifdef FM5_32BIT
extern uint8_t fm5_granule_owners[1u << (32 - FM5_GRANULE_SHIFT)];

FM5_INLINE unsigned fm5_granule_owner(uintptr_t address)
{
    return __atomic_load_n(&fm5_granule_owners[address >> FM5_GRANULE_SHIFT], __ATOMIC_RELAXED);
}
#else
/* 47 bits of user address space: 2^15 leaves of 2^16 granules. */
#define FM5_ADDRESS_BITS 47
extern uint8_t *volatile fm5_granule_leaves[1u << (FM5_ADDRESS_BITS - FM5_LEAF_SHIFT)];

FM5_INLINE unsigned fm5_granule_owner(uintptr_t address)
{
    if (FM5_UNLIKELY(address >> FM5_ADDRESS_BITS))
        return FM5_GRANULE_NOT_OURS;
    const uint8_t *leaf = fm5_atomic_load_ptr((void *volatile *)&fm5_granule_leaves[address >> FM5_LEAF_SHIFT]);
    if (FM5_UNLIKELY(!leaf))
        return FM5_GRANULE_NOT_OURS;
    return __atomic_load_n(&leaf[(address >> FM5_GRANULE_SHIFT) & 0xFFFF], __ATOMIC_RELAXED);
}
#endif

/* The lowest address of the memory proved fm5's, mapped and of one region, that ends with the granule
 * of `address`, given that granule's byte `owner` (not FM5_GRANULE_NOT_OURS): its start less its run. */
FM5_INLINE uintptr_t fm5_granule_run_start(uintptr_t address, unsigned owner)
{
    uintptr_t granule = address >> FM5_GRANULE_SHIFT;
    return (granule - (owner >> FM5_GRANULE_RUN_SHIFT)) << FM5_GRANULE_SHIFT;
}

/* Records a region (64 KB aligned, a multiple of 64 KB long); `first_owner` describes its first granule.
 * Returns 0 only if the map itself could not get memory. */
int fm5_address_map_add(void *base, size_t size, enum fm5_granule_owner first_owner);
/* Extends a region by granules that are never its first, just after the region's last granule (their
 * runs go on from its). */
int fm5_address_map_extend(void *address, size_t size);
void fm5_address_map_remove(void *base, size_t size);
/* Whether the granule of `address` belonged to fm5 and was released since (and not mapped by fm5
 * again): the release guard (base/os.h) asks it about the address of a fault. */
int fm5_address_map_was_released(uintptr_t address);

#endif
