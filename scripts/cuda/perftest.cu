// CUDA C++ NVSHMEM twin of testing/device-tests/examples/perftest.rs. Each kernel below mirrors, line for line,
// the Rust kernel of the same name in testing/kernels/perftest/src/lib.rs; the host side runs the cases
// the Rust driver prints with `--plan gpu` (grid, block, iterations, sizes, bandwidth slots,
// repetitions), with the same warm-up, checks (fresh random data over poisoned destinations),
// timing (CUDA events around each launch after a host barrier; median of the repetitions) and
// units, and prints `PTC,<row>,<param>,<value>,<unit>` on PE 0.
//
// Built with nvcc -rdc on the GPU machine by scripts/gpu-check.sh; NPES >= 2 processes, one per
// GPU (rank = device), bootstrap by unique ID through a file, as put_bw.cu does. Point-to-point
// rows run between PE 0 and PE 1; barrier and collectives over all NPES.
//
//   perftest RANK NPES UIDFILE PLANFILE
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#define CHECK(x)                                                                              \
    do {                                                                                      \
        cudaError_t e = (x);                                                                  \
        if (e != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

// ---------------------------------------------------------------------------------------------
// Kernels (see testing/kernels/perftest/src/lib.rs for what each one does and why).

// Block shares are 16-byte aligned: NVSHMEM's block copy uses 16-byte vectors only then.
constexpr unsigned long long SHARE_ALIGN = 16;

__device__ __forceinline__ void block_share(unsigned long long bytes, size_t *start, size_t *len) {
    unsigned long long blocks = gridDim.x;
    unsigned long long chunk = (bytes + blocks - 1) / blocks;
    chunk = (chunk + SHARE_ALIGN - 1) / SHARE_ALIGN * SHARE_ALIGN;
    unsigned long long s = min((unsigned long long)blockIdx.x * chunk, bytes);
    *start = s;
    *len = min(chunk, bytes - s);
}

// Iteration i moves `bytes` at offset (i % slots) * stride of dst and src (so no cache can answer
// a repeated transfer), each block its share; then one quiet.
template <class Copy>
__device__ __forceinline__ void rotating_copy(char *dst, const char *src, unsigned long long bytes,
                                              unsigned long long stride, unsigned slots,
                                              unsigned iters, Copy copy) {
    size_t start, len;
    block_share(bytes, &start, &len);
    unsigned slot = 0;
    for (unsigned i = 0; i < iters; i++) {
        if (len > 0) {
            size_t at = (size_t)((unsigned long long)slot * stride) + start;
            copy(dst + at, src + at, len);
        }
        slot++;  // a compare, not %: a 64-bit division per iteration would be measured too
        if (slot >= slots) slot = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) nvshmem_quiet();
}

__global__ void put_bw(char *dst, const char *src, unsigned long long bytes,
                       unsigned long long stride, unsigned slots, unsigned iters, int from, int to) {
    if (nvshmem_my_pe() != from) return;
    rotating_copy(dst, src, bytes, stride, slots, iters, [=](char *d, const char *s, size_t n) {
        nvshmemx_putmem_nbi_block(d, s, n, to);
    });
}

__global__ void get_bw(char *dst, const char *src, unsigned long long bytes,
                       unsigned long long stride, unsigned slots, unsigned iters, int from, int to) {
    if (nvshmem_my_pe() != from) return;
    rotating_copy(dst, src, bytes, stride, slots, iters, [=](char *d, const char *s, size_t n) {
        nvshmemx_getmem_nbi_block(d, s, n, to);
    });
}

__device__ __forceinline__ unsigned index_1d() { return blockIdx.x * blockDim.x + threadIdx.x; }

__global__ void p_lat(uint64_t *dst, uint64_t base, unsigned iters, int from, int to) {
    if (nvshmem_my_pe() != from || index_1d() != 0) return;
    for (uint64_t i = 0; i < iters; i++) {
        nvshmem_uint64_p(dst, base + i, to);
        nvshmem_quiet();
    }
}

__global__ void g_lat(const uint32_t *chain, unsigned iters, int from, int to, uint32_t *out) {
    if (nvshmem_my_pe() != from || index_1d() != 0) return;
    uint32_t at = 0;
    for (unsigned i = 0; i < iters; i++) at = nvshmem_uint32_g(chain + at, to);
    *out = at;
}

__global__ void amo_lat(uint64_t *ctr, unsigned iters, int from, int to, uint64_t *out) {
    if (nvshmem_my_pe() != from || index_1d() != 0) return;
    uint64_t add = 1, old = 0;
    for (unsigned i = 0; i < iters; i++) {
        old = nvshmem_uint64_atomic_fetch_add(ctr, add, to);
        add = (old & 1) + 1;
    }
    *out = old;
}

__global__ void amo_tput(uint64_t *words, unsigned same, unsigned iters, int from, int to,
                         uint64_t *sums) {
    if (nvshmem_my_pe() != from) return;
    size_t t = index_1d();
    uint64_t *word = same != 0 ? words : words + t;
    uint64_t sum = 0;
    for (unsigned i = 0; i < iters; i++) sum += nvshmem_uint64_atomic_fetch_add(word, 1, to);
    sums[t] = sum;
}

__global__ void pingpong(const char *src, char *mid, char *back, unsigned long long bytes,
                         uint64_t *sig, unsigned iters) {
    int me = nvshmem_my_pe();
    if (me > 1) return;
    bool first = threadIdx.x == 0;
    size_t n = bytes;
    for (uint64_t round = 1; round <= iters; round++) {
        if (me == 0) {
            nvshmemx_putmem_signal_nbi_block(mid, src, n, sig, round, NVSHMEM_SIGNAL_SET, 1);
            if (first) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_EQ, round);
            __syncthreads();
        } else {
            if (first) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_EQ, round);
            __syncthreads();
            nvshmemx_putmem_signal_nbi_block(back, mid, n, sig, round, NVSHMEM_SIGNAL_SET, 0);
        }
    }
    __syncthreads();
    if (first) nvshmem_quiet();
}

