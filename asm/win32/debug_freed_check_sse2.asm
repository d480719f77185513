; The SSE2 part of the freed-pattern check for Win32 (seed 001). Reached only by the tail jump from
; fm5_debug_freed_pattern_intact (debug_freed_check.asm) for user areas of
; FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE bytes and more on a processor with SSE2, after the marker
; slot; never called. It compares the whole 16-byte units after the slot with the pattern, ANDing the
; byte-equal masks in two accumulators (pand, no branch on the data) and leaving its loop once, then
; jumps back to the scalar tails for the last 0-15 bytes.
; C twin: the 32-byte loop of fm5_c_debug_freed_pattern_intact (src/debug/debug_freed_check.c).
; In: ecx = end of the area, edx = offset of the pattern's first byte from it (negative), eax = the
; marker's difference, ebx saved on the stack. Out (to the tails): edx = offset of the rest.

%include "fm5_layout.inc"
%include "routine.inc"

extern fm5_debug_freed_pattern_check_tails

%define FREED_FILL_DWORD (FM5_DEBUG_FREED_FILL_BYTE * 0x01010101)

%if FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE - FM5_DEBUG_FREED_OBJECT_SLOT_SIZE < 3 * 16
%error "the loop below needs at least three whole units after the marker slot"
%endif

ROUTINE fm5_debug_freed_pattern_intact_sse2
    mov ebx, FREED_FILL_DWORD
    movd xmm0, ebx
    pshufd xmm0, xmm0, 0
    pcmpeqb xmm1, xmm1                  ; all bytes equal so far
    movdqa xmm4, xmm1
    movd xmm5, eax                      ; the marker's difference, while eax points
    mov ebx, edx
    neg ebx
    and ebx, -16                        ; bytes in whole units
    add edx, ebx                        ; the tails' offset from the end
    lea eax, [ecx + edx]                ; end of the whole units
    neg ebx
    test ebx, 16
    jz .next_pair
    movdqu xmm2, [eax + ebx]            ; an odd unit first, so that the loop takes pairs
    pcmpeqb xmm2, xmm0
    pand xmm1, xmm2
    add ebx, 16
    align 32                            ; the loop in one 64-byte line
.next_pair:
    movdqu xmm2, [eax + ebx]
    movdqu xmm3, [eax + ebx + 16]
    pcmpeqb xmm2, xmm0
    pcmpeqb xmm3, xmm0
    pand xmm1, xmm2
    pand xmm4, xmm3
    add ebx, 32
    jnz .next_pair
    pand xmm1, xmm4
    pmovmskb ebx, xmm1
    xor ebx, 0xFFFF                     ; a set bit for every byte that differs
    movd eax, xmm5
    or eax, ebx
    jmp fm5_debug_freed_pattern_check_tails
END_ROUTINE fm5_debug_freed_pattern_intact_sse2
