/* Debug blocks. Every change to a debug block's header or footer happens with HasDebugInfo cleared on
 * the outer block, so that a concurrent scan skips a block that is being changed instead of reporting
 * a checksum that is half updated. */
#include "fm5.h"
#include "debug/debug_blocks.h"
#include "base/os.h"
#include "blocks/release_engine.h"
#include "blocks/recycling.h"
#include "debug/debug_block_layout.h"
#include "debug/debug_mode.h"
#include "debug/debug_fill.h"
#include "debug/debug_freed_check.h"
#include "blocks/block_identity.h"
#include "blocks/block_status.h"
#include "blocks/walk.h"
#include "base/events.h"
#include "debug/stack_trace.h"
#include "base/text_builder.h"
#include <string.h>

/* Bits of the header's reserved byte: how the block was made. */
#define BLOCK_WITHOUT_CHECKSUMS 1u
#define BLOCK_WITHOUT_FILL 2u

#define REPORT_BYTES 24576
#define DUMP_BYTES 256u
#define SCAN_RETRIES 100

/* ---- header and footer ------------------------------------------------------------------------ */

/* Only the block's owner writes its status word while it is live; scans and walks read it meanwhile,
 * so it is loaded and stored whole. */
static void set_has_debug_info(void *outer, int on)
{
    unsigned status = fm5_status_load(outer);
    fm5_status_store(outer, on ? status | FM5_STATUS_HAS_DEBUG_INFO : status & ~FM5_STATUS_HAS_DEBUG_INFO);
}

/* A block made with FastMM_DebugNoChecksums has this in place of its header checksum. A checksummed
 * block whose option bit is flipped by a stray write then fails the header check (its checksum is this
 * value only by a 1 in 2^32 chance), so that a corrupted header cannot switch its own checks off. */
#define NO_CHECKSUMS_MARK 0x4E6F4353u

static void seal(fm5_debug_block_header *header)
{
    if (header->reserved_byte & BLOCK_WITHOUT_CHECKSUMS) {
        header->header_checksum = NO_CHECKSUMS_MARK;
        return;
    }
    uint8_t *footer = fm5_debug_footer(header);
    fm5_debug_footer_store_checksum(footer, fm5_debug_footer_checksum(footer, header->stack_trace_entry_count));
    header->header_checksum = fm5_debug_header_checksum(header);
}

/* Whether the header's sizes fit the outer block: checked before anything reads the footer. */
FM5_OPTIMISTIC_READER static int header_plausible(const fm5_debug_block_header *header, size_t outer_usable)
{
    if (header->stack_trace_entry_count > FM5_DEBUG_MAXIMUM_STACK_TRACE_ENTRIES)
        return 0;
    size_t overhead = FM5_DEBUG_HEADER_SIZE + fm5_debug_footer_size(header->stack_trace_entry_count);
    return outer_usable >= overhead && header->user_size <= outer_usable - overhead;
}

enum integrity { INTACT, HEADER_CORRUPTED, FOOTER_CORRUPTED, FILL_CORRUPTED };

FM5_OPTIMISTIC_READER static enum integrity check_block(const fm5_debug_block_header *header, size_t outer_usable,
                                                        int freed)
{
    if (!header_plausible(header, outer_usable))
        return HEADER_CORRUPTED;
    if (header->reserved_byte & BLOCK_WITHOUT_CHECKSUMS) {
        if (header->header_checksum != NO_CHECKSUMS_MARK)
            return HEADER_CORRUPTED;
    } else {
        if (header->header_checksum != fm5_debug_header_checksum(header))
            return HEADER_CORRUPTED;
        const uint8_t *footer = fm5_debug_footer(header);
        if (fm5_debug_footer_load_checksum(footer) !=
            fm5_debug_footer_checksum(footer, header->stack_trace_entry_count))
            return FOOTER_CORRUPTED;
    }
    if (header->flags != (freed ? FM5_DEBUG_BLOCK_FREED : FM5_DEBUG_BLOCK_IN_USE))
        return HEADER_CORRUPTED;
    if (freed && !(header->reserved_byte & BLOCK_WITHOUT_FILL) &&
        !fm5_debug_freed_pattern_intact(fm5_debug_user_data(header), header->user_size))
        return FILL_CORRUPTED;
    return INTACT;
}

