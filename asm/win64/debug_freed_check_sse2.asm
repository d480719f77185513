; The SSE2 part of the freed-pattern check for Win64 (seed 001). Reached only by the tail jump from
; fm5_debug_freed_pattern_intact (debug_freed_check.asm) for user areas of
; FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE bytes and more, after the marker slot; never called. It
; compares the whole 16-byte units after the slot with the pattern, ANDing the byte-equal masks in two
; accumulators (pand, no branch on the data) and leaving its loop once, then jumps back to the scalar
; tails for the last 0-15 bytes. SSE2 is part of x64, so there is nothing to detect.
; C twin: the 32-byte loop of fm5_c_debug_freed_pattern_intact (src/debug/debug_freed_check.c).
; In: rcx = user area, rdx = size, r9 = where the pattern starts (0 or the marker slot), rax = the
; marker's difference, r8 = the pattern word. Out (to the tails): r10 = end, r9 = offset from it.

default rel
%include "fm5_layout.inc"
%include "routine.inc"

extern fm5_debug_freed_pattern_check_tails

%if FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE - FM5_POINTER_SIZE < 3 * 16
%error "the loop below needs at least three whole units after the marker slot"
%endif

ROUTINE fm5_debug_freed_pattern_intact_sse2
    movq xmm0, r8
    punpcklqdq xmm0, xmm0
    pcmpeqb xmm1, xmm1                  ; all bytes equal so far
    movdqa xmm4, xmm1
    lea r10, [rcx + rdx]
    add rcx, r9                         ; first byte of the pattern
    sub rdx, r9
    mov r9, rdx
    and r9, 15
    neg r9                              ; the tails' offset from the end
    and rdx, -16                        ; bytes in whole units
    test edx, 16
    jz .pairs
    movdqu xmm2, [rcx]                  ; an odd unit first, so that the loop takes pairs
    pcmpeqb xmm2, xmm0
    pand xmm1, xmm2
    add rcx, 16
    sub rdx, 16
.pairs:
    add rcx, rdx
    neg rdx
    align 32                            ; the loop in one 64-byte line
.next_pair:
    movdqu xmm2, [rcx + rdx]
    movdqu xmm3, [rcx + rdx + 16]
    pcmpeqb xmm2, xmm0
    pcmpeqb xmm3, xmm0
    pand xmm1, xmm2
    pand xmm4, xmm3
    add rdx, 32
    jnz .next_pair
    pand xmm1, xmm4
    pmovmskb edx, xmm1
    xor edx, 0xFFFF                     ; a set bit for every byte that differs
    or rax, rdx
    jmp fm5_debug_freed_pattern_check_tails
END_ROUTINE fm5_debug_freed_pattern_intact_sse2