__global__ void barrier_lat(unsigned iters) {
    if (index_1d() == 0) {
        for (unsigned i = 0; i < iters; i++) nvshmem_barrier_all();
    }
}

__global__ void fcollect_lat(int32_t *dest, const int32_t *src, unsigned long long n,
                             unsigned iters) {
    for (unsigned i = 0; i < iters; i++) nvshmemx_int32_fcollect_block(NVSHMEM_TEAM_WORLD, dest, src, n);
}

__global__ void reduce_lat(int32_t *dest, const int32_t *src, unsigned long long n,
                           unsigned iters) {
    for (unsigned i = 0; i < iters; i++)
        nvshmemx_int32_sum_reduce_block(NVSHMEM_TEAM_WORLD, dest, src, n);
}

// ---------------------------------------------------------------------------------------------
// Host side.

struct Case {
    std::string family, row;
    unsigned long long param = 0, arg = 0;
    unsigned grid = 0, block = 0, iters = 0, slots = 1, reps = 0;
};

// Slot starts are multiples of this (SLOT_ALIGN in testing/device-tests/examples/perftest.rs).
static const unsigned long long SLOT_ALIGN = 256;
// Bytes from one bandwidth slot's start to the next (Case::stride).
static unsigned long long stride_of(const Case &c) {
    return (c.arg + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
}

// PLAN,family,row,param,grid,block,iters,arg,slots,reps (testing/device-tests/examples/perftest.rs:
// Case::plan_line).
static std::vector<Case> read_plan(const char *path) {
    std::ifstream in(path);
    if (!in) {
        fprintf(stderr, "cannot read the plan %s\n", path);
        exit(2);
    }
    std::vector<Case> cases;
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("PLAN,", 0) != 0) continue;
        std::vector<std::string> f;
        std::stringstream ss(line);
        std::string item;
        while (std::getline(ss, item, ',')) f.push_back(item);
        if (f.size() != 10) {
            fprintf(stderr, "bad plan line: %s\n", line.c_str());
            exit(2);
        }
        Case c;
        c.family = f[1];
        c.row = f[2];
        c.param = std::stoull(f[3]);
        c.grid = (unsigned)std::stoul(f[4]);
        c.block = (unsigned)std::stoul(f[5]);
        c.iters = (unsigned)std::stoul(f[6]);
        c.arg = std::stoull(f[7]);
        c.slots = (unsigned)std::stoul(f[8]);
        c.reps = (unsigned)std::stoul(f[9]);
        cases.push_back(c);
    }
    return cases;
}

