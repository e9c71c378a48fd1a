// The card's f32 arithmetic as synthesizable functions: the one rounding of the numerics contract
// (engine/numerics/rounding.cpp round_to_format for binary32: nearest even, subnormals kept,
// overflow to infinity, a zero magnitude a zero of the given sign) and an IEEE f32 addition built
// on it (an exact integer sum rounded once; NaN results are the quiet NaN 0x7FC00000).
package f32_pkg;

  /// Bits of the magnitudes the rounder takes (the accumulator's and the adder's fit).
  localparam int MAG_BITS = 96;
  /// The quiet NaN every kernel of the card writes.
  localparam logic [31:0] QNAN = 32'h7FC0_0000;

  /// The number of bits of `v` (0 for 0).
  function automatic int bit_length(input logic [MAG_BITS-1:0] v);
    int n;
    n = 0;
    for (int i = 0; i < MAG_BITS; i++) if (v[i]) n = i + 1;
    return n;
  endfunction

  /// The binary32 encoding of (-1)^negative x magnitude x 2^exponent, rounded to nearest even.
  /// `truncate` (a test-only fault) drops the rounding increment.
  function automatic logic [31:0] round_f32(input logic negative, input logic [MAG_BITS-1:0] magnitude,
                                            input int exponent, input logic truncate);
    int n, top, ulp, shift, place;
    logic [MAG_BITS-1:0] q, rest, half, mask;
    logic [31:0] sign;
    sign = {negative, 31'b0};
    if (magnitude == '0) return sign;
    n = bit_length(magnitude);
    top = exponent + n - 1;
    ulp = (top < -126 ? -126 : top) - 23;
    shift = ulp - exponent;
    q = '0;
    if (shift <= 0) begin
      q = magnitude << (-shift);
    end else if (shift < n) begin
      q = magnitude >> shift;
      mask = (MAG_BITS'(1) << shift) - MAG_BITS'(1);
      rest = magnitude & mask;
      half = MAG_BITS'(1) << (shift - 1);
      if (!truncate && (rest > half || (rest == half && q[0]))) q = q + MAG_BITS'(1);
    end else if (shift == n) begin
      q = (truncate || magnitude == (MAG_BITS'(1) << (n - 1))) ? '0 : MAG_BITS'(1);
    end
    place = ulp;
    if (q[24]) begin
      q = q >> 1;
      place = place + 1;
    end
    if (q == '0) return sign;
    if (q[23] == 1'b0) return sign | {9'b0, q[22:0]};
    if (place + 23 > 127) return sign | 32'h7F80_0000;
    return sign | {1'b0, 8'(place + 23 + 127), q[22:0]};
  endfunction

  /* verilator lint_off UNUSEDSIGNAL */  // the sign bit
  /// Whether an f32 pattern is a NaN.
  function automatic logic is_nan(input logic [31:0] x);
    return x[30:23] == 8'hFF && x[22:0] != '0;
  endfunction

  /// Whether an f32 pattern is an infinity.
  function automatic logic is_inf(input logic [31:0] x);
    return x[30:23] == 8'hFF && x[22:0] == '0;
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  /// a + b, one IEEE f32 addition rounded once (nearest even); NaN results 0x7FC00000. The exact
  /// sum of the two integer significands aligned on the lower exponent is rounded; when the
  /// exponents are more than 50 places apart the smaller operand is replaced by one unit 50 places
  /// below the larger (it lies strictly inside the same rounding interval, so the result is the same).
  function automatic logic [31:0] add_f32(input logic [31:0] x, input logic [31:0] y);
    logic [31:0] a, b;
    logic [23:0] sa, sb;
    int ea, eb, d, e;
    logic signed [MAG_BITS:0] va, vb, sum;
    logic neg;
    a = x;
    b = y;
    if (is_nan(a) || is_nan(b)) return QNAN;
    if (is_inf(a) && is_inf(b)) return a[31] == b[31] ? a : QNAN;
    if (is_inf(a)) return a;
    if (is_inf(b)) return b;
    sa = a[30:23] == 8'h00 ? {1'b0, a[22:0]} : {1'b1, a[22:0]};
    sb = b[30:23] == 8'h00 ? {1'b0, b[22:0]} : {1'b1, b[22:0]};
    ea = a[30:23] == 8'h00 ? -149 : int'(a[30:23]) - 150;
    eb = b[30:23] == 8'h00 ? -149 : int'(b[30:23]) - 150;
    if (ea < eb) begin
      {sa, sb} = {sb, sa};
      {ea, eb} = {eb, ea};
      {a, b} = {b, a};
    end
    d = ea - eb;
    va = (MAG_BITS + 1)'(sa);
    vb = (MAG_BITS + 1)'(sb);
    if (d > 50) begin
      va = va << 50;
      vb = sb == '0 ? '0 : (MAG_BITS + 1)'(1);
      e = ea - 50;
    end else begin
      va = va << d;
      e = eb;
    end
    if (a[31]) va = -va;
    if (b[31]) vb = -vb;
    sum = va + vb;
    neg = sum < 0 || (sum == 0 && a[31] && b[31]);
    return round_f32(neg, MAG_BITS'(sum < 0 ? -sum : sum), e, 1'b0);
  endfunction

endpackage
