/*
 * debug_layout_oracle.h — debug blocks, as fm5.h and FastMM5 lay them out.
 *
 * The tests' own reading of the layout, written from the specification rather than taken from src/
 * (nothing here includes a src/ header), so that a field that moves there shows up here as a failure:
 *     header (64 bytes, at user - 64) | user data | footer (unaligned):
 *     u32 checksum | allocation trace [N pointers] | free trace [N pointers] | u32 reserved
 */
#ifndef FM5_TEST_DEBUG_LAYOUT_ORACLE_H
#define FM5_TEST_DEBUG_LAYOUT_ORACLE_H

#include "arch.h"

#include "fm5.h"

#define TU_DEBUG_HEADER_SIZE 64u
#if TU_64BIT
#define TU_DEBUG_CHECKSUM_OFFSET 20u
#define TU_DEBUG_TICK_OFFSET 24u
#define TU_DEBUG_NUMBER_OFFSET 28u
#define TU_DEBUG_USER_SIZE_OFFSET 32u
#define TU_DEBUG_PREVIOUS_CLASS_OFFSET 40u
#else
#define TU_DEBUG_CHECKSUM_OFFSET 28u
#define TU_DEBUG_TICK_OFFSET 32u
#define TU_DEBUG_NUMBER_OFFSET 36u
#define TU_DEBUG_USER_SIZE_OFFSET 40u
#define TU_DEBUG_PREVIOUS_CLASS_OFFSET 44u
#endif
#define TU_DEBUG_GROUP_OFFSET 48u
#define TU_DEBUG_ALLOCATED_BY_OFFSET 52u
#define TU_DEBUG_FREED_BY_OFFSET 56u
#define TU_DEBUG_ENTRY_COUNT_OFFSET 61u
#define TU_DEBUG_FLAGS_OFFSET 62u

#define TU_DEBUG_IN_USE 32u /* the flags, which are also the status word before the user pointer */
#define TU_DEBUG_FREED 33u
#define TU_DEBUG_ALLOCATED_FILL 0x90u
#define TU_DEBUG_FREED_FILL 0x80u
/* A freed block at least this big gets the freed-object marker in its first pointer. */
#define TU_DEBUG_FREED_OBJECT_MINIMUM_SIZE (2u * (unsigned)sizeof(void *))
#define TU_DEBUG_DEFAULT_DEPTH 20u
#define TU_DEBUG_MAXIMUM_DEPTH 64u
#define TU_DEBUG_DEFAULT_OPTIONS (FastMM_DebugNeverFreeSmallBlockSpans | FastMM_DebugNeverMergeFreeMediumBlocks)

/* The header of the debug block whose user data starts at `user`. */
uint8_t *tu_debug_header(const void *user);

/* Header fields are read and written through memcpy: a test also points these at corrupted blocks. */
uint32_t tu_debug_header_u32(const void *user, unsigned offset);
void tu_debug_set_header_u32(void *user, unsigned offset, uint32_t v);
size_t tu_debug_user_size(const void *user);
unsigned tu_debug_entry_count(const void *user);
unsigned tu_debug_flags(const void *user);
const void *tu_debug_previous_class(const void *user);

/* The 16-bit status word fm5 keeps before every block it hands out. */
unsigned tu_status_word(const void *p);

/* A live debug block: its status word is the debug sub-block value (no other block kind has it). */
int tu_is_debug_block(const void *p);

/* 0xFFFFFFFF XOR every 32-bit word after the checksum field up to the end of the header. */
uint32_t tu_debug_expected_header_checksum(const void *user);

/* The footer, right after the user data, and its size for traces of `entries` entries. */
uint8_t *tu_debug_footer(const void *user);
size_t tu_debug_footer_size(unsigned entries);

uint32_t tu_debug_stored_footer_checksum(const void *user);

/* 0xFFFFFFFF XOR the 32-bit words of both stack traces. */
uint32_t tu_debug_expected_footer_checksum(const void *user);

/* Entry `index` of the allocation trace (free_trace 0) or the free trace (free_trace 1). */
void *tu_debug_trace_entry(const void *user, int free_trace, unsigned index);

/* Whether both stored checksums match the header and footer as they are. */
int tu_debug_checksums_match(const void *user);

/* The byte a freed block of `size` bytes must hold at `offset`, given the freed-object marker: the
 * marker's bytes in its first pointer when the block is big enough, 0x80 everywhere else (on Win32 the
 * second dword of the 8-byte slot is fill too). */
uint8_t tu_debug_freed_byte(size_t size, size_t offset, const void *marker);

/* The first offset of a freed block that does not hold the freed pattern, or SIZE_MAX. */
size_t tu_debug_freed_mismatch(const void *user, size_t size, const void *marker);

/* The largest user sizes whose debug blocks (header and footer of `depth` entries included) are still
 * small or medium blocks: a debug block's kind is the kind of the block that holds it. */
size_t tu_debug_max_small_user(unsigned depth);
size_t tu_debug_max_medium_user(unsigned depth);

#endif /* FM5_TEST_DEBUG_LAYOUT_ORACLE_H */
