/*
 * ib_kernel.h - the one prelude every pixel-math header includes. The math
 * headers compile twice: with the host C compiler (the CPU reference backend)
 * and with NVRTC (device). IB_FN marks a function usable from both.
 *
 * Rules for math headers: no libc beyond what is defined here, no globals,
 * no allocation; integer math in the exact types Pillow uses (C int is 32-bit
 * on both sides); float math in float32 in Pillow's order, compiled with
 * --fmad=false on the device so results equal the host's.
 */
#ifndef IB_KERNEL_H
#define IB_KERNEL_H

#ifdef __CUDACC_RTC__
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
#define IB_FN static __device__ __forceinline__
#else
#include <math.h>
#include <stdint.h>
#define IB_FN static inline
#endif

IB_FN uint8_t ib_clip8(int v) { return (uint8_t)(v <= 0 ? 0 : (v >= 255 ? 255 : v)); }

#endif
