// The contract's GELU (rtl/gelu_pkg.sv) as a combinational module: y = gelu(x), f32 patterns.
// The matvec's GELU epilogue calls the same function; tests Verilate this module to sweep it.
module gelu (
    input  logic [31:0] x,
    output logic [31:0] y
);
  assign y = gelu_pkg::gelu_f32(x);
endmodule
