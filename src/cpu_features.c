#include "cpu_features.h"

uint8_t fm5_cpu_has_sse2;

void fm5_detect_cpu_features(void)
{
    /* The operating system's answer includes whether it saves the XMM registers on a thread switch,
     * which CPUID alone does not tell. */
    fm5_cpu_has_sse2 = IsProcessorFeaturePresent(PF_XMMI64_INSTRUCTIONS_AVAILABLE) ? 1 : 0;
}
