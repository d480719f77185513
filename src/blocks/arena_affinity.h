/* Adaptive small-block arena affinity (seed 004; fm5.h has the user's view): a thread that found every
 * arena of a size class locked gets a first arena of its own for that class, so that contending threads
 * stop meeting on arena 0's locks.
 *
 * State:
 * - fm5_small_managers[0][s].affinity_active: class slot s uses affinity at all. Set only while
 *   affinity is enabled, by the first thread that meets the contention on s; cleared for every class
 *   when it is disabled. The allocation paths test it in the line they read for the lock anyway, so a
 *   class that never met the contention pays one compare.
 * - the slot table: a thread's record (its key, its arena, the classes it has affinity for) in slot
 *   (thread id / 4) % slot count. Threads whose ids share a slot replace each other's records.
 *
 * Why a reader never mixes two records (a seqlock): a writer makes the slot's version odd by
 * compare-and-swap from the even value it read, writes the fields, and stores the next even value.
 * A reader reads the version, the fields, and the version again, and uses the fields only if both
 * versions are the same even value; on x86 the loads are not reordered with each other, and the C
 * reader has the fence that says so. A missing, stale or changing record, a key that is not the
 * reader's, or an arena at or above the arena count, means arena 0: affinity is a hint, never a reason
 * for a wrong block. A writer that finds the version odd gives up (the next contention retries).
 *
 * Why the key outlives thread-id reuse: it mixes the id with the stack base and the TEB's address, so a
 * new thread that inherits an old one's id, but not both of its addresses, does not match its record.
 * It is never 0 (an empty slot's key). asm/ computes the same mix (fm5_affinity_key). */
#ifndef FM5_ARENA_AFFINITY_H
#define FM5_ARENA_AFFINITY_H

#include "base/platform.h"
#include "base/os.h"
#include "blocks/small_blocks.h"

/* The seed's table size: 256 records, 8 KB, a live thread per slot before threads collide. */
#define FM5_AFFINITY_SLOT_COUNT 256u
/* Bits of class slots a record holds: every small class of either architecture. */
#define FM5_AFFINITY_CLASS_WORDS 2u
_Static_assert(FM5_SMALL_CLASS_COUNT <= 32 * FM5_AFFINITY_CLASS_WORDS, "a record has a bit per class slot");

typedef struct FM5_ALIGNED(32) fm5_affinity_slot {
    volatile uint32_t version;                          /* even: stable; odd: a writer is in it */
    volatile uint32_t arena;                            /* the owner's first arena */
    volatile uintptr_t key;                             /* the owner's fm5_affinity_key; 0: never used */
    volatile uint32_t classes[FM5_AFFINITY_CLASS_WORDS]; /* bit s % 32 of word s / 32: class slot s */
} fm5_affinity_slot;
_Static_assert(sizeof(fm5_affinity_slot) == 32, "asm/ scales a slot index by a shift of 5");

extern fm5_affinity_slot fm5_affinity_slots[FM5_AFFINITY_SLOT_COUNT];
/* Slot count - 1: 255. A test sets 0 before the first allocation, for the seed's one-slot collision
 * stress. asm/ reads it as a dword. */
extern uint32_t fm5_affinity_slot_mask;
/* FastMM_SetAdaptiveSmallBlockArenaAffinity's setting. */
extern volatile int32_t fm5_affinity_enabled;

/* The stack base is rotated by half a word before the mix, so that its high bits meet the TEB's low
 * ones; asm/ gets the amount from here. */
#define FM5_AFFINITY_KEY_STACK_ROTATION (4 * FM5_POINTER_SIZE)

FM5_INLINE uintptr_t fm5_affinity_key(fm5_os_thread_facts facts)
{
    const unsigned half = FM5_AFFINITY_KEY_STACK_ROTATION;
    uintptr_t stack = (facts.stack_base << half) | (facts.stack_base >> half);
    return (facts.self ^ stack ^ facts.id) | 1;
}

FM5_INLINE fm5_affinity_slot *fm5_affinity_slot_of(uint32_t thread_id)
{
    return &fm5_affinity_slots[(thread_id >> 2) & fm5_affinity_slot_mask];
}

/* The running thread's first arena for class slot `class_slot`: its own when its record is valid and
 * has the class, else 0. Call only where affinity_active was found set. */
unsigned fm5_affinity_first_arena(unsigned class_slot);

/* The contention that activates affinity: the running thread found every arena of class slot
 * `class_slot` locked. With affinity enabled, gives the thread a record (and an arena, round robin) if
 * it has none, adds the class to it and activates the class; returns the first arena to try next. */
unsigned fm5_affinity_after_contention(unsigned class_slot);

/* FastMM_SetAdaptiveSmallBlockArenaAffinity: returns the previous setting. Disabling deactivates
 * every class (the records stay, unused, until a class is activated again). */
int fm5_affinity_set_enabled(int enabled);

#endif
