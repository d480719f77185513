; Calls into Delphi register-convention functions from C, for test_borlndmm and the sharing test's
; protocol module on Win32. Written apart from fm5's own thunks
; (asm/delphi/) so that the test does not check fm5's understanding of the convention with itself.

    section .bss
    global register_call_stack_error
register_call_stack_error: resd 1   ; bytes the callee left on (or took off) the stack, 0 when right

    section .text
; size_t register_call(const void *code, const size_t *arguments, unsigned count), cdecl.
; The first three arguments go in eax, edx, ecx; the rest are pushed left to right; the callee must
; remove them. ebx, esi, edi, ebp must survive (the function checks esp only; the others are kept by
; being callee-saved here too and checked by the C side through the results).
    global register_call
register_call:
    push ebp
    mov ebp, esp
    push ebx
    push esi
    push edi
    mov esi, [ebp + 12]          ; arguments
    mov ecx, [ebp + 16]          ; count
    mov edi, esp                 ; esp before the stack arguments
    mov ebx, 3
.push_stack_arguments:
    cmp ebx, ecx
    jae .registers
    push dword [esi + 4 * ebx]
    inc ebx
    jmp .push_stack_arguments
.registers:
    mov eax, [esi]
    mov edx, [esi + 4]
    mov ecx, [esi + 8]
    call [ebp + 8]
    mov ecx, esp
    sub ecx, edi
    mov [register_call_stack_error], ecx
    mov esp, edi
    pop edi
    pop esi
    pop ebx
    pop ebp
    ret
