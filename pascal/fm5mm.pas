{ fm5mm: fm5 (fm5_32.dll / fm5_64.dll) as the memory manager of a Free Pascal or Delphi program, and
  fm5's functions declared for Pascal.

  Use
    Name this unit first in the program's uses clause (Delphi: first in the .dpr's uses clause), or,
    with Free Pascal, load it with -Fafm5mm. Put fm5_32.dll (win32) or fm5_64.dll (win64) beside the
    executable. The unit's initialization installs fm5 with SetMemoryManager.

  What was tested
    Free Pascal 3.2.2, targets i386-win32 and x86_64-win64 (TMemoryManager, under $ifdef FPC): the
    tests in tests/pascal, under Wine.
    Delphi (TMemoryManagerEx, the $else branches): written from Delphi's documented interface for
    Delphi XE3 and later. No Delphi compiler was available: this part has never been compiled or run.

  Blocks of the previous memory manager
    Whatever was allocated before this unit's initialization (by the system unit, or by any unit
    initialized earlier) belongs to the memory manager that was installed then. Every call on such a
    block (fm5_owns(p) = 0: the address is not in fm5's memory) is passed to that manager: it frees,
    resizes and sizes its own blocks to the end. Only new blocks come from fm5.

  Finalization
    The unit does not put the previous manager back. Units finalized after this one (the system
    unit, and every unit initialized before fm5mm) may still free blocks that fm5 handed out, and the
    previous manager would take them for its own and corrupt its heap. fm5 stays installed until the
    process ends; the DLL is unloaded after the last unit's finalization, so its leak report
    (FastMM_SetReportMemoryLeaksOnShutdown(1), or FM5_LEAK_REPORT=1 / FM5_DEBUG=1 in the
    environment) sees only the blocks that were never freed.

  Errors (Free Pascal)
    As Free Pascal's own heap: a request fm5 cannot meet raises run-time error 203 (EOutOfMemory with
    SysUtils) unless ReturnNilIfGrowHeapFails is set, and freeing a pointer that is in fm5's memory
    but not a live block raises run-time error 204 (EInvalidPointer) after fm5 recorded its event
    (the size query before the free records one too). }
unit fm5mm;

{$ifdef FPC}
  {$mode objfpc}
  {$packrecords c}
{$else}
  {$ALIGN 8}
  {$MINENUMSIZE 4}
  {$IF CompilerVersion < 24}
    {$MESSAGE FATAL 'fm5mm needs Delphi XE3 or later (AtomicIncrement)'}
  {$IFEND}
{$endif}

{$ifndef MSWINDOWS}
  {$error 'fm5mm is for Windows programs: fm5 is a Windows DLL'}
{$endif}

interface

const
{$ifdef WIN64}
  FM5_DLL = 'fm5_64.dll';
{$else}
  FM5_DLL = 'fm5_32.dll';
{$endif}

  { FastMM_BlockKind }
  FastMM_SmallBlock = 1;
  FastMM_MediumBlock = 2;
  FastMM_LargeBlock = 4;
  FastMM_SmallBlockSpan = 8;
  FastMM_MediumBlockSpan = 16;

  { FastMM_OptimizationStrategy }
  FastMM_OptimizeForSpeed = 0;
  FastMM_Balanced = 1;
  FastMM_OptimizeForLowMemoryUsage = 2;

  { FastMM_EventKind; the masks of the Set...Events functions are bits (1 shl kind) }
  FastMM_EventInvalidFree = 1;
  FastMM_EventInvalidRealloc = 2;
  FastMM_EventDoubleFree = 3;
  FastMM_EventReallocOfFreedBlock = 4;
  FastMM_EventInvalidQuery = 5;
  FastMM_EventOutOfMemory = 6;
  FastMM_EventMemoryLimitExceeded = 7;
  FastMM_EventInvalidArgument = 8;
  FastMM_EventDebugBlockHeaderCorrupted = 9;
  FastMM_EventDebugBlockFooterCorrupted = 10;
  FastMM_EventFreedBlockModified = 11;
  FastMM_EventVirtualCallOnFreedObject = 12;
  FastMM_EventMemoryLeak = 13;
  FastMM_EventDebugModeReport = 14;
  FastMM_EventReleaseFailed = 15;
  FastMM_EventCannotSwitchWithLivePointers = 16;

  { FastMM_DebugModeOption }
  FastMM_DebugNeverFreeSmallBlockSpans = 1;
  FastMM_DebugNeverMergeFreeMediumBlocks = 2;
  FastMM_DebugNoFillPatterns = 4;
  FastMM_DebugNoChecksums = 8;