static void capture_trace(fm5_debug_block_header *header, enum fm5_debug_trace trace)
{
    unsigned entries = header->stack_trace_entry_count;
    void *frames[FM5_DEBUG_MAXIMUM_STACK_TRACE_ENTRIES];
    fm5_capture_stack_trace(frames, entries, 0);
    uint8_t *footer = fm5_debug_footer(header);
    for (unsigned i = 0; i < entries; i++)
        fm5_debug_footer_store_trace_entry(footer, entries, trace, i, frames[i]);
}

/* ---- reports ---------------------------------------------------------------------------------- */

volatile int fm5_debug_reports_may_load_symbols = 1;

static void append_trace(fm5_text *text, const fm5_debug_block_header *header, enum fm5_debug_trace trace)
{
    unsigned entries = header->stack_trace_entry_count;
    void *frames[FM5_DEBUG_MAXIMUM_STACK_TRACE_ENTRIES];
    const uint8_t *footer = fm5_debug_footer(header);
    for (unsigned i = 0; i < entries; i++)
        frames[i] = fm5_debug_footer_load_trace_entry(footer, entries, trace, i);
    fm5_append_stack_trace(text, frames, entries, fm5_debug_reports_may_load_symbols);
}

static void append_dump(fm5_text *text, const uint8_t *bytes, size_t size)
{
    size_t count = size < DUMP_BYTES ? size : DUMP_BYTES;
    fm5_text_append(text, "Dump of the first ");
    fm5_text_append_unsigned(text, count);
    fm5_text_append(text, " bytes at ");
    fm5_text_append_pointer(text, bytes);
    fm5_text_append(text, ":\r\n");
    for (size_t line = 0; line < count; line += 16) {
        fm5_text_append_hex(text, line, 4);
        fm5_text_append(text, "  ");
        for (size_t i = line; i < line + 16; i++) {
            if (i < count)
                fm5_text_append_hex(text, bytes[i], 2);
            else
                fm5_text_append(text, "  ");
            fm5_text_append_char(text, ' ');
        }
        fm5_text_append_char(text, ' ');
        for (size_t i = line; i < line + 16 && i < count; i++)
            fm5_text_append_char(text, bytes[i] >= 32 && bytes[i] < 127 ? (char)bytes[i] : '.');
        fm5_text_append(text, "\r\n");
    }
}

/* One event about a debug block: what happened, the block's history and a dump. The history is read
 * only when the header's sizes fit the outer block. */
static void report_block(int kind, const void *user, size_t outer_usable, const char *what, const char *extra)
{
    char buffer[REPORT_BYTES];
    fm5_text text;
    fm5_text_init(&text, buffer, sizeof buffer);
    const fm5_debug_block_header *header = fm5_debug_header_of(user);
    fm5_text_append(&text, "fm5: ");
    fm5_text_append(&text, fm5_event_kind_name(kind));
    fm5_text_append(&text, ": ");
    fm5_text_append(&text, what);
    fm5_text_append(&text, ". Pointer: ");
    fm5_text_append_pointer(&text, user);
    fm5_text_append(&text, ". Thread: ");
    fm5_text_append_unsigned(&text, fm5_os_thread_id());
    fm5_text_append(&text, ".\r\n");
    int plausible = header_plausible(header, outer_usable);
    fm5_text_append(&text, "Block: user size ");
    fm5_text_append_unsigned(&text, header->user_size);
    fm5_text_append(&text, ", allocation number ");
    fm5_text_append_unsigned(&text, header->allocation_number);
    fm5_text_append(&text, ", allocation group ");
    fm5_text_append_unsigned(&text, header->allocation_group);
    fm5_text_append(&text, ". Allocated by thread ");
    fm5_text_append_unsigned(&text, header->allocated_by_thread);
    fm5_text_append(&text, " at tick ");
    fm5_text_append_unsigned(&text, header->allocation_tick_count);
    if (header->flags == FM5_DEBUG_BLOCK_FREED) {
        fm5_text_append(&text, ", freed by thread ");
        fm5_text_append_unsigned(&text, header->freed_by_thread);
    }
    fm5_text_append(&text, ".\r\n");
    if (extra) {
        fm5_text_append(&text, extra);
        fm5_text_append(&text, "\r\n");
    }
    if (plausible) {
        fm5_text_append(&text, "Allocated from:\r\n");
        append_trace(&text, header, FM5_DEBUG_ALLOCATION_TRACE);
        if (header->flags == FM5_DEBUG_BLOCK_FREED) {
            fm5_text_append(&text, "Freed from:\r\n");
            append_trace(&text, header, FM5_DEBUG_FREE_TRACE);
        }
    } else {
        fm5_text_append(&text, "The header's sizes do not fit the block: no stack traces.\r\n");
    }
    append_dump(&text, user, plausible ? header->user_size : outer_usable - FM5_DEBUG_HEADER_SIZE);
    fm5_event_deliver(kind, user, plausible ? header->user_size : 0, text.buffer);
}

