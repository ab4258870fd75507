#pragma once
/// @file
/// `stoke::exact`: element-wise float arithmetic whose bits do not depend on the instruction
/// set the code is compiled for. The element-wise optimizers (`Sgd`, `Adam`) step through it,
/// so a build for SSE2, AVX2 with FMA, AVX-512 or NEON, a shard that starts anywhere, and a
/// GPU that takes the same IEEE operations in the same order (`__fmul_rn`, `__fsqrt_rn`, ...)
/// all give the same bits.
///
/// Two things make the bits differ between instruction sets, and both are ruled out here:
/// - **Approximate square roots.** Eigen's packet square root (under its default
///   `EIGEN_FAST_MATH`) is an `rsqrt` estimate and a Newton step, which rounds otherwise than
///   `std::sqrt`, and not alike in every build (the estimate differs between SSE and AVX, and
///   the Newton step fuses where FMA is enabled). `sqrt` here is the correctly rounded
///   instruction of each set (`sqrtps`, `vsqrtps`, NEON's `fsqrt`) or `std::sqrt`.
/// - **Contraction into fused multiply-adds.** GCC contracts `a * b + c` into one FMA by
///   default in C++ (`-ffp-contract=fast`), also across statements and across the vector
///   intrinsics (which it implements as plain vector arithmetic); Clang contracts within one
///   expression (`-ffp-contract=on`). Either happens only where FMA is enabled (`-mfma`,
///   `-march=haswell`, `-march=native`, aarch64 always), so the same source rounds once or
///   twice depending on the build. Pragmas cannot stop this in a header on both compilers
///   (GCC ignores `#pragma STDC FP_CONTRACT` in C++, `#pragma GCC optimize` changes the
///   inlining of everything after it, and Clang disregards `#pragma clang fp contract` under
///   `-ffp-contract=fast`). Instead every operation's result passes through `settle`, an empty
///   `asm` statement that claims to change the value in its register: the compiler cannot see
///   through it, so no product can be fused into the sum that consumes it, whatever the flags.
///   It emits no instruction.
///
/// Not covered: `-ffast-math` (which, linked into a program, also flushes denormals to zero
/// through `crtfastmath.o`), and a floating-point environment that a program changed itself
/// (rounding mode, MXCSR's FTZ/DAZ bits). x87 arithmetic (32-bit x86 without SSE2) rounds
/// through memory (`settle`'s fallback), which drops its excess precision.

#include <cmath>
#include <cstddef>