type
  { The C structs of fm5.h, field for field: size_t is NativeUInt, int is Integer, unsigned is
    Cardinal, double is Double, char * is PAnsiChar (UTF-8 text). }
  PFastMM_HeapStatus = ^TFastMM_HeapStatus;
  TFastMM_HeapStatus = record
    TotalAddrSpace: NativeUInt;
    TotalUncommitted: NativeUInt;
    TotalCommitted: NativeUInt;
    TotalAllocated: NativeUInt;
    TotalFree: NativeUInt;
    FreeSmall: NativeUInt;
    FreeBig: NativeUInt;
    Unused: NativeUInt;
    Overhead: NativeUInt;
    HeapErrorCode: NativeUInt;
  end;

  PFastMM_UsageSummary = ^TFastMM_UsageSummary;
  TFastMM_UsageSummary = record
    AllocatedBytes: NativeUInt;
    OverheadBytes: NativeUInt;
    EfficiencyPercentage: Double;
  end;

  PFastMM_WalkBlockInfo = ^TFastMM_WalkBlockInfo;
  TFastMM_WalkBlockInfo = record
    Address: Pointer;
    BlockSize: NativeUInt;
    UsableSize: NativeUInt;
    Kind: Cardinal;
    Arena: Cardinal;
    IsFree: Integer;
    IsDebugBlock: Integer;
    AllocationNumber: Cardinal;
    AllocationGroup: Cardinal;
  end;
  { Runs while an arena lock is held: it must not allocate or free (no strings, no objects). }
  TFastMM_WalkBlocksCallback = function(Info: PFastMM_WalkBlockInfo; User: Pointer): Integer; cdecl;

  PFastMM_Event = ^TFastMM_Event;
  TFastMM_Event = record
    Kind: Integer;
    Ptr: Pointer;       { the C field "Pointer" }
    Size: NativeUInt;
    Text: PAnsiChar;    { UTF-8, valid only during the callback }
  end;
  { Runs on the thread that caused the event, possibly under an arena lock: it must not allocate. }
  TFastMM_EventCallback = procedure(Event: PFastMM_Event; User: Pointer); cdecl;

{ Core (FastMM5 semantics) }
function FastMM_GetMem(Size: NativeUInt): Pointer; cdecl; external FM5_DLL name 'FastMM_GetMem';
function FastMM_FreeMem(P: Pointer): Integer; cdecl; external FM5_DLL name 'FastMM_FreeMem';
function FastMM_ReallocMem(P: Pointer; NewSize: NativeUInt): Pointer; cdecl;
  external FM5_DLL name 'FastMM_ReallocMem';
function FastMM_AllocMem(Size: NativeUInt): Pointer; cdecl; external FM5_DLL name 'FastMM_AllocMem';
function FastMM_BlockMaximumUserBytes(P: Pointer): NativeUInt; cdecl;
  external FM5_DLL name 'FastMM_BlockMaximumUserBytes';
function FastMM_BlockCurrentUserBytes(P: Pointer): NativeUInt; cdecl;
  external FM5_DLL name 'FastMM_BlockCurrentUserBytes';
function FastMM_ProcessAllPendingFrees: Integer; cdecl;
  external FM5_DLL name 'FastMM_ProcessAllPendingFrees';
const
  { Empty medium spans kept until FastMM_ProcessAllPendingFrees, all arenas together; more are kept
    for a second (fm5.h) }
  FastMM_KeptMediumSpanBytes = 16 shl 20;

{ Heap status, usage summary, block walking }
function FastMM_GetHeapStatus(Status: PFastMM_HeapStatus; TimeoutMs: Cardinal): Integer; cdecl;
  external FM5_DLL name 'FastMM_GetHeapStatus';
function FastMM_GetUsageSummary(Summary: PFastMM_UsageSummary): Integer; cdecl;
  external FM5_DLL name 'FastMM_GetUsageSummary';
function FastMM_WalkBlocks(Callback: TFastMM_WalkBlocksCallback; User: Pointer; Kinds: Cardinal;
  UsedOnly: Integer; TimeoutMs: Cardinal): Integer; cdecl; external FM5_DLL name 'FastMM_WalkBlocks';

