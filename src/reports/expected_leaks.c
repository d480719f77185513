/* Expected leaks: a fixed table, so that registering never allocates. */
#include "reports/expected_leaks.h"
#include "base/os.h"
#include "fm5.h"
#include <string.h>

static fm5_lock table_lock;
static fm5_expected_leak table[FM5_EXPECTED_LEAK_ENTRIES];
static unsigned table_entries;

static int add(const void *address, size_t size, unsigned count)
{
    fm5_lock_with_timeout(&table_lock, FM5_WAIT_FOREVER);
    int result = -1;
    for (unsigned i = 0; i < table_entries; i++) {
        if (table[i].address == address && (address || table[i].size == size)) {
            table[i].count += count;
            result = 0;
            break;
        }
    }
    if (result && table_entries < FM5_EXPECTED_LEAK_ENTRIES) {
        table[table_entries++] = (fm5_expected_leak){ address, size, count };
        result = 0;
    }
    fm5_unlock(&table_lock);
    return result;
}

static int remove_entry(const void *address, size_t size, unsigned count)
{
    fm5_lock_with_timeout(&table_lock, FM5_WAIT_FOREVER);
    int result = -1;
    for (unsigned i = 0; i < table_entries; i++) {
        if (table[i].address == address && (address || table[i].size == size)) {
            table[i].count = table[i].count > count ? table[i].count - count : 0;
            if (!table[i].count)
                table[i] = table[--table_entries];
            result = 0;
            break;
        }
    }
    fm5_unlock(&table_lock);
    return result;
}

int FM5_CALL FastMM_RegisterExpectedMemoryLeak(void *p)
{
    return p ? add(p, 0, 1) : -1;
}

int FM5_CALL FastMM_UnregisterExpectedMemoryLeak(void *p)
{
    return p ? remove_entry(p, 0, ~0u) : -1;
}

int FM5_CALL FastMM_RegisterExpectedMemoryLeakBySize(size_t size, unsigned count)
{
    return count ? add(NULL, size, count) : -1;
}

int FM5_CALL FastMM_UnregisterExpectedMemoryLeakBySize(size_t size, unsigned count)
{
    return count ? remove_entry(NULL, size, count) : -1;
}

unsigned fm5_expected_leaks_snapshot(fm5_expected_leak *copy)
{
    fm5_lock_with_timeout(&table_lock, FM5_WAIT_FOREVER);
    unsigned entries = table_entries;
    memcpy(copy, table, entries * sizeof *copy);
    fm5_unlock(&table_lock);
    return entries;
}

int fm5_expected_leak_consume(fm5_expected_leak *snapshot, unsigned entries, const void *user, size_t size)
{
    /* By address first, then by the largest registered size the block reaches: the closest fit. */
    for (unsigned i = 0; i < entries; i++) {
        if (snapshot[i].address == user && snapshot[i].count) {
            snapshot[i].count--;
            return 1;
        }
    }
    int best = -1;
    for (unsigned i = 0; i < entries; i++) {
        if (!snapshot[i].address && snapshot[i].count && size >= snapshot[i].size &&
            (best < 0 || snapshot[i].size > snapshot[best].size))
            best = (int)i;
    }
    if (best < 0)
        return 0;
    snapshot[best].count--;
    return 1;
}
