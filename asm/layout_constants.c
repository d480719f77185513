/* The layouts and constants that the NASM routines use, taken from the C headers that define them.
 * Never linked: CMake compiles this file to assembly text only (scripts/generate-asm-layout.py turns
 * each FM5_LAYOUT line into a %define in fm5_layout.inc), so the values are the compiler's own for the
 * architecture being built, and a NASM routine cannot disagree with the C twin it stands for. */
#include <stddef.h>
#include "base/platform.h"
#include "blocks/geometry.h"
#include "blocks/block_status.h"
#include "blocks/small_blocks.h"
#include "blocks/small_block_classes.h"
#include "blocks/arena_affinity.h"
#include "blocks/thread_cache.h"
#include "blocks/claims.h"
#include "base/address_map.h"
#include "blocks/realloc_rules.h"
#include "debug/debug_block_layout.h"
#include "debug/debug_fill.h"
#include "debug/debug_freed_check.h"
#include "debug/debug_freed_object.h"
#include "debug/debug_mode.h"
#include "debug/erase_modes.h"
#include "api/sharing.h"
#include "base/os.h"

/* The NASM routines scale a manager slot by a shift and test a manager address by a mask. */
_Static_assert((sizeof(fm5_small_manager) & (sizeof(fm5_small_manager) - 1)) == 0,
               "asm/ needs a power-of-two small-block manager size");
_Static_assert(sizeof(((fm5_small_manager *)0)->gate.locked) == 4, "asm/ takes and releases the lock as a dword");
_Static_assert(sizeof(((fm5_small_manager *)0)->feed) == 8 && offsetof(fm5_small_manager, feed) % 8 == 0,
               "asm/ swaps the feed as one aligned qword (cmpxchg8b on Win32)");
_Static_assert(offsetof(fm5_small_manager, partially_free) == 0 && offsetof(fm5_small_span, partially_free) == 0,
               "asm/ compares a span with its manager's address to find the end of the partially-free ring");
_Static_assert(sizeof(((fm5_small_manager *)0)->gate.pending_free_list) == FM5_POINTER_SIZE,
               "asm/ pushes on the pending-free list with a pointer-sized compare-and-swap");
/* The globals asm/ reads, at the widths it reads them. */
_Static_assert(sizeof fm5_debug_mode_active == 4, "asm/ tests debug mode as a dword");
_Static_assert(sizeof fm5_erase_allocated_active == 4 && sizeof fm5_erase_freed_active == 4,
               "asm/ tests the erase modes as dwords");
_Static_assert(sizeof fm5_using_shared_manager == 4, "asm/ tests the shared-manager switch as a dword");
_Static_assert(sizeof fm5_cpu_has_sse2 == 1, "asm/ tests SSE2 as a byte");
#ifdef FM5_32BIT
_Static_assert(sizeof fm5_granule_owners[0] == 1, "asm/ reads the address map as bytes");
#else
_Static_assert(sizeof fm5_granule_leaves[0] == 8 && sizeof *fm5_granule_leaves[0] == 1,
               "asm/ reads a leaf pointer, then a byte of the leaf");
#endif
_Static_assert(sizeof fm5_small_managers[0][0] == sizeof(fm5_small_manager), "asm/ scales slots by the manager size");
_Static_assert(sizeof(((fm5_small_manager *)0)->block_size) == 2, "asm/ reads the block size as a word");
_Static_assert(sizeof *fm5_status_word(0) == 2, "asm/ reads and writes the status word as a word");
_Static_assert(sizeof(fm5_small_lookup[0]) == 1, "asm/ reads the size-class table as bytes");
_Static_assert(sizeof(((fm5_small_span *)0)->total_blocks) == 4, "asm/ reads span counts as dwords");
_Static_assert(sizeof(((fm5_small_span *)0)->blocks_in_use) == 4, "asm/ reads span counts as dwords");
_Static_assert(sizeof fm5_small_arena_count == 4, "asm/ reads the small arena count as a dword");
_Static_assert(sizeof(((fm5_small_manager *)0)->arena) == 1 && sizeof(((fm5_small_manager *)0)->affinity_active) == 1,
               "asm/ reads a manager's arena index and affinity flag as bytes");