/* A fingerprint of the damage a check found: the problem, the header's checksummed words, the footer
 * when the header's sizes can be trusted to find it, and a freed block's user data. Never 0. The same
 * damage, unchanged, gives the same fingerprint; any change to the bytes that were checked (almost
 * surely) another. */
static uint32_t damage_fingerprint(enum integrity problem, const fm5_debug_block_header *header, size_t outer_usable)
{
    uint32_t hash = 2166136261u ^ (uint32_t)problem;
    const uint8_t *bytes = (const uint8_t *)header;
    for (size_t i = offsetof(fm5_debug_block_header, header_checksum); i < FM5_DEBUG_HEADER_SIZE; i++)
        hash = (hash ^ bytes[i]) * 16777619u;
    if (header_plausible(header, outer_usable)) {
        const uint8_t *footer = fm5_debug_footer(header);
        size_t footer_size = fm5_debug_footer_size(header->stack_trace_entry_count);
        for (size_t i = 0; i < footer_size; i++)
            hash = (hash ^ footer[i]) * 16777619u;
        if (problem == FILL_CORRUPTED) {
            const uint8_t *user = fm5_debug_user_data(header);
            for (size_t i = 0; i < header->user_size; i++)
                hash = (hash ^ user[i]) * 16777619u;
        }
    }
    return hash | 1u;
}

static const char *integrity_problem_text(enum integrity problem)
{
    switch (problem) {
    case HEADER_CORRUPTED: return "the header checksum or sizes do not match (memory before the block was overwritten)";
    case FOOTER_CORRUPTED: return "the footer checksum does not match (a write past the end of the block)";
    default: return "the block was written to after it was freed";
    }
}

static int integrity_event_kind(enum integrity problem)
{
    switch (problem) {
    case HEADER_CORRUPTED: return FastMM_EventDebugBlockHeaderCorrupted;
    case FOOTER_CORRUPTED: return FastMM_EventDebugBlockFooterCorrupted;
    default: return FastMM_EventFreedBlockModified;
    }
}

/* The same damage found again: one line instead of the whole report. */
static void report_unchanged_damage(enum integrity problem, const void *user)
{
    char buffer[512];
    fm5_text text;
    fm5_text_init(&text, buffer, sizeof buffer);
    fm5_text_append(&text, "fm5: ");
    fm5_text_append(&text, fm5_event_kind_name(integrity_event_kind(problem)));
    fm5_text_append(&text, ": still corrupted, unchanged since it was reported, allocation number ");
    fm5_text_append_unsigned(&text, fm5_debug_header_of(user)->allocation_number);
    fm5_text_append(&text, " (");
    fm5_text_append(&text, integrity_problem_text(problem));
    fm5_text_append(&text, "). Pointer: ");
    fm5_text_append_pointer(&text, user);
    fm5_text_append(&text, ". Thread: ");
    fm5_text_append_unsigned(&text, fm5_os_thread_id());
    fm5_text_append(&text, ".");
    fm5_event_deliver(integrity_event_kind(problem), user, 0, text.buffer);
}