{ Tuning }
function FastMM_SetOptimizationStrategy(Strategy: Integer): Integer; cdecl;
  external FM5_DLL name 'FastMM_SetOptimizationStrategy';
function FastMM_GetCurrentOptimizationStrategy: Integer; cdecl;
  external FM5_DLL name 'FastMM_GetCurrentOptimizationStrategy';
function FastMM_EnterMinimumAddressAlignment(Alignment: Cardinal): Integer; cdecl;
  external FM5_DLL name 'FastMM_EnterMinimumAddressAlignment';
function FastMM_ExitMinimumAddressAlignment(Alignment: Cardinal): Integer; cdecl;
  external FM5_DLL name 'FastMM_ExitMinimumAddressAlignment';
function FastMM_GetCurrentMinimumAddressAlignment: Cardinal; cdecl;
  external FM5_DLL name 'FastMM_GetCurrentMinimumAddressAlignment';
procedure FastMM_SetMemoryUsageLimit(Limit: NativeUInt); cdecl;
  external FM5_DLL name 'FastMM_SetMemoryUsageLimit';
function FastMM_GetMemoryUsageLimit: NativeUInt; cdecl; external FM5_DLL name 'FastMM_GetMemoryUsageLimit';
function FastMM_GetCurrentMemoryUsage: NativeUInt; cdecl;
  external FM5_DLL name 'FastMM_GetCurrentMemoryUsage';
{ The large-block cache (fm5.h): at most this many bytes of freed large blocks stay mapped for reuse;
  0 turns it off. }
procedure FastMM_SetLargeBlockCacheLimit(Bytes: NativeUInt); cdecl;
  external FM5_DLL name 'FastMM_SetLargeBlockCacheLimit';
function FastMM_GetLargeBlockCacheLimit: NativeUInt; cdecl; external FM5_DLL name 'FastMM_GetLargeBlockCacheLimit';
function FastMM_SmallBlockThreadContentionCount: NativeUInt; cdecl;
  external FM5_DLL name 'FastMM_SmallBlockThreadContentionCount';
function FastMM_MediumBlockThreadContentionCount: NativeUInt; cdecl;
  external FM5_DLL name 'FastMM_MediumBlockThreadContentionCount';
function FastMM_LargeBlockThreadContentionCount: NativeUInt; cdecl;
  external FM5_DLL name 'FastMM_LargeBlockThreadContentionCount';

{ Arena counts (before the first allocation) and adaptive small-block arena affinity: fm5.h }
const
  FastMM_MaximumArenaCount = 32;
function FastMM_SetArenaCounts(SmallArenas, MediumArenas, LargeArenas: Cardinal): Integer; cdecl;
  external FM5_DLL name 'FastMM_SetArenaCounts';
procedure FastMM_GetArenaCounts(out SmallArenas, MediumArenas, LargeArenas: Cardinal); cdecl;
  external FM5_DLL name 'FastMM_GetArenaCounts';
function FastMM_SetAdaptiveSmallBlockArenaAffinity(Enabled: Integer): Integer; cdecl;
  external FM5_DLL name 'FastMM_SetAdaptiveSmallBlockArenaAffinity';
function FastMM_GetAdaptiveSmallBlockArenaAffinity: Integer; cdecl;
  external FM5_DLL name 'FastMM_GetAdaptiveSmallBlockArenaAffinity';
function FastMM_SetThreadCaches(Enabled: Integer): Integer; cdecl;
  external FM5_DLL name 'FastMM_SetThreadCaches';
function FastMM_GetThreadCaches: Integer; cdecl;
  external FM5_DLL name 'FastMM_GetThreadCaches';
function FastMM_GetThreadCacheBytes(Caches: PCardinal): NativeUInt; cdecl;
  external FM5_DLL name 'FastMM_GetThreadCacheBytes';

{ Events and the event log (UTF-8 paths) }
procedure FastMM_SetEventCallback(Callback: TFastMM_EventCallback; User: Pointer); cdecl;
  external FM5_DLL name 'FastMM_SetEventCallback';
