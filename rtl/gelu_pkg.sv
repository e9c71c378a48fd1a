// The contract's GELU (engine/numerics/functions.hpp: x Phi(x), the exact erf GELU rounded once to
// f32, nearest even) as a synthesizable function: a fixed-point evaluation of log2 Phi(x) and
// 2^L with an error far below the rounding's margin, rounded once by f32_pkg::round_f32. Its
// result equals numerics::gelu on every one of the 2^32 inputs (checked exhaustively by
// tests/rtl's gelu sweep tool; ctest runs a dense sweep and the edge values).
//
// x = (-1)^s m 2^e (m the 24-bit significand):
//   NaN -> 0x7FC00000; +inf -> +inf; -inf -> -0; +-0 -> itself; x >= 8 -> x; x <= -16 -> -0.
//   |x| < 2^-27: x/2 + 0.3989 x^2 (1 + O(x^2)) rounds as x/2 nudged by 2^-8 of its last place
//     toward +inf (the x^2 term is below a quarter place but decides the ties of subnormal x/2).
//   otherwise: k = floor((x + 16) 8), u = x - centre_k (exact, 52 fraction bits), L = log2 Phi(x)
//     by Horner over the segment's degree-10 polynomial (gelu_table.svh, interpolation error
//     2^-72) in 64 fraction bits; 2^L = 2^n 2^(j/64) 2^r, the table entry times a degree-8
//     polynomial in r < 2^-6; the product with m rounded once. Error about 2^-61 relative.
package gelu_pkg;
  import f32_pkg::*;

`include "gelu_table.svh"

  /// gelu(x) as numerics::gelu computes it (correctly rounded).
  function automatic logic [31:0] gelu_f32(input logic [31:0] x);
    logic s;
    logic [7:0] be;
    logic [23:0] m;
    int e, k, n;
    logic signed [57:0] xs;
    logic signed [49:0] u;
    logic signed [79:0] acc;
    logic signed [135:0] prod;
    logic [63:0] f, r;
    logic [65:0] p;
    logic [129:0] pr;
    logic [131:0] mm;
    logic [65:0] two_l;
    s = x[31];
    be = x[30:23];
    if (be == 8'hFF) return x[22:0] != '0 ? QNAN : (s ? 32'h8000_0000 : x);
    if (x[30:0] == '0) return x;
    m = be == 8'h00 ? {1'b0, x[22:0]} : {1'b1, x[22:0]};
    e = be == 8'h00 ? -149 : int'(be) - 150;
    if (be < 8'd100)  // |x| < 2^-27
      return round_f32(s, MAG_BITS'({m, 8'h00}) + (s ? -MAG_BITS'(1) : MAG_BITS'(1)), e - 9, 1'b0);
    // The segments cover [GELU_LOW, GELU_LOW + GELU_SEGMENTS / GELU_PER_UNIT) = [-16, 8).
    if (!s && be >= 8'd130) return x;  // x >= 8: Phi(x) within 2^-50 of 1
    if (s && be >= 8'd131) return 32'h8000_0000;  // x <= -16: |gelu| < 2^-180
    xs = 58'(m) <<< (e + 52);
    if (s) xs = -xs;
    k = int'((xs - (58'(GELU_LOW) <<< 52)) >>> (52 - $clog2(GELU_PER_UNIT)));
    u = 50'(xs - (58'(GELU_LOW) <<< 52) - (58'(2 * k + 1) <<< (51 - $clog2(GELU_PER_UNIT))));
    acc = 80'(signed'(GELU_COEF[k][GELU_DEGREE]));
    for (int j = GELU_DEGREE - 1; j >= 0; j--) begin
      prod = 136'(acc) * 136'(u);
      acc = 80'(prod >>> 52) + 80'(signed'(GELU_COEF[k][j]));
    end
    n = int'(acc >>> 64);
    f = acc[63:0];
    r = {6'b0, f[57:0]};
    p = 66'(EXP2_POLY[EXP2_DEGREE]);
    for (int i = EXP2_DEGREE - 1; i >= 0; i--) begin
      pr = 130'(p) * 130'(r);
      p = 66'(pr >> 64) + 66'(EXP2_POLY[i]);
    end
    mm = 132'(EXP2_TABLE[f[63:58]]) * 132'(p);
    two_l = 66'(mm >> 64);
    return round_f32(s, MAG_BITS'(m) * MAG_BITS'(two_l), e + n - 64, 1'b0);
  endfunction

endpackage
