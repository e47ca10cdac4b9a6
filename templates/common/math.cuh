// templates/common/math.cuh - sine and cosine in double, without libdevice.
//
// RoPE must produce the cpu backend's angles: cos and sin of an FP32 angle
// evaluated in double and rounded to FP32. libdevice's double sin/cos carry
// a Payne-Hanek slow path whose local array gives every kernel that calls
// them a stack frame, which voltc's resource check rejects; RoPE angles
// are below 2^20 radians (position x inverse frequency <= position), where
// a three-part Cody-Waite reduction is exact enough. The polynomials are
// the Taylor series to degree 19/20 on [-pi/4, pi/4] (truncation error
// below 2^-60). The host tests compare the results, rounded to FP32, with
// the C library's for millions of angles.
#pragma once

#include "common/volt.cuh"

namespace volt {

/// sin and cos of x for |x| < 2^20.
VOLT_HD void sinCos(double x, double &s, double &c) {
  // pi/2 as three 33-bit parts (the products k * part are exact for
  // |k| < 2^20) plus the remainder.
  const double kPio2Hi = 1.57079632673412561417e+00;
  const double kPio2Mid = 6.07710050630396597660e-11;
  const double kPio2Lo = 2.02226624871116645580e-21;
  const double kTwoOverPi = 6.36619772367581382433e-01;
  double k = x * kTwoOverPi;
  k = k >= 0 ? static_cast<double>(static_cast<long long>(k + 0.5))
             : -static_cast<double>(static_cast<long long>(-k + 0.5));
  double r = ((x - k * kPio2Hi) - k * kPio2Mid) - k * kPio2Lo;
  const double r2 = r * r;
  // Taylor series, Horner form.
  double sp = 1.0 / 121645100408832000.0;  // 1/19!
  sp = sp * -r2 + 1.0 / 355687428096000.0; // 1/17!
  sp = sp * -r2 + 1.0 / 1307674368000.0;   // 1/15!
  sp = sp * -r2 + 1.0 / 6227020800.0;      // 1/13!
  sp = sp * -r2 + 1.0 / 39916800.0;        // 1/11!
  sp = sp * -r2 + 1.0 / 362880.0;          // 1/9!
  sp = sp * -r2 + 1.0 / 5040.0;            // 1/7!
  sp = sp * -r2 + 1.0 / 120.0;             // 1/5!
  sp = sp * -r2 + 1.0 / 6.0;               // 1/3!
  const double sinR = r - r * r2 * sp;
  double cp = 1.0 / 2432902008176640000.0;  // 1/20!
  cp = cp * -r2 + 1.0 / 6402373705728000.0; // 1/18!
  cp = cp * -r2 + 1.0 / 20922789888000.0;   // 1/16!
  cp = cp * -r2 + 1.0 / 87178291200.0;      // 1/14!
  cp = cp * -r2 + 1.0 / 479001600.0;        // 1/12!
  cp = cp * -r2 + 1.0 / 3628800.0;          // 1/10!
  cp = cp * -r2 + 1.0 / 40320.0;            // 1/8!
  cp = cp * -r2 + 1.0 / 720.0;              // 1/6!
  cp = cp * -r2 + 1.0 / 24.0;               // 1/4!
  cp = cp * -r2 + 1.0 / 2.0;                // 1/2!
  const double cosR = 1.0 - r2 * cp;
  const int quadrant = static_cast<int>(static_cast<long long>(k) & 3);
  s = quadrant == 0 ? sinR : quadrant == 1 ? cosR : quadrant == 2 ? -sinR : -cosR;
  c = quadrant == 0 ? cosR : quadrant == 1 ? -sinR : quadrant == 2 ? -cosR : sinR;
}

} // namespace volt
