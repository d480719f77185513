; BorlndMM.dll's Win32 exports in Delphi's register convention (borlndmm/borlndmm.c has the C functions
; they call; asm/delphi/register_convention.inc the convention). Exports without arguments need no
; thunk: a register routine with no arguments is called like a cdecl one.

%include "register_convention.inc"

extern bmm_GetHeapStatus
extern bmm_WalkBlocks
extern bmm_ScanDebugBlocksForCorruption
extern bmm_GetUsageSummary
extern bmm_LogStateToFile
extern bmm_EnterMinimumAddressAlignment
extern bmm_ExitMinimumAddressAlignment
extern bmm_SetEventLogFilename
extern bmm_SetOutputDebugStringEvents
extern bmm_SetLogToFileEvents
extern bmm_SetMessageBoxEvents

; GetHeapStatus: THeapStatus, no arguments: the hidden result pointer is the first, in eax.
REGISTER_TO_CDECL bmm_register_GetHeapStatus, bmm_GetHeapStatus, 1, 0
; FastMM_WalkBlocks(ACallBack, AWalkBlockTypes, AWalkUsedBlocksOnly; AUserData, ALockTimeoutMilliseconds,
; AMinimumAllocationGroup, AMaximumAllocationGroup on the stack): Boolean.
REGISTER_TO_CDECL bmm_register_WalkBlocks, bmm_WalkBlocks, 3, 4
REGISTER_TO_CDECL bmm_register_ScanDebugBlocksForCorruption, bmm_ScanDebugBlocksForCorruption, 1, 0
; FastMM_LogStateToFile(APFilename, APAdditionalDetails, ATruncateFile; six more on the stack): Boolean.
REGISTER_TO_CDECL bmm_register_LogStateToFile, bmm_LogStateToFile, 3, 6
REGISTER_TO_CDECL bmm_register_EnterMinimumAddressAlignment, bmm_EnterMinimumAddressAlignment, 1, 0
REGISTER_TO_CDECL bmm_register_ExitMinimumAddressAlignment, bmm_ExitMinimumAddressAlignment, 1, 0
REGISTER_TO_CDECL bmm_register_SetEventLogFilename, bmm_SetEventLogFilename, 1, 0
REGISTER_TO_CDECL bmm_register_SetOutputDebugStringEvents, bmm_SetOutputDebugStringEvents, 1, 0
REGISTER_TO_CDECL bmm_register_SetLogToFileEvents, bmm_SetLogToFileEvents, 1, 0
REGISTER_TO_CDECL bmm_register_SetMessageBoxEvents, bmm_SetMessageBoxEvents, 1, 0

; FastMM_GetUsageSummary(ALockTimeoutMilliseconds): TFastMM_UsageSummary. The timeout comes in eax
; and the hidden result pointer after it, in edx; the C function takes the pointer first (Win64's
; order), so the thunk swaps them.
    section .text
    align 16
    global bmm_register_GetUsageSummary
bmm_register_GetUsageSummary:
    push eax
    push edx
    call bmm_GetUsageSummary
    add esp, 8
    ret
