/* echo_server_<clients>: after the sgcWebSockets memory-manager benchmark (Indy server: one thread per
 * connection). A Winsock echo server on 127.0.0.1 (an ephemeral port) runs one thread per connection;
 * <clients> client threads, each on its own connection, send messages one at a time and wait for the
 * echo. The server receives every message into a block from the allocator under test, copies it into a
 * second block, sends that back, and frees both (4 allocator calls per message). ECHO_MESSAGES messages
 * in all (x --scale), split evenly over the clients; the time runs from the first message sent (the
 * clients' start gate, after every connection is made) to the last echo received.
 * Message payloads are 32..1055 bytes, after a 4-byte length. */
#include <winsock2.h>
#include <ws2tcpip.h>

#include "bench.h"

#include <string.h>

/* sgc's benchmark sends 100,000 messages. A loopback round trip under Wine costs about 0.2-0.4 ms
 * (every socket call goes through wineserver), so a full run takes 20-40 s: the broad table runs at
 * --scale 0.1 (10,000 messages). */
#define ECHO_MESSAGES 100000.0
#define ECHO_MAX_PAYLOAD 1055

typedef struct echo_client {
    SOCKET s;
    long messages, first;
    char *buffer;
} echo_client;

typedef struct echo_server {
    SOCKET s;
    uint64_t ops;
} echo_server;

static int send_all(SOCKET s, const char *p, int n)
{
    while (n > 0) {
        int k = send(s, p, n, 0);
        if (k <= 0)
            return -1;
        p += k;
        n -= k;
    }
    return 0;
}

/* 1: all n bytes, 0: the peer closed before the first byte, -1: error or a partial message. */
static int recv_all(SOCKET s, char *p, int n)
{
    int got = 0;
    while (got < n) {
        int k = recv(s, p + got, n - got, 0);
        if (k == 0 && got == 0)
            return 0;
        if (k <= 0)
            return -1;
        got += k;
    }
    return 1;
}

static DWORD WINAPI echo_server_thread(void *arg)
{
    echo_server *t = arg;
    uint64_t ops = 0;
    for (;;) {
        uint32_t length;
        int r = recv_all(t->s, (char *)&length, 4);
        if (r == 0)
            break;
        if (r < 0 || length > ECHO_MAX_PAYLOAD)
            bench_fatal("echo server: bad receive (%d)", WSAGetLastError());
        char *in = b_malloc(&ops, length);
        if (recv_all(t->s, in, (int)length) != 1)
            bench_fatal("echo server: truncated message (%d)", WSAGetLastError());
        char *out = b_malloc(&ops, length + 4);
        memcpy(out, &length, 4);
        memcpy(out + 4, in, length);
        b_free(&ops, in);
        if (send_all(t->s, out, (int)length + 4) != 0)
            bench_fatal("echo server: send failed (%d)", WSAGetLastError());
        b_free(&ops, out);
    }
    t->ops = ops;
    return 0;
}

static DWORD WINAPI echo_client_thread(void *arg)
{
    echo_client *c = arg;
    char *buf = c->buffer, *echo = c->buffer + 4 + ECHO_MAX_PAYLOAD;
    bench_wait_gate();
    for (long m = 0; m < c->messages; m++) {
        uint32_t k = (uint32_t)(c->first + m);
        uint32_t length = 32 + (uint32_t)((k * 2654435761u) >> 22);
        memcpy(buf, &length, 4);
        buf[4] = (char)k;
        buf[4 + length - 1] = (char)(k >> 8);
        if (send_all(c->s, buf, (int)length + 4) != 0)
            bench_fatal("echo client: send failed (%d)", WSAGetLastError());
        if (recv_all(c->s, echo, (int)length + 4) != 1 || memcmp(echo, buf, 5) != 0 ||
            echo[4 + length - 1] != buf[4 + length - 1])
            bench_fatal("echo client: bad echo (%d)", WSAGetLastError());
    }
    return 0;
}

static void no_delay(SOCKET s)
{
    BOOL on = TRUE;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, (const char *)&on, sizeof on);
}

uint64_t wl_echo_server(const workload *w, double scale)
{
    int clients = (int)w->param;
    WSADATA wsa;
    if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0)
        bench_fatal("WSAStartup failed");
    SOCKET listener = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    int address_size = sizeof address;
    if (listener == INVALID_SOCKET || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(listener, SOMAXCONN) != 0 ||
        getsockname(listener, (struct sockaddr *)&address, &address_size) != 0)
        bench_fatal("echo: cannot listen on 127.0.0.1 (%d)", WSAGetLastError());

    echo_client *c = bench_pages((size_t)clients * sizeof *c);
    echo_server *sv = bench_pages((size_t)clients * sizeof *sv);
    HANDLE *server_threads = bench_pages((size_t)clients * sizeof *server_threads);
    char *buffers = bench_pages((size_t)clients * 2 * (4 + ECHO_MAX_PAYLOAD));
    long total = bench_scaled(ECHO_MESSAGES, scale), first = 0;
    if (total < clients)
        total = clients;
    for (int i = 0; i < clients; i++) {
        c[i].s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
        if (c[i].s == INVALID_SOCKET ||
            connect(c[i].s, (struct sockaddr *)&address, sizeof address) != 0)
            bench_fatal("echo: client %d cannot connect (%d)", i, WSAGetLastError());
        sv[i].s = accept(listener, NULL, NULL);
        if (sv[i].s == INVALID_SOCKET)
            bench_fatal("echo: accept %d failed (%d)", i, WSAGetLastError());
        no_delay(c[i].s);
        no_delay(sv[i].s);
        c[i].messages = total / clients + (i < total % clients);
        c[i].first = first;
        first += c[i].messages;
        c[i].buffer = buffers + (size_t)i * 2 * (4 + ECHO_MAX_PAYLOAD);
        server_threads[i] = CreateThread(NULL, 64 * 1024, echo_server_thread, &sv[i],
                                         STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
        if (!server_threads[i])
            bench_fatal("echo: CreateThread for connection %d failed (%lu)", i, GetLastError());
    }
    bench_run_threads(clients, echo_client_thread, c, sizeof *c, 64 * 1024);
    bench_timer_stop();

    uint64_t ops = 0;
    for (int i = 0; i < clients; i++)
        closesocket(c[i].s); /* the server thread sees the end of the stream and ends */
    for (int i = 0; i < clients; i++) {
        WaitForSingleObject(server_threads[i], INFINITE);
        CloseHandle(server_threads[i]);
        closesocket(sv[i].s);
        ops += sv[i].ops;
    }
    closesocket(listener);
    WSACleanup();
    bench_free_pages(c);
    bench_free_pages(sv);
    bench_free_pages(server_threads);
    bench_free_pages(buffers);
    return ops;
}
