; fm5's TMemoryManagerEx entries in Delphi's register convention, and cdecl callers of another
; module's register routines, for Win32 (api/delphi_interface.h). Assembled in every Win32 build, the
; pure-C ones too: C cannot declare this convention, so these have no C twin; tests/borlndmm and
; tests/sharing call them from register-convention NASM stubs.

%include "register_convention.inc"

extern fm5_delphi_c_get_mem
extern fm5_delphi_c_free_mem
extern fm5_delphi_c_realloc_mem
extern fm5_delphi_c_alloc_mem
extern fm5_delphi_c_register_expected_leak
extern fm5_delphi_c_unregister_expected_leak

REGISTER_TO_CDECL fm5_delphi_get_mem, fm5_delphi_c_get_mem, 1, 0
REGISTER_TO_CDECL fm5_delphi_free_mem, fm5_delphi_c_free_mem, 1, 0
REGISTER_TO_CDECL fm5_delphi_realloc_mem, fm5_delphi_c_realloc_mem, 2, 0
REGISTER_TO_CDECL fm5_delphi_alloc_mem, fm5_delphi_c_alloc_mem, 1, 0
REGISTER_TO_CDECL fm5_delphi_register_expected_leak, fm5_delphi_c_register_expected_leak, 1, 0
REGISTER_TO_CDECL fm5_delphi_unregister_expected_leak, fm5_delphi_c_unregister_expected_leak, 1, 0

; size_t fm5_delphi_call1(const void *code, size_t a), cdecl: code(a) in the register convention. A
; register routine of one or two arguments takes nothing from the stack, so a tail jump hands it this
; function's own return address and the caller's stack as it was.
    section .text
    align 16
    global fm5_delphi_call1
fm5_delphi_call1:
    mov ecx, [esp + 4]
    mov eax, [esp + 8]
    jmp ecx

; size_t fm5_delphi_call2(const void *code, size_t a, size_t b), cdecl: code(a, b).
    align 16
    global fm5_delphi_call2
fm5_delphi_call2:
    mov ecx, [esp + 4]
    mov eax, [esp + 8]
    mov edx, [esp + 12]
    jmp ecx
