/* How many arenas each block manager has (FastMM5's defaults). */
#ifndef FM5_ARENA_COUNTS_H
#define FM5_ARENA_COUNTS_H

#define FM5_SMALL_ARENA_COUNT 4
#define FM5_MEDIUM_ARENA_COUNT 4
#define FM5_LARGE_ARENA_COUNT 8

#endif
