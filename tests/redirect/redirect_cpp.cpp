/* Malloc redirection in a MinGW C++ program (libstdc++ linked statically, so its operator new calls
 * malloc through the program's import of msvcrt.dll): after fm5_redirect_crt, std::string,
 * std::vector and std::map live in fm5, from several threads that free each other's blocks; the
 * content is right (checksums computed while building and again from the containers), fm5's usage
 * grows while the data is held and comes back after, and fm5 records no event. */
#include "redirect_util.h"
#include <windows.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <map>
#include <string>
#include <vector>

namespace {

const int THREADS = 6;
const int ROUNDS = 4;
const int ITEMS = 3000;

struct Batch {
    std::vector<std::string> strings;
    std::map<int, std::string> by_key;
    uint64_t checksum_at_build = 0;
    volatile LONG ready = 0;
};

Batch batches[THREADS][ROUNDS];
volatile LONG owned_misses;

uint64_t mix(uint64_t h, const std::string &s)
{
    for (unsigned char c : s)
        h = (h ^ c) * 1099511628211ull;
    return h ^ s.size();
}

std::string make_text(unsigned seed, size_t length)
{
    std::string s;
    for (size_t i = 0; i < length; i++)
        s += static_cast<char>('a' + (seed + i * 7) % 26);
    return s;
}

/* Builds its own batches, then checks and frees those of the previous thread (cross-thread frees). */
DWORD WINAPI worker(void *argument)
{
    int self = static_cast<int>(reinterpret_cast<intptr_t>(argument));
    for (int round = 0; round < ROUNDS; round++) {
        Batch &b = batches[self][round];
        uint64_t h = 14695981039346656037ull;
        for (int i = 0; i < ITEMS; i++) {
            unsigned seed = static_cast<unsigned>(self * 100003 + round * 1009 + i);
            size_t length = (seed * 2654435761u) % (i % 50 == 0 ? 20000 : 300);
            std::string text = make_text(seed, length);
            h = mix(h, text);
            b.by_key[static_cast<int>(seed)] = text;
            b.strings.push_back(std::move(text));
        }
        if (!fm5_owns(b.strings.data()) || !fm5_owns(b.strings.back().data()))
            InterlockedIncrement(&owned_misses);
        b.checksum_at_build = h;
        InterlockedExchange(&b.ready, 1);
    }
    int other = (self + 1) % THREADS;
    for (int round = 0; round < ROUNDS; round++) {
        Batch &b = batches[other][round];
        while (InterlockedCompareExchange(&b.ready, 1, 1) != 1)
            Sleep(1);
        uint64_t h = 14695981039346656037ull;
        for (const std::string &s : b.strings)
            h = mix(h, s);
        bool same = h == b.checksum_at_build && b.by_key.size() <= b.strings.size();
        for (const auto &entry : b.by_key)
            if (entry.second != make_text(static_cast<unsigned>(entry.first), entry.second.size()))
                same = false;
        if (!same)
            InterlockedIncrement(&owned_misses);
        std::vector<std::string>().swap(b.strings);
        std::map<int, std::string>().swap(b.by_key);
        InterlockedExchange(&b.ready, 2);
    }
    return 0;
}

size_t allocated_bytes()
{
    FastMM_UsageSummary summary;
    FastMM_GetUsageSummary(&summary);
    return summary.AllocatedBytes;
}

} // namespace

int main()
{
    redirect_watch_events();
    void *before = malloc(64);
    CHECK(before && !fm5_owns(before));

    int patched = fm5_redirect_crt();
    printf("fm5_redirect_crt: %d import slots patched\n", patched);
    CHECK(patched > 0);
    CHECK(fm5_redirect_crt() == 0); /* idempotent: nothing left to patch */

    void *after = malloc(64);
    CHECK(after && fm5_owns(after));
    int *numbers = new int[1000];
    CHECK(fm5_owns(numbers));
    std::string *text = new std::string(5000, 'q');
    CHECK(fm5_owns(text) && fm5_owns(text->data()));
    CHECK(_msize(after) == fm5_usable_size(after) && _msize(after) >= 64);
    CHECK(_msize(before) == 64);
    free(before); /* msvcrt's block, back to msvcrt */
    free(after);
    delete[] numbers;
    delete text;

    size_t baseline = allocated_bytes();
    size_t committed_baseline = FastMM_GetCurrentMemoryUsage();
    HANDLE threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        threads[i] = CreateThread(NULL, 0, worker, reinterpret_cast<void *>(static_cast<intptr_t>(i)), 0, NULL);
        CHECK(threads[i] != NULL);
    }
    /* While the first batches are held: wait until every thread has built its first batch. */
    for (int i = 0; i < THREADS; i++)
        while (InterlockedCompareExchange(&batches[i][0].ready, 0, 0) == 0)
            Sleep(1);
    size_t peak = allocated_bytes();
    size_t committed_peak = FastMM_GetCurrentMemoryUsage();
    WaitForMultipleObjects(THREADS, threads, TRUE, INFINITE);
    for (int i = 0; i < THREADS; i++)
        CloseHandle(threads[i]);
    FastMM_ProcessAllPendingFrees();
    size_t end = allocated_bytes();
    printf("fm5 allocated bytes: %zu before the threads, %zu while held, %zu after; committed %zu / %zu\n",
           baseline, peak, end, committed_baseline, committed_peak);
    CHECK(owned_misses == 0);
    CHECK(peak > baseline + 1000000);
    CHECK(committed_peak > committed_baseline);
    CHECK(end < baseline + 65536);

    /* std::map and std::vector of the main thread, through operator new and delete. */
    std::map<std::string, std::vector<int>> index;
    for (int i = 0; i < 2000; i++)
        index[std::to_string(i) + make_text(static_cast<unsigned>(i), 10 + i % 40)].assign(static_cast<size_t>(i % 100), i);
    long total = 0;
    for (const auto &entry : index)
        for (int v : entry.second)
            total += v;
    long expected = 0;
    for (int i = 0; i < 2000; i++)
        expected += static_cast<long>(i % 100) * i;
    CHECK(total == expected);
    CHECK(fm5_owns(&*index.begin()) && fm5_owns(index.rbegin()->second.data()));
    index.clear();
    CHECK(allocated_bytes() < baseline + 65536);
    CHECK(redirect_events == 0);
    return redirect_finish("redirect_cpp");
}