procedure FastMM_SetLogToFileEvents(Mask: Cardinal); cdecl; external FM5_DLL name 'FastMM_SetLogToFileEvents';
function FastMM_GetLogToFileEvents: Cardinal; cdecl; external FM5_DLL name 'FastMM_GetLogToFileEvents';
procedure FastMM_SetOutputDebugStringEvents(Mask: Cardinal); cdecl;
  external FM5_DLL name 'FastMM_SetOutputDebugStringEvents';
function FastMM_GetOutputDebugStringEvents: Cardinal; cdecl;
  external FM5_DLL name 'FastMM_GetOutputDebugStringEvents';
procedure FastMM_SetMessageBoxEvents(Mask: Cardinal); cdecl; external FM5_DLL name 'FastMM_SetMessageBoxEvents';
function FastMM_GetMessageBoxEvents: Cardinal; cdecl; external FM5_DLL name 'FastMM_GetMessageBoxEvents';
function FastMM_SetEventLogFilename(Utf8Path: PAnsiChar): Integer; cdecl;
  external FM5_DLL name 'FastMM_SetEventLogFilename';
function FastMM_GetEventLogFilename: PAnsiChar; cdecl; external FM5_DLL name 'FastMM_GetEventLogFilename';
function FastMM_DeleteEventLogFile: Integer; cdecl; external FM5_DLL name 'FastMM_DeleteEventLogFile';

{ Debug mode: Enter and Exit are counted and must be balanced }
function FastMM_EnterDebugMode: Integer; cdecl; external FM5_DLL name 'FastMM_EnterDebugMode';
function FastMM_ExitDebugMode: Integer; cdecl; external FM5_DLL name 'FastMM_ExitDebugMode';
function FastMM_DebugModeActive: Integer; cdecl; external FM5_DLL name 'FastMM_DebugModeActive';
function FastMM_SetDebugModeOptions(Options: Cardinal): Integer; cdecl;
  external FM5_DLL name 'FastMM_SetDebugModeOptions';
function FastMM_GetDebugModeOptions: Cardinal; cdecl; external FM5_DLL name 'FastMM_GetDebugModeOptions';
function FastMM_SetDebugModeStackTraceEntryCount(Count: Cardinal): Integer; cdecl;
  external FM5_DLL name 'FastMM_SetDebugModeStackTraceEntryCount';
function FastMM_GetDebugModeStackTraceEntryCount: Cardinal; cdecl;
  external FM5_DLL name 'FastMM_GetDebugModeStackTraceEntryCount';
function FastMM_GetLastAllocationNumber: Cardinal; cdecl;
  external FM5_DLL name 'FastMM_GetLastAllocationNumber';
procedure FastMM_SetBreakOnAllocationNumber(Number: Cardinal); cdecl;
  external FM5_DLL name 'FastMM_SetBreakOnAllocationNumber';
procedure FastMM_SetCurrentAllocationGroup(Group: Cardinal); cdecl;
  external FM5_DLL name 'FastMM_SetCurrentAllocationGroup';
function FastMM_GetCurrentAllocationGroup: Cardinal; cdecl;
  external FM5_DLL name 'FastMM_GetCurrentAllocationGroup';
function FastMM_ScanDebugBlocksForCorruption: Integer; cdecl;
  external FM5_DLL name 'FastMM_ScanDebugBlocksForCorruption';
procedure FastMM_BeginEraseAllocatedBlockContent; cdecl;
  external FM5_DLL name 'FastMM_BeginEraseAllocatedBlockContent';
function FastMM_EndEraseAllocatedBlockContent: Integer; cdecl;
  external FM5_DLL name 'FastMM_EndEraseAllocatedBlockContent';
function FastMM_EraseAllocatedBlockContentActive: Integer; cdecl;
  external FM5_DLL name 'FastMM_EraseAllocatedBlockContentActive';
procedure FastMM_BeginEraseFreedBlockContent; cdecl;
  external FM5_DLL name 'FastMM_BeginEraseFreedBlockContent';
function FastMM_EndEraseFreedBlockContent: Integer; cdecl;
  external FM5_DLL name 'FastMM_EndEraseFreedBlockContent';
function FastMM_EraseFreedBlockContentActive: Integer; cdecl;
  external FM5_DLL name 'FastMM_EraseFreedBlockContentActive';

{ Leaks }
function FastMM_RegisterExpectedMemoryLeak(P: Pointer): Integer; cdecl;
  external FM5_DLL name 'FastMM_RegisterExpectedMemoryLeak';
