; The debug fill patterns for Win32, and FastMM_AllocMem's zero fill. C twins:
; fm5_c_debug_fill_allocated, fm5_c_debug_fill_freed and fm5_c_zero_fill (src/debug/debug_fill.c).
; Seed 000: from FM5_DEBUG_BULK_FILL_MINIMUM_SIZE user bytes up the fill is one
; rep stosb (a cdecl routine cannot tail-jump to memset, which takes one argument more); below it, at
; most one byte, one word, one dword and four qwords are stored from the end of the area down, which
; keeps the qword stores at the area's own alignment. The allocated fill of
; FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE bytes and more runs from the end down instead (SSE2 stores; the
; scalar qword loop without SSE2), src/debug/debug_fill.h says why.
; In: [esp + 4] = user area, [esp + 8] = size. The freed fill also writes the freed-object marker into
; the first pointer of an area big enough to be an object; the slot's second dword keeps the fill.

%include "fm5_layout.inc"
%include "routine.inc"

extern fm5_freed_object_class_table
extern fm5_cpu_has_sse2
extern memset

%define ALLOCATED_FILL_DWORD (FM5_DEBUG_ALLOCATED_FILL_BYTE * 0x01010101)
%define FREED_FILL_DWORD (FM5_DEBUG_FREED_FILL_BYTE * 0x01010101)

%if FM5_DEBUG_BULK_FILL_MINIMUM_SIZE > 5 * 8
%error "the scalar stores below cover at most four qwords and the odd bytes"
%endif
%if FM5_DEBUG_FREED_OBJECT_SLOT_SIZE != 2 * FM5_POINTER_SIZE
%error "on Win32 the marker is the slot's first dword"
%endif

extern fm5_c_debug_fill_allocated
extern fm5_c_debug_fill_freed

ROUTINE fm5_debug_fill_allocated
%if !FM5_BULK_FILL
    cmp dword [esp + 8], FM5_DEBUG_BULK_FILL_MINIMUM_SIZE
    jae fm5_c_debug_fill_allocated      ; seed 000's baseline build: the C twin's store loop
%endif
    mov ecx, [esp + 4]
    mov edx, [esp + 8]
    mov eax, ALLOCATED_FILL_DWORD
    cmp edx, FM5_DEBUG_BULK_FILL_MINIMUM_SIZE
    jb fm5_debug_fill_scalar_stores
    cmp edx, FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE
    jb fm5_debug_fill_bulk
    cmp byte [fm5_cpu_has_sse2], 0
    je fm5_debug_fill_scalar_stores     ; its qword loop runs from the end down too
.descending:                            ; C twin: fill_descending, 32 bytes per step from the end down
    movd xmm0, eax
    pshufd xmm0, xmm0, 0
.next_32:
    sub edx, 32
    movdqu [ecx + edx + 16], xmm0
    movdqu [ecx + edx], xmm0
    cmp edx, 32
    jae .next_32
    jmp fm5_debug_fill_scalar_stores    ; the 0-31 bytes left at the start
END_ROUTINE fm5_debug_fill_allocated

ROUTINE fm5_debug_fill_freed
%if !FM5_BULK_FILL
    cmp dword [esp + 8], FM5_DEBUG_BULK_FILL_MINIMUM_SIZE
    jae fm5_c_debug_fill_freed          ; seed 000's baseline build: the C twin's store loop
%endif
    mov ecx, [esp + 4]
    mov edx, [esp + 8]
    mov eax, FREED_FILL_DWORD
    cmp edx, FM5_DEBUG_FREED_OBJECT_MINIMUM_SIZE
    jb fm5_debug_fill_scalar_stores     ; too small for a marker, and below the bulk size
    mov dword [ecx], fm5_freed_object_class_table + FM5_FREED_OBJECT_MARKER_OFFSET
    mov [ecx + FM5_POINTER_SIZE], eax
    ; The bulk/scalar choice goes by the user size, as seed 000 measured it.
    cmp edx, FM5_DEBUG_BULK_FILL_MINIMUM_SIZE
    lea ecx, [ecx + FM5_DEBUG_FREED_OBJECT_SLOT_SIZE]
    lea edx, [edx - FM5_DEBUG_FREED_OBJECT_SLOT_SIZE]
    jb fm5_debug_fill_scalar_stores
    jmp fm5_debug_fill_bulk
END_ROUTINE fm5_debug_fill_freed

; rep stosb starts slowly: below this many bytes the store loop of fm5_debug_fill_scalar_stores (which
; takes any size) is faster. Measured with scripts/measure-memset-fills.sh: with rep stosb from 40 bytes
; up, seed 000's 64-byte control ran 6.5 % slower than the scalar baseline build.
%define REP_STOSB_MINIMUM_SIZE 256

; C twin: the memset of fill_pattern (src/debug/debug_fill.c).
; In: ecx = area, edx = size, eax = the pattern in every byte.
ROUTINE fm5_debug_fill_bulk
    cmp edx, REP_STOSB_MINIMUM_SIZE
    jb fm5_debug_fill_scalar_stores
    push edi
    mov edi, ecx
    mov ecx, edx
    rep stosb
    pop edi
    ret
END_ROUTINE fm5_debug_fill_bulk

; FastMM_AllocMem's zero fill. C twin: fm5_c_zero_fill (memset). From REP_STOSB_MINIMUM_SIZE bytes up
; the bulk fill's rep stosb with a zero pattern; below it memset, called as the twin calls it.
; In: [esp + 4] = area, [esp + 8] = size.
ROUTINE fm5_zero_fill
    mov ecx, [esp + 4]
    mov edx, [esp + 8]
    cmp edx, REP_STOSB_MINIMUM_SIZE
    jb .memset
    xor eax, eax
    jmp fm5_debug_fill_bulk
.memset:
    push edx
    push 0
    push ecx
    call memset
    add esp, 12
    ret
END_ROUTINE fm5_zero_fill

; C twin: fill_with_scalar_stores (src/debug/debug_fill.c), and the memset of fill_pattern below
; REP_STOSB_MINIMUM_SIZE: the qword loop takes any size.
; In: ecx = area, edx = size, eax = the pattern in every byte.
ROUTINE fm5_debug_fill_scalar_stores
    test dl, 1
    jz .odd_byte_done
    dec edx
    mov [ecx + edx], al
.odd_byte_done:
    test dl, 2
    jz .word_done
    sub edx, 2
    mov [ecx + edx], ax
.word_done:
    test dl, 4
    jz .qwords
    sub edx, 4
    mov [ecx + edx], eax
.qwords:
    test edx, edx
    jz .done
.qword_loop:                            ; one taken branch per qword, from the end down
    mov [ecx + edx - 8], eax
    mov [ecx + edx - 4], eax
    sub edx, 8
    jnz .qword_loop
.done:
    ret
END_ROUTINE fm5_debug_fill_scalar_stores
