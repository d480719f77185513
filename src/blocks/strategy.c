/* The optimization strategy and what it changes in the managers. */
#include "blocks/strategy.h"
#include "blocks/geometry.h"

volatile int fm5_optimization_strategy = FastMM_Balanced;

_Static_assert((3u << 20) % FM5_OS_GRANULARITY == 0 && (3u << 19) % FM5_OS_GRANULARITY == 0,
               "every span size is whole OS granules");

unsigned fm5_medium_span_size(void)
{
    switch (fm5_optimization_strategy) {
    case FastMM_OptimizeForSpeed: return (unsigned)FM5_MAXIMUM_MEDIUM_SPAN_SIZE;
    case FastMM_OptimizeForLowMemoryUsage: return 3u << 19;
    default: return 3u << 20;
    }
}
