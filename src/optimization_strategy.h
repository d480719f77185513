/* The optimization strategy and the debug options that change how blocks are released. */
#ifndef FM5_OPTIMIZATION_STRATEGY_H
#define FM5_OPTIMIZATION_STRATEGY_H

#include "fm5.h"

extern volatile int fm5_optimization_strategy;

/* Bytes of a new medium-block span for the current strategy. */
unsigned fm5_medium_span_size(void);

#endif