function FastMM_UnregisterExpectedMemoryLeak(P: Pointer): Integer; cdecl;
  external FM5_DLL name 'FastMM_UnregisterExpectedMemoryLeak';
function FastMM_RegisterExpectedMemoryLeakBySize(Size: NativeUInt; Count: Cardinal): Integer; cdecl;
  external FM5_DLL name 'FastMM_RegisterExpectedMemoryLeakBySize';
function FastMM_UnregisterExpectedMemoryLeakBySize(Size: NativeUInt; Count: Cardinal): Integer; cdecl;
  external FM5_DLL name 'FastMM_UnregisterExpectedMemoryLeakBySize';
function FastMM_ReportMemoryLeaks: NativeUInt; cdecl; external FM5_DLL name 'FastMM_ReportMemoryLeaks';
function FastMM_LogStateToFile(Utf8Path: PAnsiChar): Integer; cdecl; external FM5_DLL name 'FastMM_LogStateToFile';
procedure FastMM_SetReportMemoryLeaksOnShutdown(Report: Integer); cdecl;
  external FM5_DLL name 'FastMM_SetReportMemoryLeaksOnShutdown';
function FastMM_GetReportMemoryLeaksOnShutdown: Integer; cdecl;
  external FM5_DLL name 'FastMM_GetReportMemoryLeaksOnShutdown';

{ The C family, with C semantics }
function fm5_malloc(Size: NativeUInt): Pointer; cdecl; external FM5_DLL name 'fm5_malloc';
function fm5_calloc(Count, Size: NativeUInt): Pointer; cdecl; external FM5_DLL name 'fm5_calloc';
function fm5_realloc(P: Pointer; Size: NativeUInt): Pointer; cdecl; external FM5_DLL name 'fm5_realloc';
procedure fm5_free(P: Pointer); cdecl; external FM5_DLL name 'fm5_free';
function fm5_usable_size(P: Pointer): NativeUInt; cdecl; external FM5_DLL name 'fm5_usable_size';
{ 1 when the address lies in memory fm5 has mapped, 0 otherwise; no event. }
function fm5_owns(P: Pointer): Integer; cdecl; external FM5_DLL name 'fm5_owns';

{ Memory-manager sharing by FastMM5's protocol (fm5.h): publish fm5 to the process's other modules, or
  make fm5 forward to the manager another module (a FastMM5-based host) shares. 1 on success. }
function FastMM_ShareMemoryManager: Integer; cdecl; external FM5_DLL name 'FastMM_ShareMemoryManager';
function FastMM_AttemptToUseSharedMemoryManager: Integer; cdecl;
  external FM5_DLL name 'FastMM_AttemptToUseSharedMemoryManager';

type
{$ifdef FPC}
  TFM5MMPreviousManager = TMemoryManager;
{$else}
  TFM5MMPreviousManager = TMemoryManagerEx;
{$endif}

{ The memory manager that was installed when this unit's initialization ran: the one that serves
  the blocks fm5 does not own. }
procedure FM5MM_GetPreviousMemoryManager(out MemMgr: TFM5MMPreviousManager);
{ How many calls (free, resize, size query) were passed to that manager so far. }
function FM5MM_PreviousManagerCalls: Cardinal;

implementation

var
  PreviousManager: TFM5MMPreviousManager;
  PreviousCalls: Integer;

procedure FM5MM_GetPreviousMemoryManager(out MemMgr: TFM5MMPreviousManager);
begin
  MemMgr := PreviousManager;
end;

function FM5MM_PreviousManagerCalls: Cardinal;
begin
  Result := Cardinal(PreviousCalls);
end;

procedure CountPreviousCall; inline;
begin
{$ifdef FPC}
  InterLockedIncrement(PreviousCalls);
{$else}
  AtomicIncrement(PreviousCalls);
{$endif}
end;

{$ifdef FPC}
{ ---- Free Pascal: TMemoryManager (rtl/inc/heaph.inc) ---------------------------------------------- }

var
  PeakHeapSize: PtrUInt;
  PeakHeapUsed: PtrUInt;

function OutOfMemory: Pointer;
begin
  if not ReturnNilIfGrowHeapFails then
    RunError(203);
  Result := nil;
end;

function FM5GetMem(Size: PtrUInt): Pointer;
begin
  Result := FastMM_GetMem(Size);
  if Result = nil then
    Result := OutOfMemory;
