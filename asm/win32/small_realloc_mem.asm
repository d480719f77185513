; FastMM_ReallocMem for Win32: the in-place small-block fast path of FastMM5 PR #98. C twin:
; fm5_c_realloc_mem (src/api/memory_manager.c), whose first test is the same rule
; (src/blocks/realloc_rules.h): a live small block whose new size still fits its class, and is not so
; small that the block would be mostly empty, is returned at once. One that must move to another small
; class moves here through the running thread's cache when it can: the newest cached block of the new
; class, the copy, the old block into its own bin, as the twin's mover (move_small_block) does through
; GetMem and the proved free but without their entry tests and calls (Win64's ReallocMem does the
; same). What the cache cannot serve before the new block is taken goes to that mover
; (fm5_c_realloc_moving_small_block), which does not identify the block again; an old block the cache
; refuses after it goes to FreeMem (fm5_c_free_moved_small_block), which decides again from scratch.
; Everything else tail-jumps to the C twin.
; In: [esp + 4] = pointer, [esp + 8] = new size. Out: eax = the block.

%include "fm5_layout.inc"
%include "routine.inc"
%include "small_block_validation.inc"
%include "small_block_lists.inc"
%include "small_block_copy.inc"

extern fm5_c_realloc_mem
extern fm5_c_realloc_moving_small_block
extern fm5_c_free_moved_small_block
extern fm5_debug_mode_active
extern fm5_small_lookup
extern fm5_thread_cache_epoch
extern fm5_os_thread_slot_offset
extern fm5_cpu_has_sse2
extern fm5_cpu_has_fast_strings

%define SAVED 8                         ; ebx and esi
%define MOVE_SAVED 12                   ; and edi, while a block moves

; The usable bytes of the smallest class, whose block is one granule (classes are multiples of the
; granule, ascending: blocks/small_block_classes.c), less the status word; a larger class has a granule
; more. The copy below reads and writes whole 4-byte units up to the first and 16-byte units past the
; second, so both must hold a unit.
%define MINIMUM_USABLE ((1 << FM5_SMALL_GRANULARITY_SHIFT) - FM5_SMALL_HEADER_SIZE)
%define SECOND_USABLE ((2 << FM5_SMALL_GRANULARITY_SHIFT) - FM5_SMALL_HEADER_SIZE)
%if MINIMUM_USABLE < 4 || SECOND_USABLE + (1 << FM5_SMALL_GRANULARITY_SHIFT) < 16
%error "the small move copies 4-byte units within the smallest class and 16-byte units above the second"
%endif

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
    ; ecx = block, esi = span, the new size on the stack. A new size in the small range; the erase modes
    ; and a shared manager hold the caches' epoch even (blocks/thread_cache.h), so the cache's pop and
    ; push are their tests (debug mode was tested above).
    mov edx, [esp + SAVED + 8]
    cmp edx, FM5_MAXIMUM_SMALL_USER_SIZE
    ja .c_mover
    push edi
    inc edx
    shr edx, FM5_SMALL_GRANULARITY_SHIFT
    movzx edi, byte [fm5_small_lookup + edx]   ; the new class slot
    CACHE_POP edi, edx, edi, ebx, eax, eax, .pop_then_c_mover, .pop_then_c_mover
    ; ebx = the new block, now the thread's; copy min(new size, old usable) bytes into it. Whole units
    ; that both blocks hold: no load or store passes either block's usable bytes (the new block's
    ; neighbour's status word lies right after them).
    mov edx, [esp + MOVE_SAVED + 8]
    movzx eax, word [esi + FM5_SPAN_BLOCK_SIZE]
    sub eax, FM5_SMALL_HEADER_SIZE
    cmp edx, eax
    cmova edx, eax
    ; up to the second class 4-byte units (below); a kilobyte or more with `rep movsb` where the
    ; processor has fast strings (realloc_rules.h)
    cmp edx, SECOND_USABLE
    jbe .copy_units_of_4
    cmp edx, FM5_SMALL_COPY_BY_STRING_MINIMUM
    jb .copy_units_of_16
    cmp byte [fm5_cpu_has_fast_strings], 0
    jne .copy_by_string
.copy_units_of_16:
    ; above the second class both blocks hold 16 bytes more: 16-byte moves from the start while another
    ; fits before the count, then the 16 bytes ending at it (fm5_cpu_has_sse2: Win32 runs on any i686)
    cmp byte [fm5_cpu_has_sse2], 0
    je .copy_units_of_4
    mov eax, 16                         ; a count of 15 copies 16: both blocks have 22 usable bytes then
    cmp edx, eax
    cmovb edx, eax
    COPY_IN_UNITS movdqu, xmm0, 16, ecx, ebx, edx, eax, edi
    jmp .copied
.copy_by_string:
    ; rep movsb takes esi, edi and ecx: the span and the old block wait on the stack meanwhile
    push esi
    push ecx
    mov esi, ecx
    mov edi, ebx
    mov ecx, edx
    rep movsb
    pop ecx
    pop esi
    jmp .copied
.copy_units_of_4:
    ; the same in 4-byte units; a count below 4 copies 4, which every block holds
    mov eax, 4
    cmp edx, eax
    cmovb edx, eax
    COPY_IN_UNITS mov, edi, 4, ecx, ebx, edx, eax, edi
.copied:
    ; the old block into its bin (the claim, then its link over the bytes just copied)
    CACHE_PUSH ecx, edx, edi, eax, eax, esi, esi, si, .free_in_c, .free_in_c, esi
    mov eax, ebx
    pop edi
    pop esi
    pop ebx
    ret
.free_in_c:
    ; ecx = the old block (its span is not read: a lost claim may have released it), ebx = the new one.
    ; cdecl lets a routine reuse its arguments' slots: the new size's becomes the new block.
    mov [esp + MOVE_SAVED + 8], ebx
    pop edi
    pop esi
    pop ebx
    jmp fm5_c_free_moved_small_block
.pop_then_c_mover:
    pop edi
.c_mover:
    pop esi
    pop ebx
    jmp fm5_c_realloc_moving_small_block
.restore_then_c_twin:
    pop esi
    pop ebx
.c_twin:
    jmp fm5_c_realloc_mem
END_ROUTINE FastMM_ReallocMem
