/* The release-mode entry points that debug mode builds on: they never divert into debug mode. */
#ifndef FM5_MEMORY_MANAGER_H
#define FM5_MEMORY_MANAGER_H

#include "platform.h"

void *fm5_release_get_mem(size_t size);
/* For ordinary blocks that fm5 itself holds, such as a debug block's outer block. */
int fm5_release_free_mem(void *p);

#endif