// xorshift64* seeded per PE by splitmix64, as in testing/device-tests/examples/perftest.rs.
struct Rng {
    uint64_t s;
    Rng(uint64_t seed, int pe) {
        uint64_t z = seed ^ (uint64_t)(pe + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        s = (z ^ (z >> 31)) | 1;
    }
    uint64_t next() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return s * 0x2545F4914F6CDD1Dull;
    }
    std::vector<char> bytes(size_t n) {
        std::vector<char> v(n);
        for (auto &b : v) b = (char)(next() >> 56);
        return v;
    }
    std::vector<uint64_t> u64s(size_t n) {
        std::vector<uint64_t> v(n);
        for (auto &x : v) x = next();
        return v;
    }
    std::vector<int32_t> i32s(size_t n) {
        std::vector<int32_t> v(n);
        for (auto &x : v) x = (int32_t)(uint32_t)(next() >> 32);
        return v;
    }
    // A random single-cycle permutation of 0..n (Sattolo).
    std::vector<uint32_t> cycle(size_t n) {
        std::vector<uint32_t> p(n);
        for (size_t i = 0; i < n; i++) p[i] = (uint32_t)i;
        for (size_t i = n - 1; i >= 1; i--) std::swap(p[i], p[next() % i]);
        return p;
    }
};

static const unsigned char POISON = 0xA5;
static const size_t GUARD = 64;

template <class T>
static T poison_of() {
    T v;
    memset(&v, POISON, sizeof v);
    return v;
}

// first + (first + 1) + ... + (first + count - 1), wrapping like the device's adds.
static uint64_t arith_sum(uint64_t first, uint64_t count) {
    uint64_t tail = count % 2 == 0 ? count / 2 * (count - 1) : (count - 1) / 2 * count;
    return first * count + tail;
}

struct Bench {
    int me, npes;
    uint64_t seed;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    int failures = 0;

    Rng rng(int pe) const { return Rng(seed, pe); }

