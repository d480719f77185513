/* Memory from the OS as the block managers get it: every mapping is charged to the usage counter and
 * checked against the usage limit (FastMM_SetMemoryUsageLimit). The managers map their spans and large
 * blocks only through here; base/os.h is the raw door below it. */
#ifndef FM5_MEMORY_USAGE_H
#define FM5_MEMORY_USAGE_H

#include "base/platform.h"
#include "base/os.h"

/* Maps `size` bytes (a multiple of FM5_OS_GRANULARITY), zero-filled. Returns NULL if the usage limit
 * would be passed or the OS refuses; both report an event. */
void *fm5_memory_map(size_t size, int top_down);

/* Maps exactly at `address` (granule aligned). Returns 0 when the range is not free or the limit would
 * be passed; nothing is reported: the caller falls back to moving the block. */
int fm5_memory_map_at(void *address, size_t size);

/* Unmaps `size` bytes from `base`: `mappings` adjacent mappings, the first made by fm5_memory_map and
 * the rest by fm5_memory_map_at. Returns 0 (and reports FastMM_EventReleaseFailed) when the OS refused:
 * the bytes then stay mapped and counted in the usage, and fm5 no longer uses them. */
int fm5_memory_unmap(void *base, size_t size, unsigned mappings);

/* Bytes mapped now. */
size_t fm5_memory_usage(void);
void fm5_memory_set_limit(size_t limit);
size_t fm5_memory_limit(void);

void fm5_memory_initialize(void);

#endif
