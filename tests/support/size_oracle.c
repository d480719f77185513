/*
 * size_oracle.c — FastMM5's size tables, as size_oracle.h describes them.
 */
#include "size_oracle.h"

#include "fm5.h"

const unsigned short tu_small_classes[] = {
#if !TU_64BIT
    8, 24, 40, 56, 72, 88, 104, 120, 136, 152, /* the x86-only sizes */
#endif
    16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 272, 288, 304, 320,
    352, 384, 416, 448, 480, 512, 544, 576, 608, 640,
    704, 768, 832, 896, 960, 1024, 1088, 1152, 1216, 1280, 1344,
    1472, 1600, 1728, 1856, 1984, 2112, 2240, 2368, 2496, 2624};
const size_t tu_small_class_count = sizeof tu_small_classes / sizeof tu_small_classes[0];

size_t tu_small_block_size(size_t n, unsigned alignment)
{
    size_t best = 0;
    for (size_t i = 0; i < tu_small_class_count; i++) {
        size_t c = tu_small_classes[i];
        if (c >= n + TU_SMALL_HEADER && c % alignment == 0 && (best == 0 || c < best))
            best = c;
    }
    return best;
}

size_t tu_small_natural_alignment(size_t block_size, unsigned minimum_alignment)
{
    size_t a = 64;
    while (a > 1 && block_size % a != 0)
        a /= 2;
    return a < minimum_alignment ? minimum_alignment : a;
}

size_t tu_medium_bin(size_t i)
{
    if (i < 384)
        return 2880 + 256 * i;
    if (i < 768)
        return 101184 + 512 * (i - 384);
    return 297792 + 1024 * (i - 768);
}

size_t tu_medium_block_size(size_t n)
{
    size_t b = n + TU_MEDIUM_HEADER;
    if (b <= 2880)
        return 2880;
    if (b <= 101184)
        return 2880 + (b - 2880 + 255) / 256 * 256;
    if (b <= 297792)
        return 101184 + (b - 101184 + 511) / 512 * 512;
    return 297792 + (b - 297792 + 1023) / 1024 * 1024;
}

size_t tu_large_usable(size_t n)
{
    return (n + TU_LARGE_HEADER + 65535) / 65536 * 65536 - TU_LARGE_HEADER;
}

size_t tu_expected_usable(size_t n, unsigned alignment)
{
    if (n <= TU_MAX_SMALL_USER)
        return tu_small_block_size(n, alignment) - TU_SMALL_HEADER;
    if (n <= TU_MAX_MEDIUM_USER)
        return tu_medium_block_size(n) - TU_MEDIUM_HEADER;
    return tu_large_usable(n);
}

unsigned tu_expected_kind(size_t n)
{
    if (n <= TU_MAX_SMALL_USER)
        return FastMM_SmallBlock;
    if (n <= TU_MAX_MEDIUM_USER)
        return FastMM_MediumBlock;
    return FastMM_LargeBlock;
}

const char *tu_kind_name(unsigned kind)
{
    switch (kind) {
    case FastMM_SmallBlock: return "small";
    case FastMM_MediumBlock: return "medium";
    case FastMM_LargeBlock: return "large";
    case FastMM_SmallBlockSpan: return "small-span";
    case FastMM_MediumBlockSpan: return "medium-span";
    default: return "?";
    }
}
