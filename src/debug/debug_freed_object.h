/* The freed-object marker: what debug mode writes over the first pointer of a freed block that was big
 * enough to be an object. For an object that pointer is its class (Delphi) or virtual method table
 * (C++), so a program that calls a virtual method through a dangling object pointer lands in a table
 * whose every entry reports the call, instead of jumping through whatever the block holds next. */
#ifndef FM5_DEBUG_FREED_OBJECT_H
#define FM5_DEBUG_FREED_OBJECT_H

#include "base/platform.h"

/* As many virtual methods as FastMM5's freed-object class provides. */
#define FM5_FREED_OBJECT_VIRTUAL_METHOD_COUNT 75

/* An entry of the table. The entries take no parameter and return 0; why that is callable as any
 * method is explained in debug_freed_object.c. */
typedef intptr_t(__cdecl *fm5_freed_object_method)(void);

/* The marker is the address of `virtual_methods`. The two null slots before it are where compilers look
 * for run-time type information (MSVC: vptr[-1]; GCC and clang: vptr[-1] and vptr[-2]); a dynamic_cast
 * or typeid on a freed object then reads zeros that belong to this table, not neighbouring data. */
typedef struct fm5_freed_object_class {
    const void *reserved_for_type_information[2];
    fm5_freed_object_method virtual_methods[FM5_FREED_OBJECT_VIRTUAL_METHOD_COUNT];
} fm5_freed_object_class;

extern const fm5_freed_object_class fm5_freed_object_class_table;

/* Inline, so that the freed-pattern checker and fill stay leaf routines: the marker is a link-time
 * constant (one lea or immediate), not a call. */
FM5_INLINE const void *fm5_freed_object_marker(void)
{
    return fm5_freed_object_class_table.virtual_methods;
}

/* Called by every entry of the table with the entry's index (0-based). The default reports the call as
 * an event and returns; debug mode can replace it with a handler that records a stack trace. Storing
 * NULL restores the default. Read atomically by the entries, so it may be changed while other threads
 * run. */
typedef void (*fm5_freed_object_call_handler)(unsigned virtual_method_index);
extern fm5_freed_object_call_handler fm5_freed_object_call_hook;

#endif