static void report_integrity(enum integrity problem, const void *user, size_t outer_usable)
{
    /* Every check that finds damage reports it; damage reported before and unchanged since is folded
     * into one line (its fingerprint lives in the header's reserved word, outside the checksums). */
    fm5_debug_block_header *header = fm5_debug_header_of(user);
    uint32_t fingerprint = damage_fingerprint(problem, header, outer_usable);
    if (fm5_debug_reported_damage(header) == fingerprint) {
        report_unchanged_damage(problem, user);
        return;
    }
    fm5_debug_set_reported_damage(header, fingerprint);
    switch (problem) {
    case HEADER_CORRUPTED:
        report_block(FastMM_EventDebugBlockHeaderCorrupted, user, outer_usable,
                     "the header checksum or sizes do not match (memory before the block was overwritten)", NULL);
        break;
    case FOOTER_CORRUPTED:
        report_block(FastMM_EventDebugBlockFooterCorrupted, user, outer_usable,
                     "the footer checksum does not match (a write past the end of the block)", NULL);
        break;
    case FILL_CORRUPTED: {
        char ranges[32 * 24 + 64];
        fm5_text extra;
        char described[32 * 24];
        fm5_debug_describe_freed_corruption(user, fm5_debug_header_of(user)->user_size, described, sizeof described);
        fm5_text_init(&extra, ranges, sizeof ranges);
        fm5_text_append(&extra, "Modified bytes at offsets: ");
        fm5_text_append(&extra, described);
        report_block(FastMM_EventFreedBlockModified, user, outer_usable,
                     "the block was written to after it was freed", extra.buffer);
        break;
    }
    default:
        break;
    }
}

/* ---- allocation, release, resizing ------------------------------------------------------------ */

static size_t outer_usable_size(void *outer)
{
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_outer_block(outer, &facts);
    return fm5_live_block_usable_size(outer, identity, &facts);
}

static void *create(size_t user_size)
{
    unsigned entries = fm5_debug_stack_trace_depth;
    unsigned options = fm5_debug_options();
    fm5_debug_block_header *header = fm5_release_get_mem(fm5_debug_outer_block_size(user_size, entries));
    if (!header)
        return NULL;
    memset(header, 0, FM5_DEBUG_HEADER_SIZE);
    header->user_size = user_size;
    header->stack_trace_entry_count = (uint8_t)entries;
    header->allocation_group = fm5_debug_allocation_group;
    header->allocation_number = __atomic_add_fetch(&fm5_debug_last_allocation_number, 1, __ATOMIC_RELAXED);
    header->allocation_tick_count = fm5_os_tick_ms();
    header->allocated_by_thread = fm5_os_thread_id();
    header->flags = FM5_DEBUG_BLOCK_IN_USE;
    header->reserved_byte = (uint8_t)(((options & FastMM_DebugNoChecksums) ? BLOCK_WITHOUT_CHECKSUMS : 0) |
                                      ((options & FastMM_DebugNoFillPatterns) ? BLOCK_WITHOUT_FILL : 0));
    capture_trace(header, FM5_DEBUG_ALLOCATION_TRACE);
    uint8_t *footer = fm5_debug_footer(header);
    for (unsigned i = 0; i < entries; i++)
        fm5_debug_footer_store_trace_entry(footer, entries, FM5_DEBUG_FREE_TRACE, i, NULL);
    uint32_t reserved = 0;
    memcpy(footer + fm5_debug_footer_reserved_offset(entries), &reserved, sizeof reserved);
    seal(header);
    if (header->allocation_number == fm5_debug_break_allocation_number)
        fm5_os_debug_break();
    return header;
}

void *fm5_debug_get_mem(size_t user_size, int zeroed)
{
    fm5_debug_block_header *header = create(user_size);
    if (!header)
        return NULL;
    uint8_t *user = fm5_debug_user_data(header);
    if (zeroed)
        fm5_zero_fill(user, user_size);
    else if (!(header->reserved_byte & BLOCK_WITHOUT_FILL))
        fm5_debug_fill_allocated(user, user_size);
    set_has_debug_info(header, 1);
    return user;
}