    template <class T>
    std::vector<T> download(const T *dev, size_t n) {
        std::vector<T> v(n);
        CHECK(cudaMemcpy(v.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost));
        return v;
    }
    template <class T>
    void upload(T *dev, const std::vector<T> &v) {
        CHECK(cudaMemcpy(dev, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    // Host barrier after this PE's work, as Shmem::barrier_all.
    void barrier() {
        CHECK(cudaDeviceSynchronize());
        nvshmem_barrier_all();
    }

    // Launches `k` with `args` converted to its parameter types, cooperatively or not (as
    // cuLaunchCooperativeKernel / cuLaunchKernel in the Rust runtime).
    template <class... P, class... A>
    void launch(const Case &c, bool coop, void (*k)(P...), A... args) {
        static_assert(sizeof...(P) == sizeof...(A), "argument count");
        std::tuple<P...> vals(args...);
        void *ptrs[sizeof...(P)];
        std::apply([&](auto &...v) {
            size_t i = 0;
            ((ptrs[i++] = (void *)&v), ...);
        }, vals);
        if (coop)
            CHECK(cudaLaunchCooperativeKernel((const void *)k, dim3(c.grid), dim3(c.block), ptrs, 0, stream));
        else
            CHECK(cudaLaunchKernel((const void *)k, dim3(c.grid), dim3(c.block), ptrs, 0, stream));
    }

    template <class Launch>
    void warm_up(Launch launch) {
        launch();
        barrier();
    }

    // Median of c.reps timed launches, each after reset() and a host barrier, then a last
    // barrier; in the row's unit.
    template <class Reset, class Launch>
    double median(const Case &c, Reset reset, Launch launch) {
        std::vector<float> ms(c.reps);
        for (auto &m : ms) {
            reset();
            barrier();
            CHECK(cudaEventRecord(start, stream));
            launch();
            CHECK(cudaEventRecord(stop, stream));
            CHECK(cudaEventSynchronize(stop));
            CHECK(cudaEventElapsedTime(&m, start, stop));
        }
        barrier();  // peers may still be writing into this PE: wait before anyone resets data
        std::sort(ms.begin(), ms.end());
        double secs = ms[ms.size() / 2] * 1e-3;
        if (c.family == "put_bw" || c.family == "get_bw") return (double)c.arg * c.iters / secs / 1e9;
        if (c.family == "amo_tput") return (double)c.grid * c.block * c.iters / secs / 1e6;
        return secs / c.iters * 1e6;
    }

    // Counts a failure unless `got` is `want` followed by poison only.
    template <class T>
    void expect(const std::string &what, const std::vector<T> &got, const std::vector<T> &want) {
        T poison = poison_of<T>();
        for (size_t i = 0; i < got.size(); i++) {
            bool ok = i < want.size() ? memcmp(&got[i], &want[i], sizeof(T)) == 0
                                      : memcmp(&got[i], &poison, sizeof(T)) == 0;
            if (!ok) {
                fprintf(stderr, "PE %d: %s: wrong element %zu\n", me, what.c_str(), i);
                failures++;
                return;
            }
        }
    }

    std::vector<double> bandwidth(bool get, const std::vector<Case> &cases);
    std::vector<double> p_lat_rows(const std::vector<Case> &cases);
    std::vector<double> g_lat_rows(const std::vector<Case> &cases);
    std::vector<double> amo_lat_rows(const std::vector<Case> &cases);
    std::vector<double> amo_tput_rows(const std::vector<Case> &cases);
    std::vector<double> pingpong_rows(const std::vector<Case> &cases);
    std::vector<double> barrier_rows(const std::vector<Case> &cases);
    std::vector<double> collective_rows(bool fcollect, const std::vector<Case> &cases);
};

static size_t max_arg(const std::vector<Case> &cases) {
    size_t m = 0;
    for (auto &c : cases) m = std::max<size_t>(m, c.arg);
    return m;
}

std::vector<double> Bench::bandwidth(bool get, const std::vector<Case> &cases) {
    size_t len = 0;  // every case's slots lie in the first len bytes of src and dst
    for (auto &c : cases) len = std::max<size_t>(len, stride_of(c) * c.slots);
    char *src = (char *)nvshmem_malloc(len);
    char *dst = (char *)nvshmem_malloc(len + GUARD);
    upload(src, rng(me).bytes(len));
    std::vector<char> poison(len + GUARD, (char)POISON);
    upload(dst, poison);
    int checker = get ? 0 : 1, sender = get ? 1 : 0;
    std::vector<char> sent = rng(sender).bytes(len);
    std::vector<double> values;
    for (auto &c : cases) {
        size_t size = c.arg, stride = stride_of(c);
        if (me == checker) upload(dst, poison);
        barrier();
        auto run = [&] {
            if (get) launch(c, false, get_bw, dst, src, c.arg, stride, c.slots, c.iters, 0, 1);
            else launch(c, false, put_bw, dst, src, c.arg, stride, c.slots, c.iters, 0, 1);
        };
        warm_up(run);
        if (me == checker) {
            // Written slots hold the sender's bytes at the same offsets; the rest stays poison.
            std::vector<char> want(stride * c.slots, (char)POISON);
            for (size_t slot = 0; slot < std::min(c.slots, c.iters); slot++)
                std::copy(sent.begin() + slot * stride, sent.begin() + slot * stride + size,
                          want.begin() + slot * stride);
            expect(c.row + " " + std::to_string(size) + " B", download(dst, len + GUARD), want);
        }
        values.push_back(median(c, [] {}, run));
    }
    barrier();
    nvshmem_free(dst);
    nvshmem_free(src);
    return values;
}

std::vector<double> Bench::p_lat_rows(const std::vector<Case> &cases) {
    uint64_t *dst = (uint64_t *)nvshmem_malloc(8);
    uint64_t base = rng(0).next();
    std::vector<double> values;
    for (auto &c : cases) {
        upload(dst, std::vector<uint64_t>{poison_of<uint64_t>()});
        barrier();
        auto run = [&] { launch(c, false, p_lat, dst, base, c.iters, 0, 1); };
        warm_up(run);
        if (me == 1) expect("p_lat", download(dst, 1), std::vector<uint64_t>{base + c.iters - 1});
        values.push_back(median(c, [] {}, run));
    }
    barrier();
    nvshmem_free(dst);
    return values;
}

// As in the Rust driver: chain entries 8 KiB apart (82 MB for 10 007 entries, more than the
// L2), so that no read of a launch is served from a cache.
static const size_t CHAIN_STRIDE = 2048;

static std::vector<uint32_t> spread_chain(const std::vector<uint32_t> &next) {
    std::vector<uint32_t> chain(next.size() * CHAIN_STRIDE, UINT32_MAX);
    for (size_t i = 0; i < next.size(); i++) chain[i * CHAIN_STRIDE] = next[i] * (uint32_t)CHAIN_STRIDE;
    return chain;
}

std::vector<double> Bench::g_lat_rows(const std::vector<Case> &cases) {
    std::vector<double> values;
    for (auto &c : cases) {
        size_t len = c.arg;
        uint32_t *chain = (uint32_t *)nvshmem_malloc(len * CHAIN_STRIDE * 4);
        uint32_t *out = (uint32_t *)nvshmem_malloc(4);
        upload(chain, spread_chain(rng(me).cycle(len)));
        upload(out, std::vector<uint32_t>{UINT32_MAX});
        barrier();
        auto run = [&] { launch(c, false, g_lat, chain, c.iters, 0, 1, out); };
        warm_up(run);
        if (me == 0) {
            std::vector<uint32_t> peer = spread_chain(rng(1).cycle(len));
            uint32_t at = 0;
            for (unsigned i = 0; i < c.iters; i++) at = peer[at];
            expect("g_lat", download(out, 1), std::vector<uint32_t>{at});
        }
        values.push_back(median(c, [] {}, run));
        barrier();
        nvshmem_free(out);
        nvshmem_free(chain);
    }
    return values;
}

std::vector<double> Bench::amo_lat_rows(const std::vector<Case> &cases) {
    uint64_t start_value = rng(me).next();
    uint64_t *ctr = (uint64_t *)nvshmem_malloc(8);
    uint64_t *out = (uint64_t *)nvshmem_malloc(8);
    std::vector<double> values;
    for (auto &c : cases) {
        upload(ctr, std::vector<uint64_t>{start_value});
        upload(out, std::vector<uint64_t>{poison_of<uint64_t>()});
        barrier();
        auto run = [&] { launch(c, false, amo_lat, ctr, c.iters, 0, 1, out); };
        warm_up(run);
        uint64_t value = rng(1).next(), add = 1, old = 0;
        for (unsigned i = 0; i < c.iters; i++) {
            old = value;
            value += add;
            add = (old & 1) + 1;
        }
        if (me == 0) expect("amo_lat result", download(out, 1), std::vector<uint64_t>{old});
        if (me == 1) expect("amo_lat counter", download(ctr, 1), std::vector<uint64_t>{value});
        values.push_back(median(c, [] {}, run));
    }
    barrier();
    nvshmem_free(out);
    nvshmem_free(ctr);
    return values;
}

std::vector<double> Bench::amo_tput_rows(const std::vector<Case> &cases) {
    size_t threads = 0;
    for (auto &c : cases) threads = std::max<size_t>(threads, (size_t)c.grid * c.block);
    std::vector<uint64_t> init = rng(me).u64s(threads), peer_init = rng(1).u64s(threads);
    std::vector<uint64_t> poison(threads, poison_of<uint64_t>());
    uint64_t *words = (uint64_t *)nvshmem_malloc(threads * 8);
    uint64_t *sums = (uint64_t *)nvshmem_malloc(threads * 8);
    std::vector<double> values;
    for (auto &c : cases) {
        size_t n = (size_t)c.grid * c.block;
        uint64_t iters = c.iters;
        bool same = c.arg != 0;
        upload(words, init);
        upload(sums, poison);
        barrier();
        auto run = [&] { launch(c, false, amo_tput, words, (unsigned)c.arg, c.iters, 0, 1, sums); };
        warm_up(run);
        if (me == 1) {
            std::vector<uint64_t> want = peer_init;
            if (same) want[0] += iters * n;
            else for (size_t t = 0; t < n; t++) want[t] += iters;
            expect(c.row, download(words, threads), want);
        } else if (me == 0 && !same) {
            std::vector<uint64_t> want(n);
            for (size_t t = 0; t < n; t++) want[t] = arith_sum(peer_init[t], iters);
            expect(c.row, download(sums, threads), want);
        } else if (me == 0) {
            std::vector<uint64_t> got = download(sums, threads);
            uint64_t total = 0;
            for (size_t t = 0; t < n; t++) total += got[t];
            if (total != arith_sum(peer_init[0], iters * n)) {
                fprintf(stderr, "PE 0: %s: the fetched values do not add up\n", c.row.c_str());
                failures++;
            }
        }
        values.push_back(median(c, [] {}, run));
    }
    barrier();
    nvshmem_free(sums);
    nvshmem_free(words);
    return values;
}

std::vector<double> Bench::pingpong_rows(const std::vector<Case> &cases) {
    size_t max = max_arg(cases);
    char *src = (char *)nvshmem_malloc(max);
    char *mid = (char *)nvshmem_malloc(max + GUARD);
    char *back = (char *)nvshmem_malloc(max + GUARD);
    uint64_t *sig = (uint64_t *)nvshmem_malloc(8);
    upload(src, rng(me).bytes(max));
    std::vector<char> poison(max + GUARD, (char)POISON), sent = rng(0).bytes(max);
    std::vector<double> values;
    for (auto &c : cases) {
        size_t size = c.arg;
        upload(mid, poison);
        upload(back, poison);
        upload(sig, std::vector<uint64_t>{0});
        barrier();
        auto run = [&] { launch(c, true, pingpong, src, mid, back, c.arg, sig, c.iters); };
        warm_up(run);
        std::vector<char> want(sent.begin(), sent.begin() + size);
        std::string what = "pingpong " + std::to_string(size) + " B";
        if (me == 0) expect(what, download(back, max + GUARD), want);
        if (me == 1) expect(what, download(mid, max + GUARD), want);
        values.push_back(median(c, [&] { upload(sig, std::vector<uint64_t>{0}); }, run));
    }
    barrier();
    nvshmem_free(sig);
    nvshmem_free(back);
    nvshmem_free(mid);
    nvshmem_free(src);
    return values;
}

std::vector<double> Bench::barrier_rows(const std::vector<Case> &cases) {
    std::vector<double> values;
    for (auto &c : cases) {
        auto run = [&] { launch(c, true, barrier_lat, c.iters); };
        warm_up(run);
        values.push_back(median(c, [] {}, run));
    }
    return values;
}

std::vector<double> Bench::collective_rows(bool fcollect, const std::vector<Case> &cases) {
    size_t max = max_arg(cases);
    std::vector<std::vector<int32_t>> all;
    for (int pe = 0; pe < npes; pe++) all.push_back(rng(pe).i32s(max));
    size_t dest_len = fcollect ? max * npes : max;
    int32_t *src = (int32_t *)nvshmem_malloc(max * 4);
    int32_t *dest = (int32_t *)nvshmem_malloc((dest_len + GUARD) * 4);
    upload(src, all[me]);
    std::vector<int32_t> poison(dest_len + GUARD, poison_of<int32_t>());
    std::vector<double> values;
    for (auto &c : cases) {
        size_t n = c.arg;
        upload(dest, poison);
        barrier();
        auto run = [&] {
            if (fcollect) launch(c, true, fcollect_lat, dest, src, c.arg, c.iters);
            else launch(c, true, reduce_lat, dest, src, c.arg, c.iters);
        };
        warm_up(run);
        std::vector<int32_t> want;
        if (fcollect) {
            for (auto &s : all) want.insert(want.end(), s.begin(), s.begin() + n);
        } else {
            for (size_t k = 0; k < n; k++) {
                uint32_t sum = 0;  // wrapping, as the device's int32 sum
                for (auto &s : all) sum += (uint32_t)s[k];
                want.push_back((int32_t)sum);
            }
        }
        expect(c.row + " " + std::to_string(n) + " elements", download(dest, dest_len + GUARD), want);
        values.push_back(median(c, [] {}, run));
    }
    barrier();
    nvshmem_free(dest);
    nvshmem_free(src);
    return values;
}

// v with 4 significant digits and no exponent, as sig4 in testing/device-tests/examples/perftest.rs.
static std::string sig4(double v) {
    int decimals = 3;
    if (v > 0 && std::isfinite(v)) decimals = std::min(12, std::max(0, 3 - (int)std::floor(std::log10(v))));
    char buf[64];
    snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

static const char *unit_of(const std::string &family) {
    if (family == "put_bw" || family == "get_bw") return "GB/s";
    if (family == "amo_tput") return "Mops/s";
    return "us";
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s RANK NPES UIDFILE PLANFILE\n", argv[0]);
        return 2;
    }
    int rank = atoi(argv[1]), npes = atoi(argv[2]);
    std::string uidfile = argv[3];
    std::vector<Case> cases = read_plan(argv[4]);

    CHECK(cudaSetDevice(rank));
    nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) {
        nvshmemx_get_uniqueid(&uid);
        std::string tmp = uidfile + ".tmp";
        std::ofstream(tmp, std::ios::binary).write((const char *)&uid, sizeof uid);
        std::rename(tmp.c_str(), uidfile.c_str());
    } else {
        for (;;) {
            std::ifstream in(uidfile, std::ios::binary);
            if (in && in.read((char *)&uid, sizeof uid)) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, npes, &uid, &attr);
    nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);

    Bench b;
    b.me = nvshmem_my_pe();
    b.npes = nvshmem_n_pes();
    if (b.npes < 2) {
        fprintf(stderr, "perftest needs at least 2 PEs\n");
        return 2;
    }
    if (b.me == 0)  // the header of testing/device-tests/examples/perftest.rs
        printf("perftest on %d PEs: point-to-point rows (put_bw, get_bw, p_lat, g_lat, amo_lat, "
               "amo_tput, pingpong) between PE 0 and PE 1%s; barrier_all, fcollect and reduce_sum "
               "over all %d PEs\n",
               b.npes, b.npes > 2 ? ", the others idle" : "", b.npes);
    // Fresh data: PE 0 picks a seed, every PE reads it from PE 0.
    uint64_t *seed = (uint64_t *)nvshmem_malloc(8);
    uint64_t my_seed = (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
    if (b.me == 0) CHECK(cudaMemcpy(seed, &my_seed, 8, cudaMemcpyHostToDevice));
    b.barrier();
    nvshmem_getmem(&my_seed, seed, 8, 0);  // host-side get from PE 0
    b.seed = my_seed;
    CHECK(cudaStreamCreate(&b.stream));
    CHECK(cudaEventCreate(&b.start));
    CHECK(cudaEventCreate(&b.stop));

    // Consecutive cases of one family run together, as in the Rust driver.
    for (size_t i = 0; i < cases.size();) {
        size_t j = i;
        while (j < cases.size() && cases[j].family == cases[i].family) j++;
        std::vector<Case> group(cases.begin() + i, cases.begin() + j);
        const std::string &f = group[0].family;
        std::vector<double> values;
        if (f == "put_bw" || f == "get_bw") values = b.bandwidth(f == "get_bw", group);
        else if (f == "p_lat") values = b.p_lat_rows(group);
        else if (f == "g_lat") values = b.g_lat_rows(group);
        else if (f == "amo_lat") values = b.amo_lat_rows(group);
        else if (f == "amo_tput") values = b.amo_tput_rows(group);
        else if (f == "pingpong") values = b.pingpong_rows(group);
        else if (f == "barrier") values = b.barrier_rows(group);
        else if (f == "fcollect" || f == "reduce") values = b.collective_rows(f == "fcollect", group);
        else {
            fprintf(stderr, "unknown family %s in the plan\n", f.c_str());
            return 2;
        }
        CHECK(cudaGetLastError());
        if (b.me == 0) {
            for (size_t k = 0; k < group.size(); k++)
                printf("PTC,%s,%llu,%s,%s\n", group[k].row.c_str(), group[k].param,
                       sig4(values[k]).c_str(), unit_of(f));
            fflush(stdout);
        }
        i = j;
    }
    b.barrier();
    nvshmem_free(seed);
    nvshmem_finalize();
    if (b.failures) fprintf(stderr, "PE %d: %d check(s) failed\n", b.me, b.failures);
    else printf("PE %d: all checks passed\n", b.me);
    return b.failures ? 1 : 0;
}
