/* Counting blocks by size. The tables are small enough (thousands of sizes at most) for a linear search
 * and an insertion sort, and neither allocates. */
#include "reports/size_histogram.h"

void fm5_size_histogram_init(fm5_size_histogram *histogram, fm5_size_count *entries, unsigned capacity)
{
    *histogram = (fm5_size_histogram){ entries, capacity, 0, 0, 0 };
}

void fm5_size_histogram_add(fm5_size_histogram *histogram, size_t size)
{
    for (unsigned i = 0; i < histogram->sizes; i++) {
        if (histogram->entries[i].size == size) {
            histogram->entries[i].count++;
            return;
        }
    }
    if (histogram->sizes < histogram->capacity) {
        histogram->entries[histogram->sizes++] = (fm5_size_count){ size, 1 };
    } else {
        histogram->other_blocks++;
        histogram->other_bytes += size;
    }
}

static int before(const fm5_size_count *a, const fm5_size_count *b, int by_total)
{
    return by_total ? a->size * a->count > b->size * b->count : a->size < b->size;
}

static void sort(fm5_size_histogram *histogram, int by_total)
{
    fm5_size_count *entries = histogram->entries;
    for (unsigned i = 1; i < histogram->sizes; i++) {
        fm5_size_count entry = entries[i];
        unsigned j = i;
        while (j > 0 && before(&entry, &entries[j - 1], by_total)) {
            entries[j] = entries[j - 1];
            j--;
        }
        entries[j] = entry;
    }
}

void fm5_size_histogram_sort_by_size(fm5_size_histogram *histogram)
{
    sort(histogram, 0);
}

void fm5_size_histogram_sort_by_total(fm5_size_histogram *histogram)
{
    sort(histogram, 1);
}
