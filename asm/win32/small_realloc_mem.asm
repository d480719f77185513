; FastMM_ReallocMem for Win32: the in-place small-block fast path of FastMM5 PR #98. C twin:
; fm5_c_realloc_mem (src/api/memory_manager.c), whose first test is the same rule
; (src/blocks/realloc_rules.h): a live small block whose new size still fits its class, and is not so
; small that the block would be mostly empty, is returned at once; one that must move goes to the twin's
; mover for small blocks, which does not identify it again. Everything else tail-jumps to the C twin.
; In: [esp + 4] = pointer, [esp + 8] = new size. Out: eax = the block.

%include "fm5_layout.inc"
%include "routine.inc"
%include "small_block_validation.inc"

extern fm5_c_realloc_mem
extern fm5_c_realloc_moving_small_block
extern fm5_debug_mode_active

%define SAVED 8                         ; ebx and esi

ROUTINE FastMM_ReallocMem
    cmp dword [fm5_debug_mode_active], 0
    jne .c_twin
    mov ecx, [esp + 4]
    push ebx
    push esi
    LIVE_SMALL_BLOCK .restore_then_c_twin, .restore_then_c_twin
    movzx eax, word [esi + FM5_SPAN_BLOCK_SIZE]
    sub eax, FM5_SMALL_HEADER_SIZE
    mov edx, [esp + SAVED + 8]
    cmp edx, eax
    ja .moves
    ; edx <= usable, so the product cannot overflow
    lea edx, [edx * FM5_SMALL_DOWNSIZE_FACTOR + FM5_SMALL_DOWNSIZE_CHECK_ADDER]
    cmp edx, eax
    jb .moves
    mov eax, ecx
    pop esi
    pop ebx
    ret
.moves:
    pop esi
    pop ebx
    jmp fm5_c_realloc_moving_small_block
.restore_then_c_twin:
    pop esi
    pop ebx
.c_twin:
    jmp fm5_c_realloc_mem
END_ROUTINE FastMM_ReallocMem
