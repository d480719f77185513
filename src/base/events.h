/* Reporting misuse and failures: the program's callback, the event log file and OutputDebugString. */
#ifndef FM5_EVENTS_H
#define FM5_EVENTS_H

#include "fm5.h"
#include "base/platform.h"

/* The event kind's name as reports begin with it ("Double free"). */
const char *fm5_event_kind_name(int kind);

/* Formats and delivers one event. `detail` says what happened, in a sentence without a final period. */
void fm5_event_report(int kind, const void *pointer, size_t size, const char *detail);

/* Delivers an already formatted message (debug-mode reports build their own). */
void fm5_event_deliver(int kind, const void *pointer, size_t size, const char *text);

#endif
