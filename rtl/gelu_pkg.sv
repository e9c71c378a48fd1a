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

  /// The evaluation between pipeline registers: a result decided at the start (`done`), or the
  /// input's sign, significand and exponent with the segment, u, L (`acc`) and then 2^f's parts.
  typedef struct packed {
    logic done;
    logic [31:0] result;
    logic s;
    logic [23:0] m;
    logic signed [15:0] e;
    logic [7:0] k;
    logic signed [49:0] u;
    logic signed [79:0] acc;
    logic signed [15:0] n;
    logic [5:0] j;
    logic [63:0] r;
    logic [65:0] p;
  } gelu_t;

  /// Stages of the evaluation after the start: GELU_DEGREE Horner steps for L, then EXP2_DEGREE
  /// steps for 2^r (the first also splits L); `gelu_finish` rounds after the last.
  localparam int GELU_STAGES = GELU_DEGREE + EXP2_DEGREE;

  /// The special cases and the small-argument and range rules decided, else the segment, u and
  /// L's leading coefficient.
  function automatic gelu_t gelu_start(input logic [31:0] x);
    gelu_t st;
    logic [7:0] be;
    int e, k;
    logic signed [57:0] xs;
    st = '0;
    st.s = x[31];
    be = x[30:23];
    st.m = be == 8'h00 ? {1'b0, x[22:0]} : {1'b1, x[22:0]};
    e = be == 8'h00 ? -149 : int'(be) - 150;
    st.e = 16'(e);
    st.done = 1'b1;
    if (be == 8'hFF) st.result = x[22:0] != '0 ? QNAN : (st.s ? 32'h8000_0000 : x);
    else if (x[30:0] == '0) st.result = x;
    else if (be < 8'd100)  // |x| < 2^-27
      st.result = round_f32(st.s, MAG_BITS'({st.m, 8'h00}) + (st.s ? -MAG_BITS'(1) : MAG_BITS'(1)), e - 9, 1'b0);
    // The segments cover [GELU_LOW, GELU_LOW + GELU_SEGMENTS / GELU_PER_UNIT) = [-16, 8).
    else if (!st.s && be >= 8'd130) st.result = x;  // x >= 8: Phi(x) within 2^-50 of 1
    else if (st.s && be >= 8'd131) st.result = 32'h8000_0000;  // x <= -16: |gelu| < 2^-180
    else begin
      st.done = 1'b0;
      xs = 58'(st.m) <<< (e + 52);
      if (st.s) xs = -xs;
      k = int'((xs - (58'(GELU_LOW) <<< 52)) >>> (52 - $clog2(GELU_PER_UNIT)));
      st.k = 8'(k);
      st.u = 50'(xs - (58'(GELU_LOW) <<< 52) - (58'(2 * k + 1) <<< (51 - $clog2(GELU_PER_UNIT))));
      st.acc = 80'(signed'(GELU_COEF[k][GELU_DEGREE]));
    end
    return st;
  endfunction

  /// Stage t (1 .. GELU_STAGES) of the evaluation.
  function automatic gelu_t gelu_stage(input int t, input gelu_t in);
    gelu_t st;
    logic signed [135:0] prod;
    logic [129:0] pr;
    st = in;
    if (st.done) return st;
    if (t <= GELU_DEGREE) begin  // acc = acc u + a_(DEGREE - t), 64 fraction bits
      prod = 136'(st.acc) * 136'(st.u);
      st.acc = 80'(prod >>> 52) + 80'(signed'(GELU_COEF[st.k][GELU_DEGREE-t]));
      return st;
    end
    if (t == GELU_DEGREE + 1) begin  // L = n + j / 64 + r
      st.n = 16'(st.acc >>> 64);
      st.j = st.acc[63:58];
      st.r = {6'b0, st.acc[57:0]};
      st.p = 66'(EXP2_POLY[EXP2_DEGREE]);
    end
    pr = 130'(st.p) * 130'(st.r);
    st.p = 66'(pr >> 64) + 66'(EXP2_POLY[GELU_STAGES-t]);
    return st;
  endfunction

  /* verilator lint_off UNUSEDSIGNAL */  // the finished state's segment, u, L and r
  /// The result: the significand times 2^(j/64) 2^r, rounded once at 2^(e + n - 64).
  function automatic logic [31:0] gelu_finish(input gelu_t st);
    logic [131:0] mm;
    if (st.done) return st.result;
    mm = 132'(EXP2_TABLE[st.j]) * 132'(st.p);
    return round_f32(st.s, MAG_BITS'(st.m) * MAG_BITS'(66'(mm >> 64)), int'(st.e) + int'(st.n) - 64, 1'b0);
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  /// gelu(x) as numerics::gelu computes it (correctly rounded): the stages in one expression.
  function automatic logic [31:0] gelu_f32(input logic [31:0] x);
    gelu_t st;
    st = gelu_start(x);
    for (int t = 1; t <= GELU_STAGES; t++) st = gelu_stage(t, st);
    return gelu_finish(st);
  endfunction

endpackage