end;

{ Returns the size freed, as SysFreemem does; nil frees nothing and returns 0. }
function FM5FreeMem(P: Pointer): PtrUInt;
begin
  if P = nil then
    Exit(0);
  if fm5_owns(P) = 0 then
  begin
    CountPreviousCall;
    Exit(PreviousManager.FreeMem(P));
  end;
  Result := FastMM_BlockCurrentUserBytes(P);
  if FastMM_FreeMem(P) <> 0 then
    RunError(204);
end;

{ As SysFreememSize: size 0 frees nothing; otherwise the size is not needed. }
function FM5FreeMemSize(P: Pointer; Size: PtrUInt): PtrUInt;
begin
  if Size = 0 then
    Exit(0);
  Result := FM5FreeMem(P);
end;

function FM5AllocMem(Size: PtrUInt): Pointer;
begin
  Result := FastMM_AllocMem(Size);
  if Result = nil then
    Result := OutOfMemory;
end;

{ As SysReAllocMem: size 0 frees P (when not nil) and sets it to nil; a nil P is a new block. On
  failure P is left as it was (fm5 keeps the old block intact). }
function FM5ReAllocMem(var P: Pointer; Size: PtrUInt): Pointer;
var
  Moved: Pointer;
begin
  if Size = 0 then
  begin
    if P <> nil then
    begin
      FM5FreeMem(P);
      P := nil;
    end;
  end
  else if P = nil then
    P := FM5GetMem(Size)
  else if fm5_owns(P) = 0 then
  begin
    CountPreviousCall;
    PreviousManager.ReAllocMem(P, Size);
  end
  else
  begin
    Moved := FastMM_ReallocMem(P, Size);
    if Moved = nil then
      Exit(OutOfMemory);
    P := Moved;
  end;
  Result := P;
end;

