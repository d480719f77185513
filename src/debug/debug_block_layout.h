/* The layout of a debug block, defined once: the NASM routines get their offsets generated from this
 * file, so a field moves here or nowhere.
 *
 * A debug block lives inside an ordinary fm5 block (the outer block, which carries HasDebugInfo):
 *
 *     outer user pointer -> | header, 64 bytes | user data, user_size bytes | footer (unaligned) |
 *                                              ^ the pointer the program sees
 *
 * The header's last word is the user block's status word (32 in use, 33 freed), so FreeMem and
 * ReallocMem recognise a debug block by the same test that dispatches every other kind. */
#ifndef FM5_DEBUG_BLOCK_H
#define FM5_DEBUG_BLOCK_H

#include <string.h>
#include "base/platform.h"
#include "blocks/block_status.h"

#define FM5_DEBUG_HEADER_SIZE FM5_DEBUG_SUB_BLOCK_OFFSET
#define FM5_DEBUG_MAXIMUM_STACK_TRACE_ENTRIES 64u

/* Fill bytes: a pointer read from either pattern is 0x8080... or 0x9090..., outside every Win64 user
 * address; on Win32 debug mode is to reserve the 64 KB at 0x80800000 and 0x90900000 without access (as
 * FastMM5 does) so that such a pointer faults there too. */
#define FM5_DEBUG_ALLOCATED_FILL_BYTE 0x90u
#define FM5_DEBUG_FREED_FILL_BYTE 0x80u
#define FM5_DEBUG_FREED_FILL_WORD 0x8080808080808080ull

#define FM5_DEBUG_BLOCK_IN_USE 32u
#define FM5_DEBUG_BLOCK_FREED 33u
_Static_assert(FM5_DEBUG_BLOCK_IN_USE == FM5_STATUS_DEBUG_SUB_BLOCK, "the flags are the status word");
_Static_assert(FM5_DEBUG_BLOCK_FREED == (FM5_STATUS_DEBUG_SUB_BLOCK | FM5_STATUS_FREE),
               "a freed debug block carries the free bit like any other freed block");

/* The smallest Delphi object is two pointers (class and monitor): a freed block smaller than that can
 * never have held an object whose virtual methods the program might still call, so it gets no marker.
 * The marker slot is 8 bytes on both architectures (on Win32 the second dword holds the fill) so that
 * the pattern after it starts 8-byte aligned. */
#define FM5_DEBUG_FREED_OBJECT_MINIMUM_SIZE (2u * FM5_POINTER_SIZE)
#define FM5_DEBUG_FREED_OBJECT_SLOT_SIZE 8u

/* Natural alignment already leaves no padding anywhere in this struct (the offsets asserted below are
 * exactly FastMM5's packed layout), so it is not declared packed: its members stay aligned, and their
 * addresses may be taken. */
typedef struct fm5_debug_block_header {
    /* The outer block's free-list links are written over the start of the header when it is freed; the
     * checksum leaves these words out. */
    void *reserved_free_list_link;
    void *reserved_second_link;
#ifdef FM5_32BIT
    uint8_t reserved_space[20];
#else
    uint8_t reserved_space[4];
#endif
    uint32_t header_checksum;
    uint32_t allocation_tick_count;
    uint32_t allocation_number;
    size_t user_size;
    /* The first pointer of the user data when the block was freed: for an object, its class. */
    const void *previously_used_by_class;
    uint32_t allocation_group;
    uint32_t allocated_by_thread;
    uint32_t freed_by_thread;
    uint8_t reserved_byte;
    uint8_t stack_trace_entry_count;
    uint16_t flags;
} fm5_debug_block_header;