#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__) || defined(_M_X64) || \
    (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <immintrin.h>
#elif defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace stoke::exact {

/// The instruction set `Packet` uses in this build: `"avx512"`, `"avx"`, `"sse2"`, `"neon"`
/// or `"scalar"`.
#if defined(__AVX512F__)
inline constexpr const char* packet_isa = "avx512";
#elif defined(__AVX__)
inline constexpr const char* packet_isa = "avx";
#elif defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
inline constexpr const char* packet_isa = "sse2";
#elif defined(__ARM_NEON) && defined(__aarch64__)
inline constexpr const char* packet_isa = "neon";
#else
inline constexpr const char* packet_isa = "scalar";
#endif

/// The widest packet of floats this build has (one float where it has none).
struct Packet {
#if defined(__AVX512F__)
  using Native = __m512;
#elif defined(__AVX__)
  using Native = __m256;
#elif defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
  using Native = __m128;
#elif defined(__ARM_NEON) && defined(__aarch64__)
  using Native = float32x4_t;
#else
  using Native = float;
#endif
  Native value;  ///< the floats
};

/// Floats in a `Packet`.
inline constexpr std::size_t packet_floats = sizeof(Packet::Native) / sizeof(float);

/// Floats in one `F` (`float` or `Packet`).
template <class F>
inline constexpr std::size_t width = sizeof(F) / sizeof(float);

/// `value`, in a register the compiler must assume was changed: the result of an operation is
/// rounded on its own and never fused with the next one (see the file's comment). No
/// instruction is emitted.
template <class T>
inline T settle(T value) noexcept {
#if defined(__GNUC__) && defined(__SSE2__)
  asm("" : "+x"(value));  // an SSE/AVX register (also a float's)
#elif defined(__GNUC__) && defined(__aarch64__)
  asm("" : "+w"(value));  // a SIMD and floating-point register
#elif defined(__GNUC__)
  asm("" : "+m"(value));  // elsewhere through memory (also drops x87's excess precision)
#endif
  // MSVC contracts only under /fp:contract or /fp:fast, and never across intrinsics.
  return value;
}

// One float: the correctly rounded operations of the language.
/// `value` in every float of an `F`.
template <class F>
F splat(float value) noexcept;
template <>
inline float splat<float>(float value) noexcept {
  return value;
}
/// Loads one `F` from `from` (no alignment needed).
template <class F>
F load(const float* from) noexcept;
template <>
inline float load<float>(const float* from) noexcept {
  return *from;
}
/// Stores `value` at `to` (no alignment needed).
inline void store(float* to, float value) noexcept {
  *to = value;
}
/// `a + b`, rounded once.
inline float add(float a, float b) noexcept {
  return settle(a + b);
}
/// `a - b`, rounded once.
inline float sub(float a, float b) noexcept {
  return settle(a - b);
}
/// `a * b`, rounded once (never fused into a sum).
inline float mul(float a, float b) noexcept {
  return settle(a * b);
}
/// `a / b`, rounded once.
inline float div(float a, float b) noexcept {
  return settle(a / b);
}
/// The correctly rounded square root of `a`.
inline float sqrt(float a) noexcept {
  return settle(std::sqrt(a));
}

// A packet: the same operations lane by lane, by the instructions that round as IEEE 754 says
// (never the reciprocal-root estimates).
#if defined(__AVX512F__)
template <>
inline Packet splat<Packet>(float value) noexcept {
  return {_mm512_set1_ps(value)};
}
template <>
inline Packet load<Packet>(const float* from) noexcept {
  return {_mm512_loadu_ps(from)};
}
inline void store(float* to, Packet value) noexcept {
  _mm512_storeu_ps(to, value.value);
}
inline Packet add(Packet a, Packet b) noexcept {
  return {settle(_mm512_add_ps(a.value, b.value))};
}
inline Packet sub(Packet a, Packet b) noexcept {
  return {settle(_mm512_sub_ps(a.value, b.value))};
}
inline Packet mul(Packet a, Packet b) noexcept {
  return {settle(_mm512_mul_ps(a.value, b.value))};
}
inline Packet div(Packet a, Packet b) noexcept {
  return {settle(_mm512_div_ps(a.value, b.value))};
}
inline Packet sqrt(Packet a) noexcept {
  // All lanes through the zero-masking form: the same vsqrtps, without the undefined operand
  // of _mm512_sqrt_ps that GCC 12 warns about (-Wmaybe-uninitialized, GCC bug 105593).
  return {settle(_mm512_maskz_sqrt_ps(static_cast<__mmask16>(0xFFFF), a.value))};
}
#elif defined(__AVX__)
template <>
inline Packet splat<Packet>(float value) noexcept {
  return {_mm256_set1_ps(value)};
}
template <>
inline Packet load<Packet>(const float* from) noexcept {
  return {_mm256_loadu_ps(from)};
}
inline void store(float* to, Packet value) noexcept {
  _mm256_storeu_ps(to, value.value);
}
inline Packet add(Packet a, Packet b) noexcept {
  return {settle(_mm256_add_ps(a.value, b.value))};
}
inline Packet sub(Packet a, Packet b) noexcept {
  return {settle(_mm256_sub_ps(a.value, b.value))};
}
inline Packet mul(Packet a, Packet b) noexcept {
  return {settle(_mm256_mul_ps(a.value, b.value))};
}
inline Packet div(Packet a, Packet b) noexcept {
  return {settle(_mm256_div_ps(a.value, b.value))};
}
inline Packet sqrt(Packet a) noexcept {
  return {settle(_mm256_sqrt_ps(a.value))};
}
#elif defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
template <>
inline Packet splat<Packet>(float value) noexcept {
  return {_mm_set1_ps(value)};
}
template <>
inline Packet load<Packet>(const float* from) noexcept {
  return {_mm_loadu_ps(from)};
}
inline void store(float* to, Packet value) noexcept {
  _mm_storeu_ps(to, value.value);
}
inline Packet add(Packet a, Packet b) noexcept {
  return {settle(_mm_add_ps(a.value, b.value))};
}
inline Packet sub(Packet a, Packet b) noexcept {
  return {settle(_mm_sub_ps(a.value, b.value))};
}
inline Packet mul(Packet a, Packet b) noexcept {
  return {settle(_mm_mul_ps(a.value, b.value))};
}
inline Packet div(Packet a, Packet b) noexcept {
  return {settle(_mm_div_ps(a.value, b.value))};
}
inline Packet sqrt(Packet a) noexcept {
  return {settle(_mm_sqrt_ps(a.value))};
}
#elif defined(__ARM_NEON) && defined(__aarch64__)
template <>
inline Packet splat<Packet>(float value) noexcept {
  return {vdupq_n_f32(value)};
}
template <>
inline Packet load<Packet>(const float* from) noexcept {
  return {vld1q_f32(from)};
}
inline void store(float* to, Packet value) noexcept {
  vst1q_f32(to, value.value);
}
inline Packet add(Packet a, Packet b) noexcept {
  return {settle(vaddq_f32(a.value, b.value))};
}
inline Packet sub(Packet a, Packet b) noexcept {
  return {settle(vsubq_f32(a.value, b.value))};
}
inline Packet mul(Packet a, Packet b) noexcept {
  return {settle(vmulq_f32(a.value, b.value))};
}
inline Packet div(Packet a, Packet b) noexcept {
  return {settle(vdivq_f32(a.value, b.value))};
}
inline Packet sqrt(Packet a) noexcept {
  return {settle(vsqrtq_f32(a.value))};
}
#else
template <>
inline Packet splat<Packet>(float value) noexcept {
  return {value};
}
template <>
inline Packet load<Packet>(const float* from) noexcept {
  return {*from};
}
inline void store(float* to, Packet value) noexcept {
  *to = value.value;
}
inline Packet add(Packet a, Packet b) noexcept {
  return {add(a.value, b.value)};
}
inline Packet sub(Packet a, Packet b) noexcept {
  return {sub(a.value, b.value)};
}
inline Packet mul(Packet a, Packet b) noexcept {
  return {mul(a.value, b.value)};
}
inline Packet div(Packet a, Packet b) noexcept {
  return {div(a.value, b.value)};
}
inline Packet sqrt(Packet a) noexcept {
  return {sqrt(a.value)};
}
#endif

/// The first elements of `n` that fill whole packets: an element-wise loop takes those as
/// `Packet`s and the rest (fewer than `packet_floats`) as `float`s, with the same bits.
[[nodiscard]] constexpr std::size_t whole_packets(std::size_t n) noexcept {
  return n - n % packet_floats;
}

}  // namespace stoke::exact