_Static_assert(sizeof fm5_affinity_slot_mask == 4 && sizeof(((fm5_affinity_slot *)0)->version) == 4 &&
                   sizeof(((fm5_affinity_slot *)0)->arena) == 4 && sizeof(((fm5_affinity_slot *)0)->classes[0]) == 4,
               "asm/ reads the affinity slot mask, a record's version, arena and class words as dwords");
_Static_assert(sizeof(((fm5_affinity_slot *)0)->key) == FM5_POINTER_SIZE, "asm/ compares a record's key as a pointer");
_Static_assert(sizeof(fm5_affinity_slot) == 1u << 5, "asm/ scales an affinity slot index by a shift");

_Static_assert(sizeof fm5_thread_cache_epoch == 4 && sizeof(((fm5_thread_cache *)0)->epoch) == 4,
               "asm/ compares the cache epochs as dwords");
_Static_assert(sizeof(((fm5_thread_cache_bin *)0)->room) == 2 && sizeof(((fm5_thread_cache_bin *)0)->block_size) == 2,
               "asm/ counts a bin's room and reads its block size as words");
_Static_assert(sizeof(((fm5_thread_cache *)0)->filled) == 8,
               "asm/ tests a class's bit of a cache's filled mask as a bit string from its address");
_Static_assert(offsetof(fm5_thread_cache_bin, zero) == offsetof(fm5_thread_cache_bin, limit) + 2,
               "asm/ compares a bin's room with its limit and the zero word after it as one dword");
_Static_assert(sizeof(((fm5_small_manager *)0)->gate.row_index) == 4, "asm/ reads a manager's class slot as a dword");
#ifdef FM5_WINDOWS
_Static_assert(sizeof fm5_os_thread_slot_offset == FM5_POINTER_SIZE, "asm/ reads the TEB offset of the thread slot as a pointer");
#endif

/* The operand prints as an immediate ("$24" in AT&T syntax); the generator strips the "$". The text
 * lands in the assembly output only. */
#define EMIT(name, value) __asm__ volatile("\n.ascii \"FM5_LAYOUT " #name " %0\"" : : "i"((long long)(value)))

/* ReallocMem's in-place test multiplies by the downsize factor in an lea: an index scale, or x plus a
 * scaled x. */
_Static_assert(FM5_SMALL_DOWNSIZE_FACTOR == 2 || FM5_SMALL_DOWNSIZE_FACTOR == 3 || FM5_SMALL_DOWNSIZE_FACTOR == 4 ||
                   FM5_SMALL_DOWNSIZE_FACTOR == 5 || FM5_SMALL_DOWNSIZE_FACTOR == 8 || FM5_SMALL_DOWNSIZE_FACTOR == 9,
               "asm/ multiplies by the small downsize factor with an index scale (x, or x plus a scaled x)");

