/*
 * events.h — the event recorder: what fm5 reported, through FastMM_SetEventCallback.
 *
 * One recorder for every test. It counts the events of each kind, keeps the last event (its kind,
 * pointer, size and the first TU_EVENT_TEXT - 1 bytes of its text), and, when installed with
 * TU_KEEP_ALL_EVENTS, also stores every event with its whole text: a debug-block report (stack traces
 * and a 256-byte dump) is longer than 1 KB, and a scan reports many blocks at once. The store holds up
 * to TU_EVENTS_MAX_STORED events in memory taken from the OS (never from fm5, and not at all unless a
 * test asks for it).
 */
#ifndef FM5_TEST_EVENTS_H
#define FM5_TEST_EVENTS_H

#include "arch.h"

#include "fm5.h"

#define TU_EVENT_KINDS 16 /* kinds counted one by one; any other kind is counted as kind 0 */
#define TU_EVENT_TEXT 1024 /* the buffer that keeps the last event's text, NUL included */
#define TU_EVENTS_MAX_STORED 8192u
#define TU_EVENTS_TEXT_BYTES (24u * 1024u * 1024u)

/* What tu_events_install keeps besides the counts. */
#define TU_KEEP_LAST_EVENT 0
#define TU_KEEP_ALL_EVENTS 1

/* One stored event. */
typedef struct tu_event {
    int kind;
    const void *pointer;
    size_t size;
    const char *text; /* NUL-terminated; cut short only when the text store is full */
} tu_event;

/* Tests run unattended: events go to the recorder, not to a log file beside the executable nor to
 * the debugger channel. tu_events_install does this itself; a test with a callback of its own calls it. */
void tu_disable_event_log(void);

/* Resets the recorder and makes it fm5's event callback. `keep` is TU_KEEP_LAST_EVENT or
 * TU_KEEP_ALL_EVENTS. Returns 0 when the OS refused the memory of the store (the counts and the last
 * event then still work), else 1. */
int tu_events_install(int keep);

/* Forgets every event: counts, the last event and the stored ones. */
void tu_events_reset(void);

/* Events of `kind` since the last reset (0 for a kind outside [0, TU_EVENT_KINDS)). */
long tu_events_count(int kind);
long tu_events_total(void);

/* Copies the last event out under the recorder's lock; any output pointer may be NULL. */
void tu_events_last(int *kind, const void **pointer, size_t *size, char *text, size_t text_size);

/* The stored events (with TU_KEEP_ALL_EVENTS): how many, how many found the store full, the i-th (NULL
 * past the end), and the first about `pointer` of `kind` (any kind: 0), or NULL. */
size_t tu_events_stored(void);
long tu_events_dropped(void);
const tu_event *tu_events_get(size_t i);
const tu_event *tu_events_find(int kind, const void *pointer);

/* The FastMM_Event* name of a kind without its prefix, or "?". */
const char *tu_event_kind_name(int kind);

/* Reading event texts. */

/* Whether `text` holds the hexadecimal digits of `value`, in either case and with any zero padding:
 * fm5 may print 0x0000ABCD, ABCD or abcd. */
int tu_text_mentions_hex(const char *text, uintptr_t value);

/* Copies the rest of the line that follows `label` in `text` (without the line break) into `out`.
 * Returns 0 when `label` does not occur. */
int tu_text_line_after(const char *text, const char *label, char *out, size_t out_size);

/* The "offset(length)" list of a FreedBlockModified report, e.g. "50(1) 64(8)". */
#define TU_MODIFIED_OFFSETS_LABEL "Modified bytes at offsets: "
int tu_modified_offsets(const char *text, char *out, size_t out_size);

#endif /* FM5_TEST_EVENTS_H */
