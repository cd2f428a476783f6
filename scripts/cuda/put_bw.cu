// CUDA C++ NVSHMEM peer of examples/put_bandwidth.rs and kernels/src/bandwidth.rs: the same
// kernel shape (block-scoped non-blocking puts of an equal contiguous share per block,
// `iters` times, then quiet), the same sizes, iterations, timing (events, median of 5) and
// check (fresh random data over a poisoned destination). Built with nvcc -rdc on the GPU
// machine by scripts/gpu-check.sh; two processes bootstrap by unique ID through a file.
//
//   put_bw RANK NPES UIDFILE CTAS[,CTAS..] THREADS SIZE[,SIZE..]
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#define CHECK(x)                                                                     \
    do {                                                                             \
        cudaError_t e = (x);                                                         \
        if (e != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

__global__ void put_bw(char *dst, const char *src, unsigned long long bytes, unsigned iters, int from, int to) {
    if (nvshmem_my_pe() != from) return;
    unsigned long long blocks = gridDim.x, b = blockIdx.x;
    // Rounded up to 16 bytes, as in the Rust kernel: NVSHMEM's block copy is vectorised only
    // for 16-byte-aligned addresses.
    unsigned long long chunk = ((bytes + blocks - 1) / blocks + 15) / 16 * 16;
    unsigned long long start = min(b * chunk, bytes);
    size_t len = min(chunk, bytes - start);
    for (unsigned i = 0; i < iters; i++) {
        if (len > 0) nvshmemx_putmem_nbi_block(dst + start, src + start, len, to);
    }
    __syncthreads();
    if (threadIdx.x == 0) nvshmem_quiet();
}

static std::vector<unsigned long long> parse_list(const char *s) {
    std::vector<unsigned long long> v;
    std::string str(s);
    size_t pos = 0;
    while (pos <= str.size()) {
        size_t comma = str.find(',', pos);
        if (comma == std::string::npos) comma = str.size();
        v.push_back(std::stoull(str.substr(pos, comma - pos)));
        pos = comma + 1;
    }
    return v;
}

static unsigned iters_for(size_t size) {
    size_t it = ((512ull << 20) + size - 1) / size;
    return (unsigned)std::min<size_t>(std::max<size_t>(it, 4), 20000);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s RANK NPES UIDFILE CTAS THREADS SIZES\n", argv[0]);
        return 2;
    }
    int rank = atoi(argv[1]), npes = atoi(argv[2]);
    std::string uidfile = argv[3];
    auto ctas = parse_list(argv[4]);
    unsigned threads = atoi(argv[5]);
    auto sizes = parse_list(argv[6]);

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
    int me = nvshmem_my_pe();

    size_t max = *std::max_element(sizes.begin(), sizes.end());
    char *src = (char *)nvshmem_malloc(max);
    char *dst = (char *)nvshmem_malloc(max + 64);
    // Fresh data: PE 0 picks a seed, every PE derives the same bytes from it.
    unsigned long long *seed = (unsigned long long *)nvshmem_malloc(8);
    unsigned long long my_seed = std::chrono::steady_clock::now().time_since_epoch().count() | 1;
    if (me == 0) CHECK(cudaMemcpy(seed, &my_seed, 8, cudaMemcpyHostToDevice));
    nvshmem_barrier_all();
    nvshmem_getmem(&my_seed, seed, 8, 0);  // host-side get from PE 0
    std::vector<char> data(max), poison(max + 64, (char)0xA5), got(max + 64);
    unsigned long long x = my_seed;
    for (size_t i = 0; i < max; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        data[i] = (char)(x >> 24);
    }
    CHECK(cudaMemcpy(src, data.data(), max, cudaMemcpyHostToDevice));

    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    int failures = 0;
    for (auto c : ctas) {
        for (auto size : sizes) {
            if (me == 1) CHECK(cudaMemcpy(dst, poison.data(), max + 64, cudaMemcpyHostToDevice));
            CHECK(cudaDeviceSynchronize());
            nvshmem_barrier_all();
            unsigned iters = iters_for(size);
            put_bw<<<c, threads, 0, stream>>>(dst, src, size, iters, 0, 1);
            CHECK(cudaStreamSynchronize(stream));
            std::vector<float> ms(5);
            for (auto &m : ms) {
                CHECK(cudaEventRecord(start, stream));
                put_bw<<<c, threads, 0, stream>>>(dst, src, size, iters, 0, 1);
                CHECK(cudaEventRecord(stop, stream));
                CHECK(cudaEventSynchronize(stop));
                CHECK(cudaEventElapsedTime(&m, start, stop));
            }
            CHECK(cudaGetLastError());
            std::sort(ms.begin(), ms.end());
            nvshmem_barrier_all();
            if (me == 1) {
                CHECK(cudaMemcpy(got.data(), dst, max + 64, cudaMemcpyDeviceToHost));
                bool ok = memcmp(got.data(), data.data(), size) == 0;
                for (size_t i = size; i < max + 64; i++) ok = ok && got[i] == (char)0xA5;
                if (!ok) {
                    fprintf(stderr, "CUDA put_bw: wrong data for ctas=%llu size=%llu\n", c, size);
                    failures++;
                }
            }
            double gbps = (double)size * iters / (ms[2] * 1e-3) / 1e9;
            if (me == 0) printf("CUBW,%llu,%llu,%.1f\n", c, size, gbps);
        }
    }
    nvshmem_barrier_all();
    nvshmem_free(seed);
    nvshmem_free(dst);
    nvshmem_free(src);
    nvshmem_finalize();
    return failures ? 1 : 0;
}
