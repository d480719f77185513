/* Debug blocks: creating, checking, releasing and resizing them, reporting on them, and scanning them
 * all. A debug block is a sub-block at the start of an ordinary (outer) block that carries HasDebugInfo. */
#ifndef FM5_DEBUG_BLOCKS_H
#define FM5_DEBUG_BLOCKS_H

#include "base/platform.h"
#include "blocks/walk.h"

/* A new debug block, filled with $90 (or zeroed when `zeroed`), or NULL. */
void *fm5_debug_get_mem(size_t user_size, int zeroed);
/* For a live debug block (status 32). Returns 0, or -1 after reporting corruption. */
int fm5_debug_free_mem(void *user);
/* For a live debug block; NULL (old block intact) on failure or corruption. */
void *fm5_debug_realloc_mem(void *user, size_t new_size);
/* Moves a live ordinary block into a new debug block (debug mode is active). */
void *fm5_debug_realloc_ordinary(void *p, size_t available, size_t new_size);
size_t fm5_debug_current_user_size(const void *user);
/* Reports a free or reallocation of the freed debug block at `user`, with its history. */
void fm5_debug_report_freed_block_misuse(int kind, const void *user);

/* Reports a live debug block as leaked, with its history. */
void fm5_debug_report_leaked_block(const void *user, size_t outer_usable);
/* 0 while the DLL unloads: loading DbgHelp under the loader lock could deadlock. */
extern volatile int fm5_debug_reports_may_load_symbols;

/* Installs the release managers' freed-block check (blocks/recycling.h): a freed debug block is
 * reused only when it is intact. Called once at start-up. */
void fm5_debug_initialize(void);

/* The block the program holds behind a walked item, if the item is a live block: for a debug block its
 * user pointer and requested size, for an ordinary one its address and usable size. Returns 0 for
 * spans, free, pending and unfed space, and debug blocks on their way to being freed. */
typedef struct fm5_live_user_block {
    const void *user;
    size_t size;
    int is_debug_block;
} fm5_live_user_block;

int fm5_walk_item_live_user_block(const fm5_walk_item *item, fm5_live_user_block *block);

#endif