/* Checks a live block before an operation on it; reports and returns 0 when it is corrupted. */
static int live_block_intact(void *user, size_t *outer_usable)
{
    fm5_debug_block_header *header = fm5_debug_header_of(user);
    *outer_usable = outer_usable_size(header);
    enum integrity problem = check_block(header, *outer_usable, 0);
    if (problem == INTACT)
        return 1;
    report_integrity(problem, user, *outer_usable);
    return 0;
}

static int release(void *user)
{
    fm5_debug_block_header *header = fm5_debug_header_of(user);
    set_has_debug_info(header, 0);
    header->freed_by_thread = fm5_os_thread_id();
    capture_trace(header, FM5_DEBUG_FREE_TRACE);
    if (header->user_size >= sizeof(void *))
        memcpy(&header->previously_used_by_class, user, sizeof(void *));
    if (!(header->reserved_byte & BLOCK_WITHOUT_FILL))
        fm5_debug_fill_freed(user, header->user_size);
    header->flags = FM5_DEBUG_BLOCK_FREED;
    seal(header);
    set_has_debug_info(header, 1);
    return fm5_release_free_mem(header);
}

int fm5_debug_free_mem(void *user)
{
    size_t outer_usable;
    if (!live_block_intact(user, &outer_usable))
        return -1;
    return release(user);
}

void *fm5_debug_realloc_mem(void *user, size_t new_size)
{
    size_t outer_usable;
    if (!live_block_intact(user, &outer_usable))
        return NULL;
    fm5_debug_block_header *header = fm5_debug_header_of(user);
    unsigned entries = header->stack_trace_entry_count;
    size_t footer_size = fm5_debug_footer_size(entries);
    if (new_size <= outer_usable - FM5_DEBUG_HEADER_SIZE - footer_size) {
        set_has_debug_info(header, 0);
        uint8_t *old_footer = fm5_debug_footer(header);
        memmove((uint8_t *)user + new_size, old_footer, footer_size);
        header->user_size = new_size;
        seal(header);
        set_has_debug_info(header, 1);
        return user;
    }
    fm5_debug_block_header *moved = create(new_size);
    if (!moved)
        return NULL;
    /* The block keeps its identity: allocation number, group, thread, tick and allocation trace. */
    moved->allocation_number = header->allocation_number;
    moved->allocation_group = header->allocation_group;
    moved->allocated_by_thread = header->allocated_by_thread;
    moved->allocation_tick_count = header->allocation_tick_count;
    unsigned copied_entries = entries < moved->stack_trace_entry_count ? entries : moved->stack_trace_entry_count;
    for (unsigned i = 0; i < copied_entries; i++)
        fm5_debug_footer_store_trace_entry(
            fm5_debug_footer(moved), moved->stack_trace_entry_count, FM5_DEBUG_ALLOCATION_TRACE, i,
            fm5_debug_footer_load_trace_entry(fm5_debug_footer(header), entries, FM5_DEBUG_ALLOCATION_TRACE, i));
    uint8_t *moved_user = fm5_debug_user_data(moved);
    memcpy(moved_user, user, header->user_size < new_size ? header->user_size : new_size);
    seal(moved);
    set_has_debug_info(moved, 1);
    release(user);
    return moved_user;
}

void *fm5_debug_realloc_ordinary(void *p, size_t available, size_t new_size)
{
    fm5_debug_block_header *header = create(new_size);
    if (!header)
        return NULL;
    uint8_t *user = fm5_debug_user_data(header);
    memcpy(user, p, available < new_size ? available : new_size);
    set_has_debug_info(header, 1);
    fm5_release_free_mem(p);
    return user;
}

size_t fm5_debug_current_user_size(const void *user)
{
    return fm5_debug_header_of(user)->user_size;
}