#ifdef FM5_32BIT
#  define FM5_DEBUG_EXPECTED_OFFSET(win32, win64) (win32)
#else
#  define FM5_DEBUG_EXPECTED_OFFSET(win32, win64) (win64)
#endif
#define FM5_DEBUG_ASSERT_OFFSET(field, win32, win64)                                                  \
    _Static_assert(offsetof(fm5_debug_block_header, field) == FM5_DEBUG_EXPECTED_OFFSET(win32, win64), \
                   "debug block header: " #field " is not at FastMM5's offset")

FM5_DEBUG_ASSERT_OFFSET(reserved_free_list_link, 0, 0);
FM5_DEBUG_ASSERT_OFFSET(reserved_second_link, 4, 8);
FM5_DEBUG_ASSERT_OFFSET(reserved_space, 8, 16);
FM5_DEBUG_ASSERT_OFFSET(header_checksum, 28, 20);
FM5_DEBUG_ASSERT_OFFSET(allocation_tick_count, 32, 24);
FM5_DEBUG_ASSERT_OFFSET(allocation_number, 36, 28);
FM5_DEBUG_ASSERT_OFFSET(user_size, 40, 32);
FM5_DEBUG_ASSERT_OFFSET(previously_used_by_class, 44, 40);
FM5_DEBUG_ASSERT_OFFSET(allocation_group, 48, 48);
FM5_DEBUG_ASSERT_OFFSET(allocated_by_thread, 52, 52);
FM5_DEBUG_ASSERT_OFFSET(freed_by_thread, 56, 56);
FM5_DEBUG_ASSERT_OFFSET(reserved_byte, 60, 60);
FM5_DEBUG_ASSERT_OFFSET(stack_trace_entry_count, 61, 61);
FM5_DEBUG_ASSERT_OFFSET(flags, 62, 62);
_Static_assert(sizeof(fm5_debug_block_header) == FM5_DEBUG_HEADER_SIZE, "debug block header is 64 bytes");
_Static_assert(offsetof(fm5_debug_block_header, flags) + sizeof(uint16_t) == FM5_DEBUG_HEADER_SIZE,
               "the flags must sit where the status word of the user pointer is read");
_Static_assert(FM5_DEBUG_MAXIMUM_STACK_TRACE_ENTRIES <= UINT8_MAX, "the entry count is one byte");

/* Footer, immediately after the user data and therefore at any alignment:
 *     u32 checksum | allocation trace [N pointers] | free trace [N pointers] | u32 reserved
 * with N = the header's stack_trace_entry_count. */
#define FM5_DEBUG_FOOTER_CHECKSUM_OFFSET 0u
#define FM5_DEBUG_FOOTER_ALLOCATION_TRACE_OFFSET 4u

enum fm5_debug_trace {
    FM5_DEBUG_ALLOCATION_TRACE = 0,
    FM5_DEBUG_FREE_TRACE = 1
};

FM5_INLINE size_t fm5_debug_footer_size(unsigned entries)
{
    return 2u * (size_t)entries * sizeof(void *) + 8u;
}

FM5_INLINE size_t fm5_debug_footer_trace_offset(unsigned entries, enum fm5_debug_trace trace)
{
    return FM5_DEBUG_FOOTER_ALLOCATION_TRACE_OFFSET + (size_t)trace * entries * sizeof(void *);
}

FM5_INLINE size_t fm5_debug_footer_reserved_offset(unsigned entries)
{
    return FM5_DEBUG_FOOTER_ALLOCATION_TRACE_OFFSET + 2u * (size_t)entries * sizeof(void *);
}

/* The size of the outer block to request. Saturates at SIZE_MAX instead of wrapping, so that an absurd
 * user size turns into a request every manager refuses rather than into a small block. */
FM5_INLINE size_t fm5_debug_outer_block_size(size_t user_size, unsigned entries)
{
    size_t overhead = FM5_DEBUG_HEADER_SIZE + fm5_debug_footer_size(entries);
    return user_size > SIZE_MAX - overhead ? SIZE_MAX : user_size + overhead;
}

FM5_INLINE uint8_t *fm5_debug_user_data(const fm5_debug_block_header *header)
{
    return (uint8_t *)header + FM5_DEBUG_HEADER_SIZE;
}

FM5_INLINE fm5_debug_block_header *fm5_debug_header_of(const void *user)
{
    return (fm5_debug_block_header *)((uint8_t *)user - FM5_DEBUG_HEADER_SIZE);
}

FM5_INLINE uint8_t *fm5_debug_footer(const fm5_debug_block_header *header)
{
    return fm5_debug_user_data(header) + header->user_size;
}

/* The footer is unaligned: every access goes through memcpy, which the compiler turns into one plain
 * move on x86 without the undefined behaviour of a misaligned typed access. */
FM5_INLINE uint32_t fm5_debug_footer_load_checksum(const uint8_t *footer)
{
    uint32_t checksum;
    memcpy(&checksum, footer + FM5_DEBUG_FOOTER_CHECKSUM_OFFSET, sizeof checksum);
    return checksum;
}

FM5_INLINE void fm5_debug_footer_store_checksum(uint8_t *footer, uint32_t checksum)
{
    memcpy(footer + FM5_DEBUG_FOOTER_CHECKSUM_OFFSET, &checksum, sizeof checksum);
}

FM5_INLINE void *fm5_debug_footer_load_trace_entry(const uint8_t *footer, unsigned entries,
                                                    enum fm5_debug_trace trace, unsigned index)
{
    void *address;
    memcpy(&address, footer + fm5_debug_footer_trace_offset(entries, trace) + index * sizeof(void *),
           sizeof address);
    return address;
}

FM5_INLINE void fm5_debug_footer_store_trace_entry(uint8_t *footer, unsigned entries, enum fm5_debug_trace trace,
                                                   unsigned index, const void *address)
{
    memcpy(footer + fm5_debug_footer_trace_offset(entries, trace) + index * sizeof(void *), &address,
           sizeof address);
}

/* The fingerprint of the damage last reported for this block (0: none), kept in the header's reserved
 * space, which no checksum covers and no free-list link overwrites. */
FM5_INLINE uint32_t fm5_debug_reported_damage(const fm5_debug_block_header *header)
{
    uint32_t fingerprint;
    memcpy(&fingerprint, header->reserved_space, sizeof fingerprint);
    return fingerprint;
}

FM5_INLINE void fm5_debug_set_reported_damage(fm5_debug_block_header *header, uint32_t fingerprint)
{
    memcpy(header->reserved_space, &fingerprint, sizeof fingerprint);
}

_Static_assert(offsetof(fm5_debug_block_header, reserved_space) >= 2 * sizeof(void *) &&
                   offsetof(fm5_debug_block_header, reserved_space) + sizeof(uint32_t) <=
                       offsetof(fm5_debug_block_header, header_checksum),
               "the damage fingerprint sits after the free-list links and before the checksummed words");

/* The checksums are the XOR of 32-bit words, seeded with all ones. XOR does not care about order, so
 * the words are taken 16 bytes at a time into two 64-bit accumulators and folded at the end: the same
 * value as a word-by-word loop, without its chain of one dependent XOR per 4 bytes (a 20-entry Win64
 * footer is 80 words, and a pair of debug calls computes four footer checksums). `size` is a multiple of
 * 8. */
FM5_OPTIMISTIC_READER static inline uint32_t fm5_debug_xor_checksum(const uint8_t *bytes, size_t size)
{
    uint64_t even = 0, odd = 0;
    size_t offset = 0;
    for (; offset + 16 <= size; offset += 16) {
        uint64_t first, second;
        memcpy(&first, bytes + offset, sizeof first);
        memcpy(&second, bytes + offset + 8, sizeof second);
        even ^= first;
        odd ^= second;
    }
    if (offset < size) {
        uint64_t last;
        memcpy(&last, bytes + offset, sizeof last);
        even ^= last;
    }
    even ^= odd;
    return 0xFFFFFFFFu ^ (uint32_t)even ^ (uint32_t)(even >> 32);
}

#define FM5_DEBUG_HEADER_CHECKSUMMED_OFFSET (offsetof(fm5_debug_block_header, header_checksum) + sizeof(uint32_t))
_Static_assert((FM5_DEBUG_HEADER_SIZE - FM5_DEBUG_HEADER_CHECKSUMMED_OFFSET) % 8 == 0,
               "the header's checksummed words are a whole number of 8-byte chunks");

/* Covers every header word after the checksum field: the reserved words before it are left out because
 * the outer block's free list overwrites them while the debug block is legitimately free. */
FM5_OPTIMISTIC_READER static inline uint32_t fm5_debug_header_checksum(const fm5_debug_block_header *header)
{
    return fm5_debug_xor_checksum((const uint8_t *)header + FM5_DEBUG_HEADER_CHECKSUMMED_OFFSET,
                                  FM5_DEBUG_HEADER_SIZE - FM5_DEBUG_HEADER_CHECKSUMMED_OFFSET);
}

/* Covers both traces (2N pointers, a multiple of 8 bytes on both architectures), not the reserved word. */
FM5_OPTIMISTIC_READER static inline uint32_t fm5_debug_footer_checksum(const uint8_t *footer, unsigned entries)
{
    return fm5_debug_xor_checksum(footer + FM5_DEBUG_FOOTER_ALLOCATION_TRACE_OFFSET,
                                  2u * (size_t)entries * sizeof(void *));
}

#endif
