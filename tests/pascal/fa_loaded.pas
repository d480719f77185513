{ A program that does not name fm5mm: run_pascal_test.py compiles it with -Fafm5mm, which loads the
  unit before the program's own uses clause. It must then run on fm5 (its strings, objects and arrays
  are in fm5's memory) and free everything: the test expects no leak report and no event at all.
  fm5_owns is imported here, since fm5mm's declarations are not in scope without naming the unit. }
program fa_loaded;

{$mode objfpc}{$H+}

uses
  SysUtils, Classes;

{$ifdef WIN64}
const FM5_DLL = 'fm5_64.dll';
{$else}
const FM5_DLL = 'fm5_32.dll';
{$endif}

function fm5_owns(P: Pointer): Integer; cdecl; external FM5_DLL name 'fm5_owns';
function FastMM_GetReportMemoryLeaksOnShutdown: Integer; cdecl;
  external FM5_DLL name 'FastMM_GetReportMemoryLeaksOnShutdown';

procedure Check(const Name: string; Got, Expected: Int64);
begin
  WriteLn('CHECK ', Name, ' ', Got, ' ', Expected);
end;

var
  S: string;
  List: TStringList;
  A: array of Integer;
  I: Integer;
  Sum: Int64;
begin
  Check('memory_manager_set', Ord(IsMemoryManagerSet), 1);
  Check('leak_report_on_shutdown', FastMM_GetReportMemoryLeaksOnShutdown, 1);
  S := '';
  for I := 1 to 2000 do
    S := S + IntToStr(I);
  Check('fm5_owns_string', fm5_owns(Pointer(S)), 1);
  List := TStringList.Create;
  for I := 1 to 1000 do
    List.Add(IntToStr(I * 7919 mod 1000));
  List.Sort;
  Check('fm5_owns_object', fm5_owns(Pointer(List)), 1);
  Check('sorted_first_last', StrToInt(List[0]) * 1000 + StrToInt(List[List.Count - 1]), 0 * 1000 + 999);
  List.Free;
  SetLength(A, 50000);
  Sum := 0;
  for I := 0 to High(A) do
  begin
    A[I] := I;
    Inc(Sum, A[I]);
  end;
  Check('fm5_owns_array', fm5_owns(Pointer(A)), 1);
  Check('array_sum', Sum, Int64(50000) * 49999 div 2);
  WriteLn('DONE');
end.
