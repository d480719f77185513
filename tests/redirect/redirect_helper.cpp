/* redirect_helper.dll, loaded by redirect_late_dll after the switch: a MinGW C++ DLL (libstdc++
 * linked statically) whose imports of msvcrt.dll fm5 patches when it loads, before its DllMain, so
 * that even the blocks of its static constructors are fm5's. */
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
struct Constructed {
    std::vector<std::string> strings;
    Constructed()
    {
        for (int i = 0; i < 100; i++)
            strings.push_back(std::string(static_cast<size_t>(50 + i), static_cast<char>('a' + i % 26)));
    }
} constructed_at_load;
} // namespace

extern "C" {
__declspec(dllexport) void *helper_malloc(size_t size) { return malloc(size); }
__declspec(dllexport) void *helper_realloc(void *p, size_t size) { return realloc(p, size); }
__declspec(dllexport) void helper_free(void *p) { free(p); }
__declspec(dllexport) char *helper_strdup(const char *s) { return _strdup(s); }
__declspec(dllexport) void *helper_new_string(size_t length) { return new std::string(length, 'h'); }
__declspec(dllexport) int helper_string_ok(const void *s, size_t length)
{
    const std::string *text = static_cast<const std::string *>(s);
    return text->size() == length && text->find_first_not_of('h') == std::string::npos;
}
__declspec(dllexport) void helper_delete_string(void *s) { delete static_cast<std::string *>(s); }
__declspec(dllexport) const void *helper_constructed_data(void) { return constructed_at_load.strings.data(); }
}
