/* Which 64 KB granules belong to fm5. Each granule belongs to at most one region and is written only by
 * the thread that creates or releases that region; the bytes are read without a lock by every pointer
 * check, so each is stored and loaded whole (relaxed atomics: plain byte moves on x86). */
#include "base/address_map.h"
#include "base/os.h"
#include "base/checked.h"

/* Beside each owner byte, one more: "fm5's once, released since" (set by a removal, cleared by an
 * add). A byte, not a bit, so that each granule's flag is written with a plain store, as its owner. */
#define GRANULES_PER_LEAF ((size_t)1 << (FM5_LEAF_SHIFT - FM5_GRANULE_SHIFT))

#ifdef FM5_32BIT
uint8_t fm5_granule_owners[1u << (32 - FM5_GRANULE_SHIFT)];
static uint8_t released_flags[1u << (32 - FM5_GRANULE_SHIFT)];

static uint8_t *granule_slot(uintptr_t address)
{
    return &fm5_granule_owners[address >> FM5_GRANULE_SHIFT];
}

static uint8_t *released_byte(uintptr_t address, int create)
{
    (void)create;
    return &released_flags[address >> FM5_GRANULE_SHIFT];
}
#else
uint8_t *volatile fm5_granule_leaves[1u << (FM5_ADDRESS_BITS - FM5_LEAF_SHIFT)];

/* A leaf: GRANULES_PER_LEAF owner bytes, then as many released flags: two granules of memory. */
#define LEAF_BYTES (2 * GRANULES_PER_LEAF)

static uint8_t *leaf_of(uintptr_t address, int create)
{
    uint8_t *volatile *leaf_slot = &fm5_granule_leaves[address >> FM5_LEAF_SHIFT];
    uint8_t *leaf = fm5_atomic_load_ptr((void *volatile *)leaf_slot);
    if (!leaf && create) {
        /* The map's own memory is not charged to the usage limit: it is bookkeeping, 128 KB per 4 GB of
         * address space in use. */
        uint8_t *fresh = fm5_os_map(LEAF_BYTES, 0);
        if (!fresh)
            return NULL;
        if (fm5_cas_ptr((void *volatile *)leaf_slot, NULL, fresh)) {
            leaf = fresh;
        } else {
            fm5_os_unmap(fresh, LEAF_BYTES, 1);
            leaf = fm5_atomic_load_ptr((void *volatile *)leaf_slot);
        }
    }
    return leaf;
}

static uint8_t *granule_slot(uintptr_t address)
{
    uint8_t *leaf = leaf_of(address, 1);
    return leaf ? &leaf[(address >> FM5_GRANULE_SHIFT) & (GRANULES_PER_LEAF - 1)] : NULL;
}

static uint8_t *released_byte(uintptr_t address, int create)
{
    uint8_t *leaf = leaf_of(address, create);
    return leaf ? &leaf[GRANULES_PER_LEAF + ((address >> FM5_GRANULE_SHIFT) & (GRANULES_PER_LEAF - 1))] : NULL;
}
#endif

/* A granule's byte (address_map.h): its kind and its run, the run capped. */
FM5_INLINE uint8_t owner_byte(unsigned kind, size_t run)
{
    return (uint8_t)(kind | (run < FM5_GRANULE_RUN_LIMIT ? run : FM5_GRANULE_RUN_LIMIT) << FM5_GRANULE_RUN_SHIFT);
}

/* Marks [start, start + size): the first granule `first` with run `first_run`, then FM5_GRANULE_INSIDE
 * granules whose runs count on (all 0 when `first` is FM5_GRANULE_NOT_OURS). When a leaf cannot be
 * mapped, the granules already marked are unmarked again (their leaves exist), so that a failed add
 * leaves the map as it was. */
static int mark(uintptr_t start, size_t size, unsigned first, size_t first_run)
{
    size_t run = first_run;
    for (uintptr_t a = start; a < start + size; a += (uintptr_t)1 << FM5_GRANULE_SHIFT, run++) {
        uint8_t *slot = granule_slot(a);
        if (!slot) {
            for (uintptr_t b = start; b < a; b += (uintptr_t)1 << FM5_GRANULE_SHIFT)
                __atomic_store_n(granule_slot(b), (uint8_t)FM5_GRANULE_NOT_OURS, __ATOMIC_RELAXED);
            return 0;
        }
        uint8_t owner = first == FM5_GRANULE_NOT_OURS ? (uint8_t)FM5_GRANULE_NOT_OURS
                        : a == start                 ? owner_byte(first, run)
                                                     : owner_byte(FM5_GRANULE_INSIDE, run);
        __atomic_store_n(slot, owner, __ATOMIC_RELAXED);
        /* Its leaf exists now (granule_slot made it). Cleared only when set: most granules were never
         * released, and a read is cheaper than a store that dirties the line. */
        uint8_t *released = released_byte(a, 1);
        if (first == FM5_GRANULE_NOT_OURS)
            __atomic_store_n(released, 1, __ATOMIC_RELAXED);
        else if (__atomic_load_n(released, __ATOMIC_RELAXED))
            __atomic_store_n(released, 0, __ATOMIC_RELAXED);
    }
    return 1;
}

int fm5_address_map_was_released(uintptr_t address)
{
#ifdef FM5_64BIT
    if (address >> FM5_ADDRESS_BITS)
        return 0;
#endif
    const uint8_t *released = released_byte(address, 0);
    return released && __atomic_load_n(released, __ATOMIC_RELAXED) != 0;
}

int fm5_address_map_add(void *base, size_t size, enum fm5_granule_owner first_owner)
{
    return mark((uintptr_t)base, size, first_owner, 0);
}

int fm5_address_map_extend(void *address, size_t size)
{
    unsigned last = *granule_slot((uintptr_t)address - 1);
    FM5_ASSERT(last != FM5_GRANULE_NOT_OURS);
    return mark((uintptr_t)address, size, FM5_GRANULE_INSIDE, (last >> FM5_GRANULE_RUN_SHIFT) + 1);
}

void fm5_address_map_remove(void *base, size_t size)
{
    mark((uintptr_t)base, size, FM5_GRANULE_NOT_OURS, 0);
}