{ The usable size, as SysMemSize: the bytes the caller may write without a ReAllocMem, which the RTL
  relies on (SetLength of a string writes up to MemSize in place). That is FastMM_BlockCurrentUserBytes:
  the usable size of small and medium blocks, the requested size of large and of debug blocks (a
  debug block's footer follows its requested size at once). }
function FM5MemSize(P: Pointer): PtrUInt;
begin
  if P = nil then
    Exit(0);
  if fm5_owns(P) = 0 then
  begin
    CountPreviousCall;
    Exit(PreviousManager.MemSize(P));
  end;
  Result := FastMM_BlockCurrentUserBytes(P);
end;

function Clamp32(Value: NativeUInt): Cardinal;
begin
{$ifdef CPU64}
  if Value > High(Cardinal) then
    Exit(High(Cardinal));
{$endif}
  Result := Cardinal(Value);
end;

{ THeapStatus has 32-bit fields on every target: values above 4 GB read as High(Cardinal). }
function FM5GetHeapStatus: THeapStatus;
var
  Status: TFastMM_HeapStatus;
begin
  Status := Default(TFastMM_HeapStatus);
  FastMM_GetHeapStatus(@Status, 1000);
  Result.TotalAddrSpace := Clamp32(Status.TotalAddrSpace);
  Result.TotalUncommitted := Clamp32(Status.TotalUncommitted);
  Result.TotalCommitted := Clamp32(Status.TotalCommitted);
  Result.TotalAllocated := Clamp32(Status.TotalAllocated);
  Result.TotalFree := Clamp32(Status.TotalFree);
  Result.FreeSmall := Clamp32(Status.FreeSmall);
  Result.FreeBig := Clamp32(Status.FreeBig);
  Result.Unused := Clamp32(Status.Unused);
  Result.Overhead := Clamp32(Status.Overhead);
  Result.HeapErrorCode := Clamp32(Status.HeapErrorCode);
end;

{ CurrHeapUsed: bytes in live blocks; CurrHeapSize: the address space fm5 uses for them (live bytes
  plus overhead); CurrHeapFree: the difference. fm5 keeps no peaks: MaxHeapSize and MaxHeapUsed are
  the largest values seen by the calls to this function. }
function FM5GetFPCHeapStatus: TFPCHeapStatus;
var
  Summary: TFastMM_UsageSummary;
begin
  Summary := Default(TFastMM_UsageSummary);
  FastMM_GetUsageSummary(@Summary);
  Result.CurrHeapUsed := Summary.AllocatedBytes;
  Result.CurrHeapSize := Summary.AllocatedBytes + Summary.OverheadBytes;
  Result.CurrHeapFree := Summary.OverheadBytes;
  if Result.CurrHeapSize > PeakHeapSize then
    PeakHeapSize := Result.CurrHeapSize;
  if Result.CurrHeapUsed > PeakHeapUsed then
    PeakHeapUsed := Result.CurrHeapUsed;
  Result.MaxHeapSize := PeakHeapSize;
  Result.MaxHeapUsed := PeakHeapUsed;
end;

procedure Install;
var
  Manager: TMemoryManager;
begin
  GetMemoryManager(PreviousManager);
  Manager := PreviousManager;   { keeps the previous manager's thread and relocation hooks }
  Manager.NeedLock := False;
  Manager.Getmem := @FM5GetMem;
  Manager.Freemem := @FM5FreeMem;
  Manager.FreememSize := @FM5FreeMemSize;
  Manager.AllocMem := @FM5AllocMem;
  Manager.ReAllocMem := @FM5ReAllocMem;
  Manager.MemSize := @FM5MemSize;
  Manager.GetHeapStatus := @FM5GetHeapStatus;
  Manager.GetFPCHeapStatus := @FM5GetFPCHeapStatus;
  SetMemoryManager(Manager);
end;

{$else}
{ ---- Delphi: TMemoryManagerEx (System) --------------------------------------------------------
  System calls these with Size > 0 and P <> nil (it handles GetMem(0), FreeMem(nil) and the nil and
  0 cases of ReallocMem itself); they still answer those cases as C's malloc, free and realloc do.
  FreeMem returns 0 on success; a non-zero result makes System raise EInvalidPointer, and a nil
  result of GetMem, ReallocMem or AllocMem makes it raise EOutOfMemory. }

function FM5GetMem(Size: NativeInt): Pointer;
begin
  if Size < 0 then
    Result := nil
  else
    Result := FastMM_GetMem(NativeUInt(Size));
end;

function FM5FreeMem(P: Pointer): Integer;
begin
  if P = nil then
    Result := 0
  else if fm5_owns(P) = 0 then
  begin
    CountPreviousCall;
    Result := PreviousManager.FreeMem(P);
  end
  else
    Result := FastMM_FreeMem(P);
end;

function FM5ReallocMem(P: Pointer; Size: NativeInt): Pointer;
begin
  if P = nil then
    Result := FM5GetMem(Size)
  else if Size <= 0 then
  begin
    FM5FreeMem(P);
    Result := nil;
  end
  else if fm5_owns(P) = 0 then
  begin
    CountPreviousCall;
    Result := PreviousManager.ReallocMem(P, Size);
  end
  else
    Result := FastMM_ReallocMem(P, NativeUInt(Size));
end;

function FM5AllocMem(Size: NativeInt): Pointer;
begin
  if Size < 0 then
    Result := nil
  else
    Result := FastMM_AllocMem(NativeUInt(Size));
end;

function FM5RegisterExpectedMemoryLeak(P: Pointer): Boolean;
begin
  Result := FastMM_RegisterExpectedMemoryLeak(P) = 0;
end;

function FM5UnregisterExpectedMemoryLeak(P: Pointer): Boolean;
begin
  Result := FastMM_UnregisterExpectedMemoryLeak(P) = 0;
end;

procedure Install;
var
  Manager: TMemoryManagerEx;
begin
  GetMemoryManager(PreviousManager);
  Manager.GetMem := FM5GetMem;
  Manager.FreeMem := FM5FreeMem;
  Manager.ReallocMem := FM5ReallocMem;
  Manager.AllocMem := FM5AllocMem;
  Manager.RegisterExpectedMemoryLeak := FM5RegisterExpectedMemoryLeak;
  Manager.UnregisterExpectedMemoryLeak := FM5UnregisterExpectedMemoryLeak;
  SetMemoryManager(Manager);
end;
{$endif}

initialization
  Install;

finalization
  { fm5 stays installed (see the header). Delphi's ReportMemoryLeaksOnShutdown asks for fm5's
    report, which the DLL writes when it unloads, after the last finalization. }
{$ifndef FPC}
  if ReportMemoryLeaksOnShutdown then
    FastMM_SetReportMemoryLeaksOnShutdown(1);
{$endif}
end.
