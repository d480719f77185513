/* Leak reports: every live block that is not an expected leak, then a summary by size. */
#include "fm5.h"
#include "reports/leak_report.h"
#include "base/os.h"
#include "reports/expected_leaks.h"
#include "reports/size_histogram.h"
#include "blocks/release_engine.h"
#include "blocks/walk.h"
#include "debug/debug_blocks.h"
#include "base/events.h"
#include "base/text_builder.h"

#define SUMMARY_SIZES 4096
#define SUMMARY_BYTES 65536

volatile int fm5_report_leaks_on_shutdown;

/* Static: a report can hold thousands of sizes, more than a stack should; reports are serialised. */
static fm5_lock report_lock;
static fm5_expected_leak expected[FM5_EXPECTED_LEAK_ENTRIES];
static fm5_size_count summary[SUMMARY_SIZES];
static char summary_text[SUMMARY_BYTES];

typedef struct leak_walk {
    unsigned expected_entries;
    size_t leaks;
    fm5_size_histogram sizes;
} leak_walk;

static int visit(const fm5_walk_item *item, void *context)
{
    leak_walk *walk = context;
    fm5_live_user_block block;
    if (!fm5_walk_item_live_user_block(item, &block))
        return 0;
    const void *user = block.user;
    size_t size = block.size;
    if (fm5_expected_leak_consume(expected, walk->expected_entries, user, size))
        return 0;
    walk->leaks++;
    fm5_size_histogram_add(&walk->sizes, size);
    if (block.is_debug_block) {
        fm5_debug_report_leaked_block(user, item->usable_size);
    } else {
        fm5_event_report(FastMM_EventMemoryLeak, user, size,
                         "a block allocated outside debug mode was never freed (no history is recorded for it)");
    }
    return 0;
}

static size_t report(uint32_t timeout_ms)
{
    fm5_lock_with_timeout(&report_lock, FM5_WAIT_FOREVER);
    leak_walk walk = { fm5_expected_leaks_snapshot(expected), 0, { 0 } };
    fm5_size_histogram_init(&walk.sizes, summary, SUMMARY_SIZES);
    int complete = fm5_walk_all(visit, &walk, timeout_ms) == FM5_WALK_COMPLETE;
    if (walk.leaks) {
        fm5_size_histogram_sort_by_size(&walk.sizes);
        fm5_text text;
        fm5_text_init(&text, summary_text, sizeof summary_text);
        fm5_text_append(&text, "fm5: Memory leak: ");
        fm5_text_append_unsigned(&text, walk.leaks);
        fm5_text_append(&text, walk.leaks == 1 ? " block was" : " blocks were");
        fm5_text_append(&text, " never freed.");
        if (!complete)
            fm5_text_append(&text, " Some arenas were busy and not examined.");
        fm5_text_append(&text, "\r\nLeaked blocks by size:\r\n");
        for (unsigned i = 0; i < walk.sizes.sizes; i++) {
            fm5_text_append(&text, "    ");
            fm5_text_append_unsigned(&text, summary[i].size);
            fm5_text_append(&text, " bytes: ");
            fm5_text_append_unsigned(&text, summary[i].count);
            fm5_text_append(&text, "\r\n");
        }
        if (walk.sizes.other_blocks) {
            fm5_text_append(&text, "    other sizes: ");
            fm5_text_append_unsigned(&text, walk.sizes.other_blocks);
            fm5_text_append(&text, "\r\n");
        }
        fm5_event_deliver(FastMM_EventMemoryLeak, NULL, walk.leaks, text.buffer);
    }
    fm5_unlock(&report_lock);
    return walk.leaks;
}

size_t FM5_CALL FastMM_ReportMemoryLeaks(void)
{
    fm5_release_process_pending_frees();
    return report(1000);
}

void FM5_CALL FastMM_SetReportMemoryLeaksOnShutdown(int report_leaks)
{
    fm5_report_leaks_on_shutdown = report_leaks != 0;
}

int FM5_CALL FastMM_GetReportMemoryLeaksOnShutdown(void)
{
    return fm5_report_leaks_on_shutdown;
}

void fm5_report_leaks_at_shutdown(void)
{
    if (!fm5_report_leaks_on_shutdown)
        return;
    fm5_debug_reports_may_load_symbols = 0;
    fm5_release_process_pending_frees();
    /* Threads killed at exit may have died holding a lock: wait only briefly for each arena. */
    report(100);
}
