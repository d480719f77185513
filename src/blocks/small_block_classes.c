/* FastMM5's small-block size classes. */
#include "blocks/small_block_classes.h"

const uint16_t fm5_small_block_sizes[FM5_SMALL_CLASS_COUNT] = {
#ifdef FM5_32BIT
    8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160,
#else
    16, 32, 48, 64, 80, 96, 112, 128, 144, 160,
#endif
    176, 192, 208, 224, 240, 256, 272, 288, 304, 320,
    352, 384, 416, 448, 480, 512, 544, 576, 608, 640,
    704, 768, 832, 896, 960, 1024, 1088, 1152, 1216, 1280, 1344,
    1472, 1600, 1728, 1856, 1984, 2112, 2240, 2368, 2496, 2624
};

volatile uint8_t fm5_small_lookup[FM5_SMALL_LOOKUP_COUNT];

unsigned fm5_small_class_slot(unsigned class_index)
{
    unsigned slot = 2 * class_index + 1;
    if (slot >= FM5_SMALL_CLASS_COUNT)
        slot = 2 * FM5_SMALL_CLASS_COUNT - 1 - slot;
    return slot;
}

void fm5_small_lookup_rebuild(unsigned minimum_alignment)
{
    unsigned class_index = 0;
    for (unsigned i = 0; i < FM5_SMALL_LOOKUP_COUNT; i++) {
        /* Entry i serves requests up to (i + 1) * granularity - 2 bytes. */
        unsigned needed = (i + 1) * FM5_SMALL_GRANULARITY;
        while (fm5_small_block_sizes[class_index] < needed ||
               fm5_small_block_sizes[class_index] % minimum_alignment != 0)
            class_index++;
        fm5_small_lookup[i] = (uint8_t)fm5_small_class_slot(class_index);
    }
}
