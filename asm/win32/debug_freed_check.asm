; The freed-pattern check for Win32. C twin: fm5_c_debug_freed_pattern_intact
; (src/debug/debug_freed_check.c), whose instruction flow this follows: the freed-object marker (on
; Win32 the slot's second dword is fill and is checked with the rest), then 32 bytes per iteration ORing
; the differences from the pattern (one loop exit, a run time independent of the data), then 8, 4, 2 and
; 1 byte tails counted up to the end of the area.
;
; Seed 001: user areas of FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE bytes and more leave by a tail jump
; (jmp, no call: the routine saves the same one register either way and keeps its layout whether or not
; the SSE2 routine exists) to fm5_debug_freed_pattern_intact_sse2, when the processor has SSE2
; (fm5_cpu_has_sse2, detected once at start-up), which checks the whole 16-byte units and jumps back to
; the tails below. Smaller areas run exactly the instructions of the build without SSE2
; (FM5_SSE2_CHECKER=OFF), apart from the one compare.
; In: [esp + 4] = user area (any alignment), [esp + 8] = size. Out: eax = 1 intact, 0 corrupted.

%include "fm5_layout.inc"
%include "routine.inc"

extern fm5_freed_object_class_table
%if FM5_SSE2_CHECKER
extern fm5_debug_freed_pattern_intact_sse2
extern fm5_cpu_has_sse2
%endif

%define FREED_FILL_DWORD (FM5_DEBUG_FREED_FILL_BYTE * 0x01010101)
%define SIZE_ARGUMENT (esp + 4 + 8)     ; ebx is saved

ROUTINE fm5_debug_freed_pattern_intact
    push ebx
    mov ecx, [esp + 4 + 4]
    mov edx, [SIZE_ARGUMENT]
    xor eax, eax                        ; the differences, ORed
    ; ecx = end of the area, edx = offset from it (negative, counting up to 0)
    add ecx, edx
    neg edx
    cmp dword [SIZE_ARGUMENT], FM5_DEBUG_FREED_OBJECT_MINIMUM_SIZE
    jb .marker_checked
    mov eax, [ecx + edx]
    xor eax, fm5_freed_object_class_table + FM5_FREED_OBJECT_MARKER_OFFSET
    add edx, FM5_POINTER_SIZE
.marker_checked:
%if FM5_SSE2_CHECKER
    cmp dword [SIZE_ARGUMENT], FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE
    jb .scalar
    cmp byte [fm5_cpu_has_sse2], 0
    jne fm5_debug_freed_pattern_intact_sse2
.scalar:
%endif
    cmp edx, -32
    jg fm5_debug_freed_pattern_check_tails
    ; The loop in one 64-byte line, whatever the tests before it (see the Win64 routine).
    align 64
.next_32:
%assign position 0
%rep 8
    mov ebx, [ecx + edx + position]
    xor ebx, FREED_FILL_DWORD
    or eax, ebx
%assign position position + 4
%endrep
    add edx, 32
    cmp edx, -32
    jle .next_32
; The tails, also the SSE2 routine's way back. In: eax = differences so far, ecx = end, edx = offset of
; the first unchecked byte from the end (-31..0), ebx saved on the stack.
global fm5_debug_freed_pattern_check_tails
fm5_debug_freed_pattern_check_tails:
    cmp edx, -8
    jg .tail_4
.next_8:
    mov ebx, [ecx + edx]
    xor ebx, FREED_FILL_DWORD
    or eax, ebx
    mov ebx, [ecx + edx + 4]
    xor ebx, FREED_FILL_DWORD
    or eax, ebx
    add edx, 8
    cmp edx, -8
    jle .next_8
.tail_4:
    cmp edx, -4
    jg .tail_2
    mov ebx, [ecx + edx]
    xor ebx, FREED_FILL_DWORD
    or eax, ebx
    add edx, 4
.tail_2:
    cmp edx, -2
    jg .tail_1
    movzx ebx, word [ecx + edx]
    xor ebx, FREED_FILL_DWORD & 0xFFFF
    or eax, ebx
    add edx, 2
.tail_1:
    test edx, edx
    jz .verdict
    movzx ebx, byte [ecx + edx]
    xor ebx, FM5_DEBUG_FREED_FILL_BYTE
    or eax, ebx
.verdict:
    test eax, eax
    sete al
    movzx eax, al
    pop ebx
    ret
END_ROUTINE fm5_debug_freed_pattern_intact
