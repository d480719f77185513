/* Stack traces on the host build: the C library's unwinder (backtrace, from the .eh_frame tables) to
 * capture, and the dynamic linker (dladdr) to name modules and exported symbols. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "debug/stack_trace.h"
#include "base/os.h"

#include <dlfcn.h>
#include <execinfo.h>

/* The base of the shared object fm5 is linked into: leading frames inside it are fm5's own calls. A
 * static build is part of the program, so there only `skip` applies. */
static void *own_module_base(void)
{
#ifndef FM5_STATIC
    static void *base;
    if (!base) {
        Dl_info info;
        if (dladdr((void *)own_module_base, &info))
            base = info.dli_fbase;
    }
    return base;
#else
    return NULL;
#endif
}

static int inside_own_module(void *address, void *own)
{
    Dl_info info;
    return own && dladdr(address, &info) && info.dli_fbase == own;
}

unsigned fm5_capture_stack_trace(void **frames, unsigned count, unsigned skip)
{
    if (count > FM5_MAXIMUM_STACK_TRACE_DEPTH)
        count = FM5_MAXIMUM_STACK_TRACE_DEPTH;
    unsigned captured = 0;
    if (count) {
        void *raw[FM5_MAXIMUM_STACK_TRACE_DEPTH + 32];
        void *own = own_module_base();
        int available = backtrace(raw, (int)(count + 32));
        /* raw[0] is inside this function: skipped, as the Windows build's capture skips it. */
        unsigned first = 1;
        while (own && first < (unsigned)available && inside_own_module(raw[first], own))
            first++;
        first += skip;
        for (; first < (unsigned)available && captured < count; first++)
            frames[captured++] = raw[first];
    }
    for (unsigned i = captured; i < count; i++)
        frames[i] = NULL;
    return captured;
}

void fm5_append_stack_trace(fm5_text *text, void *const *frames, unsigned count, int may_load_symbols)
{
    (void)may_load_symbols;  /* dladdr reads tables that are already loaded */
    for (unsigned i = 0; i < count && frames[i]; i++) {
        fm5_text_append(text, "    ");
        fm5_text_append_pointer(text, frames[i]);
        Dl_info info;
        if (dladdr(frames[i], &info) && info.dli_fname) {
            const char *name = info.dli_fname;
            for (const char *c = info.dli_fname; *c; c++)
                if (*c == '/')
                    name = c + 1;
            fm5_text_append(text, "  ");
            fm5_text_append(text, name);
            fm5_text_append(text, "+0x");
            fm5_text_append_hex(text, (uintptr_t)frames[i] - (uintptr_t)info.dli_fbase, 8);
            if (info.dli_sname) {
                fm5_text_append(text, "  [");
                fm5_text_append(text, info.dli_sname);
                fm5_text_append(text, "+0x");
                uintptr_t displacement = (uintptr_t)frames[i] - (uintptr_t)info.dli_saddr;
                fm5_text_append_hex(text, displacement, displacement > 0xFFFF ? 8 : 4);
                fm5_text_append(text, "]");
            }
        }
        fm5_text_append(text, "\r\n");
    }
}
