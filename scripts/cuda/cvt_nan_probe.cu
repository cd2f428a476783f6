// What the GPU's cvt instructions make of NaN inputs (the simulator copies it): prints
// input bits -> output bits for cvt.rna.tf32.f32, cvt.rn.bf16.f32, cvt.rn.f16.f32, and
// cvt.f32.f16 of f16 NaNs. Compiled and run by scripts/gpu-check.sh `probe`.
#include <cstdio>
#include <cstdint>
__global__ void probe(const uint32_t* in, uint32_t* tf, uint16_t* bf, uint16_t* hf, int n,
                      const uint16_t* hin, uint32_t* wide, int hn) {
    int i = threadIdx.x;
    if (i < n) {
        uint32_t t; uint16_t b, h; float x = __uint_as_float(in[i]);
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(t) : "f"(x));
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(x));
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
        tf[i] = t; bf[i] = b; hf[i] = h;
    }
    if (i < hn) {
        float w; asm("cvt.f32.f16 %0, %1;" : "=f"(w) : "h"(hin[i]));
        wide[i] = __float_as_uint(w);
    }
}
int main() {
    const uint32_t in[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fa00000u,
                           0x7fc01234u, 0x7fffffffu, 0xffffffffu, 0x7f801fffu, 0x7fbfe000u,
                           0x7f802000u, 0x7fc00fffu};
    const uint16_t hin[] = {0x7e00, 0xfe00, 0x7c01, 0x7d55, 0x7fff, 0xffff};
    const int n = sizeof(in) / 4, hn = sizeof(hin) / 2;
    uint32_t *din, *dtf, *dwide; uint16_t *dbf, *dhf, *dhin;
    cudaMalloc(&din, 64); cudaMalloc(&dtf, 64); cudaMalloc(&dbf, 32); cudaMalloc(&dhf, 32);
    cudaMalloc(&dhin, 32); cudaMalloc(&dwide, 64);
    cudaMemcpy(din, in, sizeof(in), cudaMemcpyHostToDevice);
    cudaMemcpy(dhin, hin, sizeof(hin), cudaMemcpyHostToDevice);
    probe<<<1, 32>>>(din, dtf, dbf, dhf, n, dhin, dwide, hn);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
    uint32_t tf[16], wide[16]; uint16_t bf[16], hf[16];
    cudaMemcpy(tf, dtf, 64, cudaMemcpyDeviceToHost); cudaMemcpy(bf, dbf, 32, cudaMemcpyDeviceToHost);
    cudaMemcpy(hf, dhf, 32, cudaMemcpyDeviceToHost); cudaMemcpy(wide, dwide, 64, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; i++)
        printf("CVT f32 %08x -> tf32 %08x bf16 %04x f16 %04x\n", in[i], tf[i], bf[i], hf[i]);
    for (int i = 0; i < hn; i++) printf("CVT f16 %04x -> f32 %08x\n", hin[i], wide[i]);
    return 0;
}
