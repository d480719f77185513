; The toy manager's TMemoryManagerEx entries in Delphi's register convention (protocol_module.c): the
; argument(s) come in eax (and edx) and go to the cdecl toy functions; both registers are passed on, and
; the one-argument functions ignore the second.
    section .text
%macro ENTRY 2
    global %1
    extern %2
%1:
    push edx
    push eax
    call %2
    add esp, 8
    ret
%endmacro
ENTRY toy_register_get_mem, toy_get_mem
ENTRY toy_register_free_mem, toy_free_mem
ENTRY toy_register_realloc_mem, toy_realloc_mem
ENTRY toy_register_alloc_mem, toy_alloc_mem
ENTRY toy_register_register_leak, toy_register_leak
ENTRY toy_register_unregister_leak, toy_unregister_leak
