/* The freed-object table: 75 entries, each reporting that a virtual method of a freed object was called.
 *
 * Calling conventions. The caller is foreign code that believes it calls a method, so an entry must
 * survive every convention a method can have:
 *   - Win64 has one convention and the caller always removes its own arguments: any call is harmless.
 *   - Win32: an entry takes no parameter, touches no argument register or stack slot and returns with a
 *     plain `ret`, as a cdecl function does. That is harmless for cdecl, for Delphi's register
 *     convention and fastcall with up to their register arguments, and for thiscall/stdcall methods
 *     without stack arguments. A stdcall or thiscall method that has stack arguments expects the
 *     callee to remove them; an entry does not, so after the report such a caller continues with its
 *     stack pointer off by the size of those arguments (an MSVC scalar deleting destructor is one:
 *     4 bytes). The report is made first, which is the point of the table; what follows is the same
 *     undefined territory as the call itself. A method returning a floating-point value on Win32
 *     finds nothing on the x87 stack and reads a NaN.
 * The entries return 0 so that a method returning a pointer or a count returns NULL or nothing. */
#include "debug/debug_freed_object.h"
#include "base/events.h"

__attribute__((cold)) static void report_virtual_call_on_freed_object(unsigned virtual_method_index)
{
    (void)virtual_method_index;
    fm5_event_report(FastMM_EventVirtualCallOnFreedObject, NULL, 0, "a virtual method was called on a freed object");
}

fm5_freed_object_call_handler fm5_freed_object_call_hook = report_virtual_call_on_freed_object;

/* One shared body keeps each entry down to passing its index and jumping here. */
__attribute__((cold)) FM5_NOINLINE static intptr_t freed_object_method_called(unsigned virtual_method_index)
{
    fm5_freed_object_call_handler handler = __atomic_load_n(&fm5_freed_object_call_hook, __ATOMIC_ACQUIRE);
    if (!handler)
        handler = report_virtual_call_on_freed_object;
    handler(virtual_method_index);
    return 0;
}

/* The entries differ only in their index; generating them keeps the index and the table position from
 * ever disagreeing. FOR_TEN_INDEXES pastes a tens digit (empty for 0..9) in front of each units digit. */
#define FOR_TEN_INDEXES(apply, tens) \
    apply(tens##0) apply(tens##1) apply(tens##2) apply(tens##3) apply(tens##4) \
    apply(tens##5) apply(tens##6) apply(tens##7) apply(tens##8) apply(tens##9)
#define FOR_EACH_VIRTUAL_METHOD_INDEX(apply)                                                   \
    FOR_TEN_INDEXES(apply, ) FOR_TEN_INDEXES(apply, 1) FOR_TEN_INDEXES(apply, 2)               \
    FOR_TEN_INDEXES(apply, 3) FOR_TEN_INDEXES(apply, 4) FOR_TEN_INDEXES(apply, 5)              \
    FOR_TEN_INDEXES(apply, 6) apply(70) apply(71) apply(72) apply(73) apply(74)

#define DEFINE_FREED_OBJECT_METHOD(index)                                                      \
    __attribute__((cold)) static intptr_t __cdecl freed_object_method_##index(void)            \
    {                                                                                          \
        return freed_object_method_called(index);                                              \
    }
FOR_EACH_VIRTUAL_METHOD_INDEX(DEFINE_FREED_OBJECT_METHOD)

#define FREED_OBJECT_METHOD_ENTRY(index) freed_object_method_##index,

const fm5_freed_object_class fm5_freed_object_class_table = {
    {NULL, NULL},
    {FOR_EACH_VIRTUAL_METHOD_INDEX(FREED_OBJECT_METHOD_ENTRY)},
};

#define COUNT_ONE(index) +1
_Static_assert(0 FOR_EACH_VIRTUAL_METHOD_INDEX(COUNT_ONE) == FM5_FREED_OBJECT_VIRTUAL_METHOD_COUNT,
               "one generated entry per virtual method slot");
