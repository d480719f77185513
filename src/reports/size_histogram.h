/* Live blocks counted by size, for the leak report's summary and the state log. Fixed storage that the
 * caller provides (reports run under their own lock and must not allocate). */
#ifndef FM5_SIZE_HISTOGRAM_H
#define FM5_SIZE_HISTOGRAM_H

#include "base/platform.h"

typedef struct fm5_size_count {
    size_t size;
    size_t count;
} fm5_size_count;

typedef struct fm5_size_histogram {
    fm5_size_count *entries;
    unsigned capacity;
    unsigned sizes;               /* entries in use */
    size_t other_blocks;          /* blocks whose size found no free entry */
    size_t other_bytes;
} fm5_size_histogram;

void fm5_size_histogram_init(fm5_size_histogram *histogram, fm5_size_count *entries, unsigned capacity);
void fm5_size_histogram_add(fm5_size_histogram *histogram, size_t size);
/* Smallest size first. */
void fm5_size_histogram_sort_by_size(fm5_size_histogram *histogram);
/* Most bytes (size x count) first. */
void fm5_size_histogram_sort_by_total(fm5_size_histogram *histogram);

#endif
