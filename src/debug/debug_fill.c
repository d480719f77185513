/* Debug fill patterns. Seed 000 (FastMM5 PR #96): from 40 user bytes up, memset is faster than stores
 * of our own by 50 to 130 % at 4 KB, while below that size its call and size dispatch cost more than
 * the few stores they replace; so small blocks keep the scalar scheme. */
#include "debug/debug_fill.h"
#include <string.h>
#include "debug/debug_block_layout.h"
#include "debug/debug_freed_object.h"

#define ALLOCATED_FILL_WORD 0x9090909090909090ull
_Static_assert((ALLOCATED_FILL_WORD & 0xFF) == FM5_DEBUG_ALLOCATED_FILL_BYTE, "word and byte agree");
_Static_assert((FM5_DEBUG_FREED_FILL_WORD & 0xFF) == FM5_DEBUG_FREED_FILL_BYTE, "word and byte agree");
_Static_assert(FM5_DEBUG_FREED_OBJECT_SLOT_SIZE == sizeof(uint64_t), "the marker slot is written as one word");

/* Only blocks below FM5_DEBUG_BULK_FILL_MINIMUM_SIZE come here, so at most 39 bytes. The odd byte, then 2
 * and 4 bytes are stored at the end, which leaves a whole number of words (at most four) from `start`;
 * 8-byte stores at negative offsets from there cover them, keeping the alignment of `start`. Written
 * out rather than as a loop, which GCC would turn back into the memset call this path exists to
 * avoid. Each memcpy copies a constant of its exact width and compiles to one move. */
_Static_assert(FM5_DEBUG_BULK_FILL_MINIMUM_SIZE <= 5 * 8, "the scalar fill stores at most four words");

static inline void fill_with_scalar_stores(uint8_t *start, size_t count, uint64_t word)
{
    uint8_t *end = start + count;
    if (count & 1) {
        end -= 1;
        memcpy(end, &word, 1);
    }
    if (count & 2) {
        end -= 2;
        memcpy(end, &word, 2);
    }
    if (count & 4) {
        end -= 4;
        memcpy(end, &word, 4);
    }
    switch (count / 8) {
    case 4:
        memcpy(end - 32, &word, 8);
        /* fall through */
    case 3:
        memcpy(end - 24, &word, 8);
        /* fall through */
    case 2:
        memcpy(end - 16, &word, 8);
        /* fall through */
    case 1:
        memcpy(end - 8, &word, 8);
        break;
    default:
        break;
    }
}

#if !FM5_BULK_FILL
/* Seed 000's baseline (FM5_BULK_FILL=OFF, a measurement build): 8-byte stores at every size, as FastMM5
 * filled before PR #96. The empty asm keeps GCC from turning the loop into the memset it stands in for. */
static void fill_with_store_loop(uint8_t *start, size_t count, uint64_t word)
{
    uint8_t *end = start + count;
    for (; (size_t)(end - start) >= FM5_DEBUG_BULK_FILL_MINIMUM_SIZE; start += 8) {
        memcpy(start, &word, 8);
        __asm__ volatile("" : "+r"(start) : : "memory");
    }
    fill_with_scalar_stores(start, (size_t)(end - start), word);
}
#endif

#if FM5_BULK_FILL
/* The allocated fill of a large area (FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE): 32 bytes per step from
 * the end down, then the scalar stores for the 0-31 bytes left at the start. */
static void fill_descending(uint8_t *start, size_t count, uint64_t word)
{
    uint8_t *end = start + count;
    while ((size_t)(end - start) >= 32) {
        end -= 32;
        memcpy(end + 24, &word, 8);
        memcpy(end + 16, &word, 8);
        memcpy(end + 8, &word, 8);
        memcpy(end, &word, 8);
    }
    fill_with_scalar_stores(start, (size_t)(end - start), word);
}
#endif

/* The choice depends on the user size, not on what is left after the marker slot, because that is the
 * size seed 000 measured the crossover at. */
static inline void fill_pattern(uint8_t *start, size_t count, size_t user_size, uint64_t word)
{
#if FM5_BULK_FILL
    if (user_size >= FM5_DEBUG_BULK_FILL_MINIMUM_SIZE)
        memset(start, (int)(word & 0xFF), count);
    else
        fill_with_scalar_stores(start, count, word);
#else
    (void)user_size;
    fill_with_store_loop(start, count, word);
#endif
}

void fm5_c_debug_fill_allocated(void *user, size_t size)
{
#if FM5_BULK_FILL
    if (size >= FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE) {
        fill_descending((uint8_t *)user, size, ALLOCATED_FILL_WORD);
        return;
    }
#endif
    fill_pattern((uint8_t *)user, size, size, ALLOCATED_FILL_WORD);
}

void fm5_c_debug_fill_freed(void *user, size_t size)
{
    uint8_t *bytes = (uint8_t *)user;
    size_t slot = 0;
    if (size >= FM5_DEBUG_FREED_OBJECT_MINIMUM_SIZE) {
        /* The marker goes into the low bytes of a fill word: on Win64 it covers the whole slot, on Win32
         * the slot's second dword keeps the fill, as FastMM5's 0x80808080 there. */
        const void *marker = fm5_freed_object_marker();
        uint64_t slot_content = FM5_DEBUG_FREED_FILL_WORD;
        memcpy(&slot_content, &marker, sizeof marker);
        memcpy(bytes, &slot_content, FM5_DEBUG_FREED_OBJECT_SLOT_SIZE);
        slot = FM5_DEBUG_FREED_OBJECT_SLOT_SIZE;
    }
    fill_pattern(bytes + slot, size - slot, size, FM5_DEBUG_FREED_FILL_WORD);
}

void fm5_c_zero_fill(void *area, size_t size)
{
    memset(area, 0, size);
}

#if !FM5_ASM
void fm5_zero_fill(void *area, size_t size) FM5_PUBLIC_NAME_OF_TWIN(fm5_c_zero_fill);
void fm5_debug_fill_allocated(void *user, size_t size) FM5_PUBLIC_NAME_OF_TWIN(fm5_c_debug_fill_allocated);
void fm5_debug_fill_freed(void *user, size_t size) FM5_PUBLIC_NAME_OF_TWIN(fm5_c_debug_fill_freed);
#endif
