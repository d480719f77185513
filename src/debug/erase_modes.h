/* FastMM5's erase modes: fill blocks on allocation or before release, outside debug mode. */
#ifndef FM5_ERASE_MODES_H
#define FM5_ERASE_MODES_H

#include "base/platform.h"

extern volatile int fm5_erase_allocated_active;
extern volatile int fm5_erase_freed_active;

#endif