void fm5_layout_constants(void);
void fm5_layout_constants(void)
{
    EMIT(POINTER_SIZE, FM5_POINTER_SIZE);

    /* Where the status word is, from the user pointer (fm5_status_word). */
    EMIT(STATUS_WORD_OFFSET, -(long long)sizeof *fm5_status_word(0));
    EMIT(STATUS_FREE, FM5_STATUS_FREE);
    EMIT(STATUS_FREE_BIT, __builtin_ctz(FM5_STATUS_FREE));
    EMIT(STATUS_HAS_DEBUG_INFO, FM5_STATUS_HAS_DEBUG_INFO);
    EMIT(STATUS_SMALL, FM5_STATUS_SMALL);
    EMIT(SMALL_OFFSET_SHIFT, FM5_SMALL_OFFSET_SHIFT);
    EMIT(SMALL_LINE_SHIFT, FM5_SMALL_LINE_SHIFT);

    EMIT(SMALL_HEADER_SIZE, FM5_SMALL_HEADER_SIZE);
    EMIT(MAXIMUM_SMALL_USER_SIZE, FM5_MAXIMUM_SMALL_USER_SIZE);
    EMIT(SMALL_GRANULARITY_SHIFT, FM5_SMALL_GRANULARITY_SHIFT);
    EMIT(DEFAULT_MINIMUM_ALIGNMENT, FM5_DEFAULT_MINIMUM_ALIGNMENT);
    EMIT(SMALL_ARENA_STRIDE, sizeof fm5_small_managers[0]);
    EMIT(SMALL_MANAGERS_SIZE, sizeof fm5_small_managers);
    EMIT(SMALL_MANAGER_SIZE, sizeof(fm5_small_manager));
    EMIT(SMALL_MANAGER_SIZE_SHIFT, __builtin_ctz(sizeof(fm5_small_manager)));

    EMIT(SPAN_NEXT_PARTIALLY_FREE, offsetof(fm5_small_span, partially_free.next));
    EMIT(SPAN_PREV_PARTIALLY_FREE, offsetof(fm5_small_span, partially_free.prev));
    EMIT(SPAN_FIRST_FREE_BLOCK, offsetof(fm5_small_span, first_free_block));
    EMIT(SPAN_MANAGER, offsetof(fm5_small_span, manager));
    EMIT(SPAN_TOTAL_BLOCKS, offsetof(fm5_small_span, total_blocks));
    EMIT(SPAN_BLOCKS_IN_USE, offsetof(fm5_small_span, blocks_in_use));
    EMIT(SPAN_IDENTITY_TAG, offsetof(fm5_small_span, identity_tag));
    EMIT(SPAN_BLOCK_SIZE, offsetof(fm5_small_span, block_size));
    EMIT(SPAN_CLASS_SLOT, offsetof(fm5_small_span, class_slot));
    EMIT(SPAN_BLOCK_SIZE_RECIPROCAL, offsetof(fm5_small_span, block_size_reciprocal));
    EMIT(SPAN_BLOCKS_BYTES, offsetof(fm5_small_span, blocks_bytes));
    EMIT(SMALL_CLASS_COUNT, FM5_SMALL_CLASS_COUNT);
    EMIT(SPAN_HEADER_SIZE, FM5_SMALL_SPAN_HEADER_SIZE);
    EMIT(SPAN_TAG_KEY, FM5_SMALL_SPAN_TAG_KEY);

    /* The manager is also its span list's sentinel: its first two fields line up with a span's. */
    EMIT(MANAGER_FIRST_PARTIALLY_FREE, offsetof(fm5_small_manager, partially_free.next));
    EMIT(MANAGER_FEED, offsetof(fm5_small_manager, feed));
    EMIT(MANAGER_FEED_SPAN, offsetof(fm5_small_manager, feed_span));
    EMIT(MANAGER_PENDING_FREE_LIST, offsetof(fm5_small_manager, gate.pending_free_list));
    EMIT(MANAGER_LOCKED, offsetof(fm5_small_manager, gate.locked));
    EMIT(MANAGER_BLOCK_SIZE, offsetof(fm5_small_manager, block_size));
    EMIT(MANAGER_BLOCK_SIZE_RECIPROCAL, offsetof(fm5_small_manager, block_size_reciprocal));
    EMIT(MANAGER_ARENA, offsetof(fm5_small_manager, arena));
    EMIT(MANAGER_AFFINITY_ACTIVE, offsetof(fm5_small_manager, affinity_active));

    /* The thread caches (blocks/thread_cache.h): a bin's fields are addressed from the cache plus the
     * class slot shifted, so each carries the bins' offset. */
    EMIT(MANAGER_ROW_INDEX, offsetof(fm5_small_manager, gate.row_index));
    EMIT(CACHE_EPOCH, offsetof(fm5_thread_cache, epoch));
    EMIT(CACHE_BIN_SHIFT, FM5_THREAD_CACHE_BIN_SHIFT);
    EMIT(CACHE_SPARSE_SHIFT, FM5_THREAD_CACHE_SPARSE_SHIFT);
    EMIT(CACHE_BIN_FIRST, offsetof(fm5_thread_cache, bins) + offsetof(fm5_thread_cache_bin, first));
    EMIT(CACHE_BIN_ROOM, offsetof(fm5_thread_cache, bins) + offsetof(fm5_thread_cache_bin, room));
    EMIT(CACHE_BIN_BLOCK_SIZE, offsetof(fm5_thread_cache, bins) + offsetof(fm5_thread_cache_bin, block_size));
    EMIT(CACHE_FILLED, offsetof(fm5_thread_cache, filled));
    EMIT(CACHE_BIN_LIMIT, offsetof(fm5_thread_cache, bins) + offsetof(fm5_thread_cache_bin, limit));
    /* The claimer record in it, and the sole claimer (blocks/claims.h). */
    EMIT(CACHE_SOLE, offsetof(fm5_thread_cache, claimer) + offsetof(fm5_claimer, sole));
    EMIT(CACHE_CLAIMING, offsetof(fm5_thread_cache, claimer) + offsetof(fm5_claimer, claiming));
    EMIT(CLAIMS_SHARED, (uintptr_t)FM5_CLAIMS_SHARED);

    /* Arena affinity's records (blocks/arena_affinity.h) and the TEB fields its key mixes (base/os.h). */
    EMIT(AFFINITY_SLOT_SHIFT, __builtin_ctz(sizeof(fm5_affinity_slot)));
    EMIT(AFFINITY_VERSION, offsetof(fm5_affinity_slot, version));
    EMIT(AFFINITY_ARENA, offsetof(fm5_affinity_slot, arena));
    EMIT(AFFINITY_KEY, offsetof(fm5_affinity_slot, key));
    EMIT(AFFINITY_CLASSES, offsetof(fm5_affinity_slot, classes));
    EMIT(AFFINITY_KEY_STACK_ROTATION, FM5_AFFINITY_KEY_STACK_ROTATION);
    EMIT(TEB_SELF, FM5_TEB_SELF_OFFSET);
    EMIT(TEB_STACK_BASE, FM5_TEB_STACK_BASE_OFFSET);
    EMIT(TEB_THREAD_ID, FM5_TEB_THREAD_ID_OFFSET);

    EMIT(GRANULE_SHIFT, FM5_GRANULE_SHIFT);
    EMIT(GRANULE_NOT_OURS, FM5_GRANULE_NOT_OURS);
    EMIT(GRANULE_RUN_SHIFT, FM5_GRANULE_RUN_SHIFT);
#ifdef FM5_64BIT
    EMIT(LEAF_SHIFT, FM5_LEAF_SHIFT);
    EMIT(ADDRESS_BITS, FM5_ADDRESS_BITS);
    EMIT(GRANULES_PER_LEAF, 1ull << (FM5_LEAF_SHIFT - FM5_GRANULE_SHIFT));
#endif

    EMIT(SMALL_DOWNSIZE_FACTOR, FM5_SMALL_DOWNSIZE_FACTOR);
    EMIT(SMALL_DOWNSIZE_CHECK_ADDER, FM5_SMALL_DOWNSIZE_CHECK_ADDER);
    EMIT(SMALL_COPY_BY_STRING_MINIMUM, FM5_SMALL_COPY_BY_STRING_MINIMUM);

    EMIT(DEBUG_ALLOCATED_FILL_BYTE, FM5_DEBUG_ALLOCATED_FILL_BYTE);
    EMIT(DEBUG_FREED_FILL_BYTE, FM5_DEBUG_FREED_FILL_BYTE);
    EMIT(DEBUG_FREED_OBJECT_MINIMUM_SIZE, FM5_DEBUG_FREED_OBJECT_MINIMUM_SIZE);
    EMIT(DEBUG_FREED_OBJECT_SLOT_SIZE, FM5_DEBUG_FREED_OBJECT_SLOT_SIZE);
    EMIT(DEBUG_BULK_FILL_MINIMUM_SIZE, FM5_DEBUG_BULK_FILL_MINIMUM_SIZE);
    EMIT(DEBUG_DESCENDING_FILL_MINIMUM_SIZE, FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE);
    EMIT(DEBUG_STRING_FILL_MINIMUM_SIZE, FM5_DEBUG_STRING_FILL_MINIMUM_SIZE);
    EMIT(DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE, FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE);
    EMIT(FREED_OBJECT_MARKER_OFFSET, offsetof(fm5_freed_object_class, virtual_methods));
}
