; The freed-pattern check for Win64. C twin: fm5_c_debug_freed_pattern_intact
; (src/debug/debug_freed_check.c), whose instruction flow this follows: the freed-object marker, then 32
; bytes per iteration ORing the differences from the pattern (one loop exit, a run time independent of
; the data), then 8, 4, 2 and 1 byte tails counted up to the end of the area.
;
; Seed 001: user areas of FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE bytes and more leave by a tail jump
; (jmp, no call: this routine saves nothing and keeps its layout whether or not the SSE2 routine exists)
; to fm5_debug_freed_pattern_intact_sse2, which checks the whole 16-byte units and jumps back to the
; tails below. Smaller areas run exactly the instructions of the build without SSE2
; (FM5_SSE2_CHECKER=OFF), apart from the one compare.
; In: rcx = user area (any alignment), rdx = size. Out: eax = 1 intact, 0 corrupted.

default rel
%include "fm5_layout.inc"
%include "routine.inc"

extern fm5_freed_object_class_table
%if FM5_SSE2_CHECKER
extern fm5_debug_freed_pattern_intact_sse2
%endif

%define FREED_FILL_WORD (FM5_DEBUG_FREED_FILL_BYTE * 0x0101010101010101)

ROUTINE fm5_debug_freed_pattern_intact
    mov r8, FREED_FILL_WORD
    xor eax, eax                        ; the differences, ORed
    xor r9d, r9d                        ; where the pattern starts
    cmp rdx, FM5_DEBUG_FREED_OBJECT_MINIMUM_SIZE
    jb .marker_checked
    lea rax, [fm5_freed_object_class_table + FM5_FREED_OBJECT_MARKER_OFFSET]
    xor rax, [rcx]
    mov r9d, FM5_POINTER_SIZE
.marker_checked:
%if FM5_SSE2_CHECKER
    cmp rdx, FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE
    jae fm5_debug_freed_pattern_intact_sse2
%endif
    ; r10 = end of the area, r9 = offset from it (negative, counting up to 0)
    lea r10, [rcx + rdx]
    sub r9, rdx
    cmp r9, -32
    jg fm5_debug_freed_pattern_check_tails
    ; The loop's 53 bytes in one 64-byte line: where the SSE2 test before it pushed it across a line
    ; boundary, seed 001's 64-byte control ran 4.4 % slower than the build without that test.
    align 64
.next_32:
    mov r11, [r10 + r9]
    xor r11, r8
    or rax, r11
    mov r11, [r10 + r9 + 8]
    xor r11, r8
    or rax, r11
    mov r11, [r10 + r9 + 16]
    xor r11, r8
    or rax, r11
    mov r11, [r10 + r9 + 24]
    xor r11, r8
    or rax, r11
    add r9, 32
    cmp r9, -32
    jle .next_32
; The tails, also the SSE2 routine's way back. In: rax = differences so far, r8 = pattern, r10 = end,
; r9 = offset of the first unchecked byte from the end (-31..0).
global fm5_debug_freed_pattern_check_tails
fm5_debug_freed_pattern_check_tails:
    cmp r9, -8
    jg .tail_4
.next_8:
    mov r11, [r10 + r9]
    xor r11, r8
    or rax, r11
    add r9, 8
    cmp r9, -8
    jle .next_8
.tail_4:
    cmp r9, -4
    jg .tail_2
    mov r11d, [r10 + r9]
    xor r11d, r8d
    or rax, r11
    add r9, 4
.tail_2:
    cmp r9, -2
    jg .tail_1
    movzx r11d, word [r10 + r9]
    xor r11d, FREED_FILL_WORD & 0xFFFF
    or rax, r11
    add r9, 2
.tail_1:
    test r9, r9
    jz .verdict
    movzx r11d, byte [r10 + r9]
    xor r11d, FM5_DEBUG_FREED_FILL_BYTE
    or rax, r11
.verdict:
    test rax, rax
    sete al
    movzx eax, al
    ret
END_ROUTINE fm5_debug_freed_pattern_intact