void fm5_debug_report_freed_block_misuse(int kind, const void *user)
{
    void *outer = fm5_debug_header_of(user);
    /* A freed small or medium outer block is still committed; its size comes from its manager. */
    size_t outer_usable = fm5_block_usable_size_by_status(outer);
    report_block(kind, user, outer_usable,
                 kind == FastMM_EventDoubleFree ? "the block is already free" : "the block was freed before", NULL);
}

void fm5_debug_report_leaked_block(const void *user, size_t outer_usable)
{
    report_block(FastMM_EventMemoryLeak, user, outer_usable, "the block was never freed", NULL);
}

/* ---- the live blocks behind a walk ------------------------------------------------------------- */

int fm5_walk_item_live_user_block(const fm5_walk_item *item, fm5_live_user_block *block)
{
    if (item->is_free || item->is_unused ||
        !(item->kind & (FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock)))
        return 0;
    uint16_t status = *fm5_status_word(item->address);
    if (fm5_status_is_pending_free(status))
        return 0;
    block->user = item->address;
    block->size = item->usable_size;
    block->is_debug_block = (status & FM5_STATUS_HAS_DEBUG_INFO) != 0;
    if (block->is_debug_block) {
        const fm5_debug_block_header *header = item->address;
        if (header->flags != FM5_DEBUG_BLOCK_IN_USE)
            return 0;
        block->user = fm5_debug_user_data(header);
        block->size = header->user_size;
    }
    return 1;
}

/* ---- reuse and scanning ----------------------------------------------------------------------- */

/* The release managers' freed-block check: 1 if the block is intact and may be reused; 0 if it is
 * corrupted and must stay out of circulation, reported when `report`. Runs under a manager's lock. */
static int freed_block_reusable(void *outer, size_t outer_usable, int report)
{
    fm5_debug_block_header *header = outer;
    enum integrity problem = check_block(header, outer_usable, 1);
    if (problem == INTACT)
        return 1;
    if (report)
        report_integrity(problem, fm5_debug_user_data(header), outer_usable);
    return 0;
}

typedef struct scan_state {
    int corrupted;
} scan_state;

/* Every debug block, live, freed or quarantined, is checked at every scan, however often it was
 * reported before. */
FM5_OPTIMISTIC_READER static int scan_block(const fm5_walk_item *item, void *context)
{
    scan_state *state = context;
    if (item->is_unused || !(item->kind & (FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock)))
        return 0;
    const void *outer = item->address;
    fm5_debug_block_header *header = item->address;
    unsigned status = 0;
    enum integrity problem = INTACT;
    /* A live block may be changing under its owner's hands (the owner clears HasDebugInfo first): a
     * mismatch counts only if it persists while the flag stays set. A block whose header says freed
     * while its outer block is still live is on its way to its manager.
     * Whether the block is free is read from its status word at each attempt, never from the walk's
     * item: the lock-free sequential feed hands out a small block that the item called free, and its
     * new owner may have made it a live debug block before this check reads it. A mismatch counts
     * only when the status word stayed the same across the check. */
    for (int attempt = 0; attempt < SCAN_RETRIES; attempt++) {
        status = fm5_status_load(outer);
        if (!(status & FM5_STATUS_HAS_DEBUG_INFO))
            return 0;
        int freed = (status & FM5_STATUS_FREE) || fm5_status_is_pending_free(status) ||
                    header->flags == FM5_DEBUG_BLOCK_FREED;
        problem = check_block(header, item->usable_size, freed);
        if (problem == INTACT)
            return 0;
        if (fm5_status_load(outer) == status && freed)
            break;
        fm5_os_yield();
    }
    if (fm5_status_load(outer) != status)
        return 0;
    state->corrupted = 1;
    report_integrity(problem, fm5_debug_user_data(header), item->usable_size);
    return 0;
}

int FM5_CALL FastMM_ScanDebugBlocksForCorruption(void)
{
    scan_state state = { 0 };
    fm5_walk_all(scan_block, &state, 1000);
    /* Quarantined blocks that are intact again (the damage was undone) go back into use. */
    fm5_release_requeue_quarantine();
    return !state.corrupted;
}

void fm5_debug_initialize(void)
{
    fm5_recycling_set_freed_block_check(freed_block_reusable);
}
