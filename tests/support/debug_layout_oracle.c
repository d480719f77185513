/*
 * debug_layout_oracle.c — reading debug blocks by the layout of debug_layout_oracle.h.
 */
#include "debug_layout_oracle.h"

#include <string.h>

#include "size_oracle.h"

uint8_t *tu_debug_header(const void *user)
{
    return (uint8_t *)user - TU_DEBUG_HEADER_SIZE;
}

uint32_t tu_debug_header_u32(const void *user, unsigned offset)
{
    uint32_t v;
    memcpy(&v, tu_debug_header(user) + offset, sizeof v);
    return v;
}

void tu_debug_set_header_u32(void *user, unsigned offset, uint32_t v)
{
    memcpy(tu_debug_header(user) + offset, &v, sizeof v);
}

size_t tu_debug_user_size(const void *user)
{
    size_t v;
    memcpy(&v, tu_debug_header(user) + TU_DEBUG_USER_SIZE_OFFSET, sizeof v);
    return v;
}

unsigned tu_debug_entry_count(const void *user)
{
    return tu_debug_header(user)[TU_DEBUG_ENTRY_COUNT_OFFSET];
}

unsigned tu_debug_flags(const void *user)
{
    uint16_t v;
    memcpy(&v, tu_debug_header(user) + TU_DEBUG_FLAGS_OFFSET, sizeof v);
    return v;
}

const void *tu_debug_previous_class(const void *user)
{
    const void *v;
    memcpy(&v, tu_debug_header(user) + TU_DEBUG_PREVIOUS_CLASS_OFFSET, sizeof v);
    return v;
}

unsigned tu_status_word(const void *p)
{
    uint16_t v;
    memcpy(&v, (const uint8_t *)p - 2, sizeof v);
    return v;
}

int tu_is_debug_block(const void *p)
{
    return tu_status_word(p) == TU_DEBUG_IN_USE;
}

uint32_t tu_debug_expected_header_checksum(const void *user)
{
    uint32_t sum = 0xFFFFFFFFu;
    for (unsigned offset = TU_DEBUG_CHECKSUM_OFFSET + 4; offset < TU_DEBUG_HEADER_SIZE; offset += 4)
        sum ^= tu_debug_header_u32(user, offset);
    return sum;
}

uint8_t *tu_debug_footer(const void *user)
{
    return (uint8_t *)user + tu_debug_user_size(user);
}

size_t tu_debug_footer_size(unsigned entries)
{
    return 2u * (size_t)entries * sizeof(void *) + 8u;
}

uint32_t tu_debug_stored_footer_checksum(const void *user)
{
    uint32_t v;
    memcpy(&v, tu_debug_footer(user), sizeof v);
    return v;
}

uint32_t tu_debug_expected_footer_checksum(const void *user)
{
    const uint8_t *traces = tu_debug_footer(user) + 4;
    size_t bytes = 2u * (size_t)tu_debug_entry_count(user) * sizeof(void *);
    uint32_t sum = 0xFFFFFFFFu;
    for (size_t offset = 0; offset < bytes; offset += 4) {
        uint32_t word;
        memcpy(&word, traces + offset, sizeof word);
        sum ^= word;
    }
    return sum;
}

void *tu_debug_trace_entry(const void *user, int free_trace, unsigned index)
{
    unsigned entries = tu_debug_entry_count(user);
    void *v;
    memcpy(&v, tu_debug_footer(user) + 4 + ((size_t)(free_trace ? entries : 0) + index) * sizeof(void *), sizeof v);
    return v;
}

int tu_debug_checksums_match(const void *user)
{
    return tu_debug_header_u32(user, TU_DEBUG_CHECKSUM_OFFSET) == tu_debug_expected_header_checksum(user) &&
           tu_debug_stored_footer_checksum(user) == tu_debug_expected_footer_checksum(user);
}

uint8_t tu_debug_freed_byte(size_t size, size_t offset, const void *marker)
{
    if (size >= TU_DEBUG_FREED_OBJECT_MINIMUM_SIZE && offset < sizeof(void *)) {
        uint8_t bytes[sizeof(void *)];
        memcpy(bytes, &marker, sizeof bytes);
        return bytes[offset];
    }
    return (uint8_t)TU_DEBUG_FREED_FILL;
}

size_t tu_debug_freed_mismatch(const void *user, size_t size, const void *marker)
{
    const uint8_t *p = (const uint8_t *)user;
    for (size_t i = 0; i < size; i++)
        if (p[i] != tu_debug_freed_byte(size, i, marker))
            return i;
    return SIZE_MAX;
}

size_t tu_debug_max_small_user(unsigned depth)
{
    return TU_MAX_SMALL_USER - TU_DEBUG_HEADER_SIZE - tu_debug_footer_size(depth);
}

size_t tu_debug_max_medium_user(unsigned depth)
{
    return TU_MAX_MEDIUM_USER - TU_DEBUG_HEADER_SIZE - tu_debug_footer_size(depth);
}
