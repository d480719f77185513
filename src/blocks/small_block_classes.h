/* The small-block size classes and the table that maps a request size to its class's manager slot. */
#ifndef FM5_SMALL_BLOCK_CLASSES_H
#define FM5_SMALL_BLOCK_CLASSES_H

#include "blocks/geometry.h"

#define FM5_SMALL_LOOKUP_COUNT (FM5_MAXIMUM_SMALL_BLOCK_SIZE / FM5_SMALL_GRANULARITY)

/* Block sizes, header included, ascending. */
extern const uint16_t fm5_small_block_sizes[FM5_SMALL_CLASS_COUNT];

/* Index (size + 1) >> FM5_SMALL_GRANULARITY_SHIFT gives the manager slot of the smallest class that
 * holds `size` bytes and satisfies the current minimum alignment. */
extern volatile uint8_t fm5_small_lookup[FM5_SMALL_LOOKUP_COUNT];

/* Manager slots interleave the classes so that neighbouring classes, often used together, do not share
 * adjacent cache lines. */
unsigned fm5_small_class_slot(unsigned class_index);

void fm5_small_lookup_rebuild(unsigned minimum_alignment);

#endif
