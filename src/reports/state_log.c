/* FastMM_LogStateToFile: the live blocks grouped by size, written to a text file. */
#include "fm5.h"
#include "blocks/walk.h"
#include "debug/debug_blocks.h"
#include "reports/size_histogram.h"
#include "base/text_builder.h"
#include "base/os.h"
#include "base/memory_usage.h"

#define STATE_SIZES 4096
#define STATE_TEXT_BYTES (STATE_SIZES * 64 + 1024)

/* Static, serialised by state_lock: a state log can hold thousands of sizes. */
static fm5_lock state_lock;
static fm5_size_count groups[STATE_SIZES];
static char state_text[STATE_TEXT_BYTES];

typedef struct state_walk {
    size_t blocks;
    size_t bytes;
    fm5_size_histogram sizes;
} state_walk;

static int visit(const fm5_walk_item *item, void *context)
{
    state_walk *walk = context;
    fm5_live_user_block block;
    if (!fm5_walk_item_live_user_block(item, &block))
        return 0;
    size_t size = block.size;
    walk->blocks++;
    walk->bytes += size;
    fm5_size_histogram_add(&walk->sizes, size);
    return 0;
}

int FM5_CALL FastMM_LogStateToFile(const char *utf8_path)
{
    if (!utf8_path)
        utf8_path = FastMM_GetEventLogFilename();
    fm5_lock_with_timeout(&state_lock, FM5_WAIT_FOREVER);
    state_walk walk = { 0, 0, { 0 } };
    fm5_size_histogram_init(&walk.sizes, groups, STATE_SIZES);
    int complete = fm5_walk_all(visit, &walk, 1000) == FM5_WALK_COMPLETE;
    fm5_size_histogram_sort_by_total(&walk.sizes);
    fm5_text text;
    fm5_text_init(&text, state_text, sizeof state_text);
    fm5_text_append(&text, "fm5 memory manager state: ");
    fm5_text_append_unsigned(&text, walk.blocks);
    fm5_text_append(&text, " live blocks, ");
    fm5_text_append_unsigned(&text, walk.bytes);
    fm5_text_append(&text, " bytes in use, ");
    fm5_text_append_unsigned(&text, fm5_memory_usage());
    fm5_text_append(&text, " bytes taken from the OS.");
    if (!complete)
        fm5_text_append(&text, " Some arenas were busy and not examined.");
    fm5_text_append(&text, "\r\n");
    for (unsigned i = 0; i < walk.sizes.sizes; i++) {
        fm5_text_append_unsigned(&text, groups[i].size * groups[i].count);
        fm5_text_append(&text, " bytes: ");
        fm5_text_append_unsigned(&text, groups[i].count);
        fm5_text_append(&text, " x ");
        fm5_text_append_unsigned(&text, groups[i].size);
        fm5_text_append(&text, " bytes\r\n");
    }
    if (walk.sizes.other_blocks) {
        fm5_text_append_unsigned(&text, walk.sizes.other_bytes);
        fm5_text_append(&text, " bytes: ");
        fm5_text_append_unsigned(&text, walk.sizes.other_blocks);
        fm5_text_append(&text, " blocks of other sizes\r\n");
    }
    fm5_text_append(&text, "\r\n");
    const char *pieces[1] = { text.buffer };
    int result = fm5_os_append_to_file(utf8_path, NULL, pieces, &text.length, 1);
    fm5_unlock(&state_lock);
    return result;
}
