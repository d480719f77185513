/* FastMM5's optimization strategy, as the managers honour it (FastMM_SetOptimizationStrategy sets it). */
#ifndef FM5_STRATEGY_H
#define FM5_STRATEGY_H

#include "fm5.h"

/* A FastMM_OptimizationStrategy value. */
extern volatile int fm5_optimization_strategy;

/* Bytes of a new medium-block span for the current strategy: 4 MB for speed, 3 MB balanced, 1.5 MB
 * for low memory use (FastMM5's sizes). */
unsigned fm5_medium_span_size(void);

#endif
