/* The only place that asks the OS for memory: VirtualAlloc, VirtualFree, VirtualQuery, the usage
 * counter and the usage limit. */
#ifndef FM5_OS_MEMORY_H
#define FM5_OS_MEMORY_H

#include "platform.h"

#define FM5_OS_GRANULARITY 65536u

/* Reserves and commits `size` bytes (a multiple of 64 KB), zero-filled. Returns NULL if the usage
 * limit would be passed or the OS refuses; both record an event. */
void *fm5_os_allocate(size_t size, int top_down);

/* Reserves and commits exactly at `address` (64 KB aligned). Returns 0 when the range is not free or
 * the limit would be passed; nothing is recorded, the caller falls back to moving the block. */
int fm5_os_allocate_at(void *address, size_t size);

/* Releases one allocation made by fm5_os_allocate or fm5_os_allocate_at. */
void fm5_os_release(void *base, size_t size);

/* Size of the free address range that starts at `address` (0 if it is not free). */
size_t fm5_os_free_range_at(void *address);

size_t fm5_os_current_usage(void);
void fm5_os_set_usage_limit(size_t limit);
size_t fm5_os_usage_limit(void);

void fm5_os_initialize(void);

#endif
