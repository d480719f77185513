/* The table of leaks the program expects, by address or by size and count. */
#ifndef FM5_EXPECTED_LEAKS_H
#define FM5_EXPECTED_LEAKS_H

#include "base/platform.h"

#define FM5_EXPECTED_LEAK_ENTRIES 1024

typedef struct fm5_expected_leak {
    const void *address;   /* NULL for an entry by size */
    size_t size;
    unsigned count;
} fm5_expected_leak;

/* Copies the table, so that a report can consume counts without changing it. Returns the entries. */
unsigned fm5_expected_leaks_snapshot(fm5_expected_leak *copy);
/* Whether a block of `size` bytes at `user` is expected, consuming one count of the snapshot. */
int fm5_expected_leak_consume(fm5_expected_leak *snapshot, unsigned entries, const void *user, size_t size);

#endif
