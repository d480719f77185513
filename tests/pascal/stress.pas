{ A Free Pascal program on fm5 through pascal/fm5mm.pas: long strings, dynamic arrays, classes,
  TList and TStringList, and threads that free each other's strings and objects, heavily enough to
  use small, medium and large blocks. Every result is computed two ways and printed as
  "CHECK <name> <got> <expected>"; run_pascal_test.py compares them, recomputes the string-list
  hashes itself, and checks the leak report that fm5 writes when the DLL unloads.

  Usage: stress.exe SCALE LEAK_SIZE   (SCALE 1 is the debug-mode run's size; the release run uses 4) }
program stress;

{$mode objfpc}{$H+}
{$Q-}{$R-}

uses
  fm5mm, SysUtils, Classes;

var
  Failures: Integer = 0;
  Scale: Integer = 4;

procedure Check(const Name: string; Got, Expected: Int64);
begin
  WriteLn('CHECK ', Name, ' ', Got, ' ', Expected);
  if Got <> Expected then
    Inc(Failures);
end;

procedure Note(const Name: string; Value: Int64);
begin
  WriteLn('NOTE ', Name, ' ', Value);
end;

{ ---- deterministic data: the same generator and hash as run_pascal_test.py ---------------------- }

function NextRandom(var State: Cardinal): Cardinal;
begin
  State := State * 1103515245 + 12345;
  Result := (State shr 8) and $FFFFFF;
end;

function FnvAdd(Hash: Cardinal; const S: RawByteString): Cardinal;
var
  I: Integer;
begin
  Result := Hash;
  for I := 1 to Length(S) do
    Result := (Result xor Ord(S[I])) * 16777619;
end;

const
  FnvStart = Cardinal(2166136261);

{ Key I of a run: 'k' and 2 to 40 lowercase letters. }
function MakeKey(var State: Cardinal): RawByteString;
var
  Len, I: Integer;
begin
  Len := 2 + Integer(NextRandom(State) mod 39);
  SetLength(Result, Len + 1);
  Result[1] := 'k';
  for I := 2 to Len + 1 do
    Result[I] := AnsiChar(Ord('a') + NextRandom(State) mod 26);
end;

{ ---- classes: three sizes of object and inheritance -------------------------------------------- }

type
  TShape = class
  public
    Id: Integer;
    Name: string;
    constructor Create(AId: Integer); virtual;
    function Value: Int64; virtual;
  end;
  TShapeClass = class of TShape;

  TCircle = class(TShape)
  public
    Radius: Int64;
    constructor Create(AId: Integer); override;
    function Value: Int64; override;
  end;

  TPolygon = class(TCircle)
  public
    Points: array[0..63] of Int64;       { about 600 bytes: still a small block }
    constructor Create(AId: Integer); override;
    function Value: Int64; override;
  end;

  TBitmapShape = class(TPolygon)
  public
    Pixels: array[0..2499] of Int64;     { 20 KB: a medium block }
    constructor Create(AId: Integer); override;
    function Value: Int64; override;
  end;

constructor TShape.Create(AId: Integer);
begin
  Id := AId;
  Name := 'shape' + IntToStr(AId);
end;

function TShape.Value: Int64;
begin
  Result := Id + Length(Name);
end;

constructor TCircle.Create(AId: Integer);
begin
  inherited Create(AId);
  Radius := AId mod 97;
end;

function TCircle.Value: Int64;
begin
  Result := inherited Value + Radius * 3;
end;

constructor TPolygon.Create(AId: Integer);
var
  I: Integer;
begin
  inherited Create(AId);
  for I := 0 to High(Points) do
    Points[I] := AId + I;
end;

function TPolygon.Value: Int64;
begin
  { sum of AId + I for I in 0..63 }
  Result := inherited Value + Points[0] + Points[High(Points)];
end;

constructor TBitmapShape.Create(AId: Integer);
begin
  inherited Create(AId);
  Pixels[0] := AId;
  Pixels[High(Pixels)] := 2 * AId;
end;

function TBitmapShape.Value: Int64;
begin
  Result := inherited Value + Pixels[0] + Pixels[High(Pixels)];
end;

{ The same values without objects. }
function ExpectedShapeValue(Kind, Id: Integer): Int64;
var
  NameLength: Int64;
begin
  NameLength := Length('shape' + IntToStr(Id));
  Result := Id + NameLength;
  if Kind >= 1 then
    Inc(Result, (Id mod 97) * 3);
  if Kind >= 2 then
    Inc(Result, Id + (Id + 63));
  if Kind >= 3 then
    Inc(Result, Id + 2 * Id);
end;

const
  ShapeClasses: array[0..3] of TShapeClass = (TShape, TCircle, TPolygon, TBitmapShape);

{ ---- the workload every thread runs ------------------------------------------------------------- }

{ Strings, dynamic arrays, objects in a TList and a TStringList. Returns a hash of everything it
  computed; Mismatches counts the results that disagreed with their second computation. }
function Workload(Seed: Cardinal; Rounds: Integer; out Mismatches: Integer): Cardinal;
var
  State: Cardinal;
  S, Piece, Copied: AnsiString;
  U: UnicodeString;
  Hash, Streamed: Cardinal;
  A, B: array of Integer;
  I, R, K, N: Integer;
  Sum, Want: Int64;
  List: TList;
  Strings: TStringList;
  Shape: TShape;
begin
  Mismatches := 0;
  Result := FnvStart;
  State := Seed;
  for R := 1 to Rounds do
  begin
    { AnsiString concatenation up to about 40 KB (small blocks grow into medium ones); the FNV hash
      of the whole equals the hash streamed over the pieces. }
    S := '';
    Streamed := FnvStart;
    for I := 1 to 4000 do
    begin
      Piece := IntToStr(NextRandom(State)) + ';';
      S := S + Piece;
      Streamed := FnvAdd(Streamed, Piece);
    end;
    Hash := FnvAdd(FnvStart, S);
    if Hash <> Streamed then
      Inc(Mismatches);
    { copy-on-write: the copy shares S until it is written to }
    Copied := S;
    if Pointer(Copied) <> Pointer(S) then
      Inc(Mismatches);
    UniqueString(Copied);
    Copied[1] := 'x';
    if (Pointer(Copied) = Pointer(S)) or (S[1] = 'x') then
      Inc(Mismatches);
    if FnvAdd(FnvStart, Copy(S, 2, MaxInt)) <> FnvAdd(FnvStart, Copy(Copied, 2, MaxInt)) then
      Inc(Mismatches);
    Result := FnvAdd(Result, IntToStr(Hash));

    { UnicodeString: concatenation and SetLength, checked by a sum of code units }
    U := '';
    Want := 0;
    for I := 1 to 2000 do
    begin
      K := 1 + Integer(NextRandom(State) mod 50);
      U := U + UnicodeString(StringOfChar('a', K mod 7)) + WideChar($100 + K);
      Inc(Want, (K mod 7) * Ord('a') + $100 + K);
    end;
    Sum := 0;
    for I := 1 to Length(U) do
      Inc(Sum, Ord(U[I]));
    if Sum <> Want then
      Inc(Mismatches);
    N := Length(U);
    SetLength(U, N * 2);
    for I := N + 1 to 2 * N do
      U[I] := U[I - N];
    Sum := 0;
    for I := 1 to Length(U) do
      Inc(Sum, Ord(U[I]));
    if Sum <> 2 * Want then
      Inc(Mismatches);
    Result := FnvAdd(Result, IntToStr(Want));

    { A dynamic array grown one element at a time to 160,000 integers (640 KB: a large block), then
      copied: assignment shares it, SetLength makes it unique, Copy copies. }
    SetLength(A, 0);
    N := 40000 * (1 + R mod 4);
    for I := 0 to N - 1 do
    begin
      SetLength(A, I + 1);
      A[I] := I * 7 + 3;
    end;
    B := A;
    if Pointer(B) <> Pointer(A) then
      Inc(Mismatches);
    SetLength(B, N);
    B[0] := -1;
    if (Pointer(B) = Pointer(A)) or (A[0] <> 3) then
      Inc(Mismatches);
    B := Copy(A, N div 2, N);
    Sum := 0;
    for I := 0 to High(B) do
      Inc(Sum, B[I]);
    { sum of 7i + 3 for i in N/2 .. N-1 }
    Want := 7 * (Int64(N - 1) * N div 2 - Int64(N div 2 - 1) * (N div 2) div 2) + 3 * (N - N div 2);
    if Sum <> Want then
      Inc(Mismatches);
    Result := FnvAdd(Result, IntToStr(Sum));
    A := nil;
    B := nil;

    { Objects of four classes in a TList, sorted by value, half deleted }
    List := TList.Create;
    try
      Sum := 0;
      Want := 0;
      for I := 1 to 1500 do
      begin
        K := Integer(NextRandom(State) mod 4);
        if (K = 3) and (I mod 8 <> 0) then
          K := 2;   { fewer 20 KB objects }
        Shape := ShapeClasses[K].Create(I);
        List.Add(Shape);
        Inc(Want, ExpectedShapeValue(K, I));
      end;
      for I := 0 to List.Count - 1 do
        Inc(Sum, TShape(List[I]).Value);
      if Sum <> Want then
        Inc(Mismatches);
      Result := FnvAdd(Result, IntToStr(Sum));
      for I := List.Count - 1 downto 0 do
        if I mod 2 = 0 then
        begin
          TShape(List[I]).Free;
          List.Delete(I);
        end;
      if List.Count <> 750 then
        Inc(Mismatches);
      for I := 0 to List.Count - 1 do
        TShape(List[I]).Free;
    finally
      List.Free;
    end;

    { A TStringList of 3,000 keys, sorted ordinally, every third deleted }
    Strings := TStringList.Create;
    try
      Strings.CaseSensitive := True;
      for I := 1 to 3000 do
        Strings.AddObject(MakeKey(State), TObject(PtrInt(I)));
      Strings.Sort;
      for I := 1 to Strings.Count - 1 do
        if CompareStr(Strings[I - 1], Strings[I]) > 0 then
          Inc(Mismatches);
      for I := Strings.Count - 1 downto 0 do
        if I mod 3 = 0 then
          Strings.Delete(I);
      Hash := FnvStart;
      for I := 0 to Strings.Count - 1 do
        Hash := FnvAdd(Hash, Strings[I] + #10);
      Result := FnvAdd(Result, IntToStr(Hash));
    finally
      Strings.Free;
    end;
  end;
end;

{ ---- threads: each runs the workload, and frees what its neighbour produced ----------------------- }

type
  TItem = class
  public
    Producer: Integer;
    Text: AnsiString;
    Data: array of Int64;
  end;

const
  ThreadCount = 4;
  Batch = 100;

var
  Queues: array[0..ThreadCount - 1] of TThreadList;
  Arrived: LongInt = 0;
  CrossThreadFrees: Integer = 0;
  ProducedSum: Int64 = 0;
  ConsumedSum: Int64 = 0;
  Tally: TRTLCriticalSection;

function ItemValue(Item: TItem): Int64;
begin
  Result := Length(Item.Text) + Length(Item.Data);
  if Length(Item.Data) > 0 then
    Inc(Result, Item.Data[High(Item.Data)]);
end;

{ Every thread waits here until all of them arrived for the Phase-th time. }
procedure Barrier(Phase: Integer);
begin
  InterLockedIncrement(Arrived);
  while InterLockedExchangeAdd(Arrived, 0) < Phase * ThreadCount do
    ThreadSwitch;
end;

type
  TWorker = class(TThread)
  private
    FIndex, FRounds: Integer;
  protected
    procedure Execute; override;
  public
    ResultHash: Cardinal;
    Mismatches: Integer;
    constructor Create(AIndex, ARounds: Integer);
  end;

constructor TWorker.Create(AIndex, ARounds: Integer);
begin
  FIndex := AIndex;
  FRounds := ARounds;
  inherited Create(False);
end;

{ In each phase a thread makes Batch objects, each with a string and an array (8 bytes to 40 KB),
  waits for the others, then frees every object its neighbour made. }
procedure TWorker.Execute;
var
  Phase, I, Cross: Integer;
  Item: TItem;
  Items: TList;
  Produced, Consumed: Int64;
  Strings: array of AnsiString;
begin
  Produced := 0;
  Consumed := 0;
  Cross := 0;
  for Phase := 1 to 2 * FRounds do
  begin
    for I := 1 to Batch do
    begin
      Item := TItem.Create;
      Item.Producer := FIndex;
      Item.Text := StringOfChar(AnsiChar(Ord('a') + I mod 26), (I * 37 + Phase) mod 3000);
      SetLength(Item.Data, (I * 13 + Phase * 101) mod 5000);
      if Length(Item.Data) > 0 then
        Item.Data[High(Item.Data)] := I + FIndex;
      Inc(Produced, ItemValue(Item));
      Queues[FIndex].Add(Item);
    end;
    Barrier(2 * Phase - 1);
    Items := Queues[(FIndex + 1) mod ThreadCount].LockList;
    try
      for I := 0 to Items.Count - 1 do
      begin
        Item := TItem(Items[I]);
        Inc(Consumed, ItemValue(Item));
        if Item.Producer <> FIndex then
          Inc(Cross);
        Item.Free;
      end;
      Items.Clear;
    finally
      Queues[(FIndex + 1) mod ThreadCount].UnlockList;
    end;
    Barrier(2 * Phase);
  end;
  SetLength(Strings, 100);
  for I := 0 to High(Strings) do
    Strings[I] := IntToStr(I) + StringOfChar('z', I * 20);
  Strings := nil;

  ResultHash := Workload(Cardinal(1000 + FIndex), FRounds, Mismatches);

  EnterCriticalSection(Tally);
  Inc(ProducedSum, Produced);
  Inc(ConsumedSum, Consumed);
  Inc(CrossThreadFrees, Cross);
  LeaveCriticalSection(Tally);
end;

procedure TestThreads;
var
  Workers: array[0..ThreadCount - 1] of TWorker;
  I, Mismatches, Sequential: Integer;
  Want: Cardinal;
begin
  InitCriticalSection(Tally);
  for I := 0 to ThreadCount - 1 do
    Queues[I] := TThreadList.Create;
  for I := 0 to ThreadCount - 1 do
    Workers[I] := TWorker.Create(I, Scale);
  for I := 0 to ThreadCount - 1 do
    Workers[I].WaitFor;
  Check('threads_consumed_equals_produced', ConsumedSum, ProducedSum);
  Check('threads_cross_thread_frees', CrossThreadFrees, ThreadCount * Batch * 2 * Scale);
  Sequential := 0;
  for I := 0 to ThreadCount - 1 do
  begin
    Want := Workload(Cardinal(1000 + I), Scale, Mismatches);
    Inc(Sequential, Mismatches);
    Check('thread' + IntToStr(I) + '_hash_equals_sequential', Workers[I].ResultHash, Want);
    Check('thread' + IntToStr(I) + '_mismatches', Workers[I].Mismatches, 0);
    Workers[I].Free;
    Check('queue' + IntToStr(I) + '_empty', Queues[I].LockList.Count, 0);
    Queues[I].UnlockList;
    Queues[I].Free;
  end;
  Check('sequential_mismatches', Sequential, 0);
  DoneCriticalSection(Tally);
end;

{ ---- the string lists whose hashes the Python side recomputes ------------------------------------ }

procedure TestStringListHashes;
var
  Strings: TStringList;
  State, Hash: Cardinal;
  I: Integer;
begin
  Strings := TStringList.Create;
  try
    Strings.CaseSensitive := True;
    State := 12345;
    for I := 1 to 5000 * Scale do
      Strings.Add(MakeKey(State));
    Strings.Sort;
    Hash := FnvStart;
    for I := 0 to Strings.Count - 1 do
      Hash := FnvAdd(Hash, Strings[I] + #10);
    WriteLn('SORTED ', 5000 * Scale, ' ', Hash);
    for I := Strings.Count - 1 downto 0 do
      if I mod 3 = 0 then
        Strings.Delete(I);
    Hash := FnvStart;
    for I := 0 to Strings.Count - 1 do
      Hash := FnvAdd(Hash, Strings[I] + #10);
    WriteLn('DELETED ', Strings.Count, ' ', Hash);
  finally
    Strings.Free;
  end;
end;

{ ---- fm5 serves the memory ---------------------------------------------------------------------- }

var
  WalkTarget: Pointer;
  WalkFound: TFastMM_WalkBlockInfo;
  EventKind: Integer;
  EventPointer: Pointer;
  EventHasText: Boolean;

function FindBlock(Info: PFastMM_WalkBlockInfo; User: Pointer): Integer; cdecl;
begin
  if Info^.Address = WalkTarget then
  begin
    WalkFound := Info^;
    Result := 1;
  end
  else
    Result := 0;
end;

procedure OnEvent(Event: PFastMM_Event; User: Pointer); cdecl;
begin
  EventKind := Event^.Kind;
  EventPointer := Event^.Ptr;
  EventHasText := StrPos(Event^.Text, 'Invalid free') <> nil;
end;

procedure TestFm5Serves;
var
  S: AnsiString;
  U: UnicodeString;
  A: array of Int64;
  Shape: TShape;
  Held: array of AnsiString;
  Before, During, After: TFastMM_UsageSummary;
  CommittedBefore, CommittedDuring: NativeUInt;
  FpcStatus: TFPCHeapStatus;
  Status: THeapStatus;
  I: Integer;
  HeldBytes: Int64;
begin
  S := StringOfChar('s', 100);
  U := UnicodeString(StringOfChar('u', 5000));
  SetLength(A, 100000);
  Shape := TBitmapShape.Create(1);
  Check('fm5_owns_ansistring', fm5_owns(Pointer(S)), 1);
  Check('fm5_owns_unicodestring', fm5_owns(Pointer(U)), 1);
  Check('fm5_owns_dynamic_array', fm5_owns(Pointer(A)), 1);
  Check('fm5_owns_object', fm5_owns(Pointer(Shape)), 1);
  Shape.Free;
  A := nil;

  { 2,000 strings of 2 KB held: fm5's live bytes grow by at least 4 MB, and shrink back }
  FastMM_GetUsageSummary(@Before);
  CommittedBefore := FastMM_GetCurrentMemoryUsage;
  SetLength(Held, 2000);
  HeldBytes := 0;
  for I := 0 to High(Held) do
  begin
    Held[I] := StringOfChar(AnsiChar(Ord('A') + I mod 26), 2048);
    Inc(HeldBytes, Length(Held[I]));
  end;
  FastMM_GetUsageSummary(@During);
  CommittedDuring := FastMM_GetCurrentMemoryUsage;
  FpcStatus := GetFPCHeapStatus;
  Status := GetHeapStatus;
  Check('usage_grows_while_held', Ord(Int64(During.AllocatedBytes) - Int64(Before.AllocatedBytes) >= HeldBytes), 1);
  Check('committed_grows_while_held', Ord(Int64(CommittedDuring) - Int64(CommittedBefore) >= HeldBytes div 2), 1);
  Check('fpc_heap_status_used', Ord((FpcStatus.CurrHeapUsed >= HeldBytes) and
    (FpcStatus.CurrHeapSize >= FpcStatus.CurrHeapUsed) and (FpcStatus.MaxHeapUsed >= FpcStatus.CurrHeapUsed)), 1);
  Check('heap_status_allocated', Ord(Status.TotalAllocated >= HeldBytes), 1);
  Check('usage_efficiency_percent', Ord((During.EfficiencyPercentage > 0) and (During.EfficiencyPercentage <= 100)), 1);
  Held := nil;
  FastMM_GetUsageSummary(@After);
  Check('usage_shrinks_after_free', Ord(Int64(During.AllocatedBytes) - Int64(After.AllocatedBytes) >= HeldBytes), 1);
  Note('usage_before', Before.AllocatedBytes);
  Note('usage_during', During.AllocatedBytes);
  Note('usage_after', After.AllocatedBytes);
end;

{ ---- TMemoryManager semantics, the previous manager's blocks, the API ---------------------------- }

{ Called through the record: the RTL's FreeMem(p, size) does the same with a non-zero size. }
function MemoryManager_FreememSizeZero(P: Pointer): PtrUInt;
var
  Manager: TMemoryManager;
begin
  GetMemoryManager(Manager);
  Result := Manager.FreememSize(P, 0);
end;

procedure TestSemantics;
var
  P, Q: Pointer;
  Size, Freed: PtrUInt;
  Previous: TMemoryManager;
  CallsBefore: Cardinal;
  I: Integer;
  Intact: Boolean;
  Local: Int64;
begin
  { ReAllocMem as Free Pascal's own: nil grows from nothing, size 0 frees and sets nil }
  P := nil;
  ReAllocMem(P, 100);
  Check('reallocmem_nil_allocates', Ord((P <> nil) and (fm5_owns(P) = 1) and (MemSize(P) >= 100)), 1);
  FillChar(P^, 100, 7);
  ReAllocMem(P, 300000);
  Check('reallocmem_grows_medium', Ord((MemSize(P) >= 300000) and (PByte(P)[99] = 7)), 1);
  ReAllocMem(P, 2000000);
  Check('reallocmem_grows_large', Ord((MemSize(P) >= 2000000) and (PByte(P)[0] = 7)), 1);
  ReAllocMem(P, 0);
  Check('reallocmem_zero_frees', Ord(P = nil), 1);
  ReAllocMem(P, 0);
  Check('reallocmem_nil_zero', Ord(P = nil), 1);

  { Freemem returns the size it freed; FreememSize(p, 0) frees nothing, as SysFreememSize }
  P := GetMem(1000);
  Size := MemSize(P);
  Freed := FreeMem(P);
  Check('freemem_returns_size', Freed, Size);
  Check('freemem_nil', FreeMem(nil), 0);
  P := AllocMem(5000);
  Intact := True;
  for I := 0 to 4999 do
    if PByte(P)[I] <> 0 then
      Intact := False;
  Check('allocmem_zeroed', Ord(Intact), 1);
  Check('freememsize_zero_keeps_block', MemoryManager_FreememSizeZero(P), 0);
  Check('freememsize_zero_block_alive', Ord(FastMM_BlockMaximumUserBytes(P) >= 5000), 1);
  FreeMem(P, 5000);

  { A block of the previous manager (the RTL's own heap) is sized, resized and freed by it }
  FM5MM_GetPreviousMemoryManager(Previous);
  CallsBefore := FM5MM_PreviousManagerCalls;
  P := Previous.GetMem(1000);
  FillChar(P^, 1000, 9);
  Check('previous_block_not_fm5', fm5_owns(P), 0);
  Check('previous_block_memsize', MemSize(P), Previous.MemSize(P));
  ReAllocMem(P, 3000);
  Check('previous_block_resized_by_previous', Ord((fm5_owns(P) = 0) and (PByte(P)[999] = 9) and
    (Previous.MemSize(P) >= 3000)), 1);
  FreeMem(P);
  Check('previous_manager_calls', FM5MM_PreviousManagerCalls - CallsBefore, 3);
  Note('previous_manager_calls_total', FM5MM_PreviousManagerCalls);

  { The record layouts against the DLL: a walk finds a known block }
  P := GetMem(200);
  WalkTarget := P;
  FillChar(WalkFound, SizeOf(WalkFound), 0);
  FastMM_WalkBlocks(@FindBlock, nil, FastMM_SmallBlock, 1, 1000);
  Check('walk_found_block', Ord(WalkFound.Address = P), 1);
  Check('walk_usable_size', WalkFound.UsableSize, MemSize(P));
  Check('walk_kind', WalkFound.Kind, FastMM_SmallBlock);
  Check('walk_not_free', WalkFound.IsFree, 0);
  Check('walk_block_size', Ord(WalkFound.BlockSize >= WalkFound.UsableSize), 1);
  FreeMem(P);
  Check('sizeof_heap_status', SizeOf(TFastMM_HeapStatus), 10 * SizeOf(Pointer));
  Check('sizeof_usage_summary', SizeOf(TFastMM_UsageSummary), 2 * SizeOf(Pointer) + 8);
  Check('sizeof_walk_block_info', SizeOf(TFastMM_WalkBlockInfo), 3 * SizeOf(Pointer) + 24);
  Check('sizeof_event', SizeOf(TFastMM_Event), 4 * SizeOf(Pointer));

  { An event through the callback (kept out of the log file): an invalid free of a stack address }
  FastMM_SetLogToFileEvents(FastMM_GetLogToFileEvents and not (1 shl FastMM_EventInvalidFree));
  FastMM_SetEventCallback(@OnEvent, nil);
  Check('invalid_free_result', FastMM_FreeMem(@Local), -1);
  FastMM_SetEventCallback(nil, nil);
  FastMM_SetLogToFileEvents(FastMM_GetLogToFileEvents or (1 shl FastMM_EventInvalidFree));
  Check('event_kind', EventKind, FastMM_EventInvalidFree);
  Check('event_pointer', Ord(EventPointer = @Local), 1);
  Check('event_text', Ord(EventHasText), 1);

  { Minimum alignment }
  Check('enter_alignment_64', FastMM_EnterMinimumAddressAlignment(64), 0);
  Check('current_alignment', FastMM_GetCurrentMinimumAddressAlignment, 64);
  P := GetMem(24);
  Q := GetMem(40);
  Check('aligned_64', Ord((PtrUInt(P) mod 64 = 0) and (PtrUInt(Q) mod 64 = 0)), 1);
  FreeMem(P);
  FreeMem(Q);
  Check('exit_alignment_64', FastMM_ExitMinimumAddressAlignment(64), 0);

  { Debug mode entered from code, around a few managed values }
  FastMM_EnterDebugMode;
  Check('debug_mode_active', FastMM_DebugModeActive, 1);
  P := GetMem(123);
  Check('debug_block_size', FastMM_BlockCurrentUserBytes(P), 123);
  FillChar(P^, 123, 1);
  Check('debug_scan_intact', FastMM_ScanDebugBlocksForCorruption, 1);
  FreeMem(P);
  FastMM_ExitDebugMode;

  Check('pending_frees_drained', FastMM_ProcessAllPendingFrees, 1);
end;

var
  Leak, Expected: Pointer;
  LeakSize: PtrUInt;

begin
  if ParamCount >= 1 then
    Scale := StrToInt(ParamStr(1));
  LeakSize := 777;
  if ParamCount >= 2 then
    LeakSize := StrToInt(ParamStr(2));
  Note('debug_mode_at_start', FastMM_DebugModeActive);
  Note('previous_manager_calls_at_start', FM5MM_PreviousManagerCalls);
  Check('memory_manager_set', Ord(IsMemoryManagerSet), 1);
  Check('leak_report_on_shutdown', FastMM_GetReportMemoryLeaksOnShutdown, 1);
  WriteLn('LOGFILE ', FastMM_GetEventLogFilename);

  TestFm5Serves;
  TestSemantics;
  TestStringListHashes;
  TestThreads;

  { One block expected to leak (registered: not reported) and one deliberate leak (reported) }
  Expected := GetMem(LeakSize + 100);
  Check('register_expected_leak', FastMM_RegisterExpectedMemoryLeak(Expected), 0);
  Leak := GetMem(LeakSize);
  FillChar(Leak^, LeakSize, $4C);
  WriteLn('LEAK ', PtrUInt(Leak), ' ', LeakSize, ' ', MemSize(Leak));

  Note('failures', Failures);
  if Failures <> 0 then
  begin
    WriteLn('FAILED ', Failures);
    Halt(1);
  end;
  WriteLn('DONE');
end.
